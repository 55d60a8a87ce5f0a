"""Canonical problems and cross-source merges (CPU).

The sources' own problems (Triton's, CUTLASS's and TVM's GEMM, Triton's and TVM's softmax)
map onto one canonical problem exactly when they compute one function; a transposed
problem maps onto the same arrays; rows moved onto it run their launches against its
buffer names. The built tests compile real Triton, CUTLASS and TVM GEMMs at one size and
merge them into one group.
"""
from __future__ import annotations


import numpy as np
import pytest

from dataset_spec.canonical import canonical_problem, canonical_record, canonicalize, source_problem
from dataset_spec.model import Arg, Buffer, Distribution, KernelRecord, Launch, Patch, Problem, make_kernel_id
from dataset_spec.problems import get_op

GEMM_256 = "function/gemm/float16_float16_float32_float16/rrr/a1b0/M256xN256xK256"


def triton_problem(op="gemm", dtype="float16", size=(256, 256, 256), record_shape=True) -> Problem:
    from builders.triton.builder import gemm_group, norm_group, softmax_group, suite_payload
    if op == "gemm":
        group = gemm_group(dtype, *size, record_shape=record_shape)
    elif op == "softmax":
        group = softmax_group(*size, record_shape=record_shape)
    else:
        group = norm_group(op, dtype, *size, hint=True, record_shape=record_shape)
    return Problem(**suite_payload(group, group["configs"][0], "sm_80")["problem"])


def tvm_problem(name: str, size: str = "small") -> Problem:
    from builders.tvm.workloads import WORKLOADS, problem
    return problem(next(w for w in WORKLOADS if (w.name, w.size) == (name, size)))


def cutlass_problem(layouts: str, family="cutlass_tensorop_f16_s16816gemm_f16_[0-9]*", m=256, n=256, k=256,
                    alpha=1.0, beta=0.0) -> Problem:
    pytest.importorskip("cutlass_library")
    from builders.cutlass import catalog
    from builders.cutlass.problem import make_problem
    specs = catalog.enumerate_kernels((family,), ("sm_80",))
    spec = next(s for s in specs if s.knobs["library_layouts"] == layouts)
    return make_problem(spec, m, n, k, alpha, beta)


def test_gemm_of_three_sources_is_one_canonical_problem():
    triton = canonicalize(triton_problem())
    cutlass = canonicalize(cutlass_problem("nn"))  # library nn = row-major A, B, D in kernel terms
    tvm = canonicalize(tvm_problem("matmul_fp16"))
    assert triton.problem.problem_id == cutlass.problem.problem_id == tvm.problem.problem_id == GEMM_256
    assert triton.problem.digest() == cutlass.problem.digest() == tvm.problem.digest()
    assert triton.renames == {"A": "A", "B": "B", "C": "D"}   # Triton's output C is the canonical D
    assert cutlass.renames == tvm.renames == {"A": "A", "B": "B", "D": "D"}
    assert [b.name for b in triton.problem.buffers] == ["A", "B", "D"]
    assert triton.problem.params == {"M": 256, "N": 256, "K": 256, "layout_a": "row", "layout_b": "row",
                                     "layout_c": "row", "alpha": 1.0, "beta": 0.0, "accumulator": "float32"}
    # the default suite (no shape param) states the same function at its own size
    default = canonical_problem(triton_problem(size=(512, 512, 512), record_shape=False))
    assert default.problem_id.endswith("/M512xN512xK512") and "shape" not in default.params


def test_gemm_functions_that_differ_stay_apart():
    nn = canonical_problem(cutlass_problem("nn"))
    assert canonical_problem(cutlass_problem("tn")).digest() != nn.digest()       # a transposed operand
    assert canonical_problem(cutlass_problem("nn", m=512)).digest() != nn.digest()  # a size
    assert canonical_problem(triton_problem(dtype="bfloat16")).digest() != nn.digest()  # a dtype
    assert canonical_problem(cutlass_problem("nn", alpha=2.0)).problem_id.endswith("/a2b0/M256xN256xK256")
    with_c = canonical_problem(cutlass_problem("nn", beta=0.5))
    assert [b.name for b in with_c.buffers] == ["A", "B", "C", "D"] and "_cfloat16_" in with_c.problem_id


def test_column_major_output_is_the_transposed_problem():
    """D (col) = A @ B stores D^T = B^T @ A^T: canonical swaps A and B, M and N, flips the
    layouts; the float64 reference over the same arrays is the same array."""
    m, n, k = 3, 5, 4
    source = Problem("x/gemm", "gemm", [Buffer("A", "float32", (m, k)), Buffer("B", "float32", (n, k)),
                                         Buffer("D", "float32", (n, m), "out")],
                     {"M": m, "N": n, "K": k, "layout_a": "row", "layout_b": "col", "layout_c": "col"})
    found = canonicalize(source)
    p = found.problem
    assert found.renames == {"A": "B", "B": "A", "D": "D"}
    assert (p.params["M"], p.params["N"], p.params["K"]) == (n, m, k)
    assert (p.params["layout_a"], p.params["layout_b"], p.params["layout_c"]) == ("row", "col", "row")
    rng = np.random.default_rng(0)
    arrays = {"A": rng.standard_normal((m, k)), "B": rng.standard_normal((n, k))}
    ref = get_op("gemm").reference
    want = ref(arrays, source)["D"]
    got = ref({found.renames[name]: a for name, a in arrays.items()}, p)["D"]
    np.testing.assert_allclose(np.asarray(got).reshape(-1), np.asarray(want).reshape(-1), rtol=1e-12)
    assert canonical_problem(p).digest() == p.digest()  # canonical is a fixed point


def test_softmax_and_rmsnorm_canonical_forms():
    triton = canonicalize(triton_problem("softmax", size=(64, 1000)))
    tvm = canonicalize(tvm_problem("softmax"))
    assert tvm.renames == {"x": "x", "T_softmax_norm": "out"}
    assert tvm.problem.digest() == triton.problem.digest()
    assert tvm.problem.problem_id == "function/softmax/float32/M64xN1000"
    norm = canonical_problem(triton_problem("rmsnorm", size=(16, 4096)))
    assert norm.problem_id == "function/rmsnorm/float16/eps1e-06/M16xN4096"
    assert [b.name for b in norm.buffers] == ["x", "w", "out"] and norm.params["eps"] == 1e-6
    layernorm = canonicalize(triton_problem("layernorm", "float32", size=(16, 4096)))
    assert [b.name for b in layernorm.problem.buffers] == ["x", "w", "b", "out"]
    assert layernorm.renames == {"x": "x", "w": "w", "b": "b", "out": "out"}
    assert layernorm.problem.problem_id == "function/layernorm/float32/eps1e-05/M16xN4096"


def test_no_canonical_form_for_other_ops_or_unknown_params():
    assert canonical_problem(tvm_problem("row_sum")) is None
    odd = Problem("x", "gemm", [Buffer("A", "float32", (4, 4)), Buffer("B", "float32", (4, 4)),
                                Buffer("D", "float32", (4, 4), "out")], {"split_k_mode": "serial"})
    assert canonical_problem(odd) is None   # a parameter the rules do not know


def test_a_problem_with_its_own_inputs_gets_its_digest_in_the_id():
    source = Problem("x", "gemm", [Buffer("A", "float16", (8, 8), init=Distribution("uniform", {"low": 0, "high": 1})),
                                   Buffer("B", "float16", (8, 8)), Buffer("D", "float16", (8, 8), "out")])
    p = canonical_problem(source)
    assert p.problem_id.startswith("function/gemm/float16_float16_float32_float16/rrr/a1b0/M8xN8xK8/p")


def _triton_like_row() -> KernelRecord:
    problem = triton_problem()
    blob = Arg("blob", blob=bytes(16), patches=[Patch(0, "C"), Patch(8, "A")])
    launch = Launch("k", (4,), (128,), [Arg.buf("A"), Arg.buf("B"), Arg.buf("C"), Arg.scalar("s32", 256), blob,
                                        Arg.buf("global_scratch")])
    row = KernelRecord(group_id=problem.problem_id, source="triton", variant={"cfg": 1}, name="k", arch="sm_80",
                       ptx="", launches=[launch], problem=problem, ptx_hash="abc",
                       scratch=[Buffer("global_scratch", "uint8", (64,), "scratch")], status="passed",
                       max_abs_err=0.5, time_us_median=3.0)
    row.kernel_id = make_kernel_id(row.ptx_hash, row.launches, row.problem, row.arch)
    return row


def test_canonical_record_renames_launches_and_keeps_the_source_problem():
    row = _triton_like_row()
    moved = canonical_record(row)
    assert moved.group_id == GEMM_256 and moved.problem.problem_id == GEMM_256
    (launch,) = moved.launches
    assert [a.buffer for a in launch.args if a.kind == "buffer"] == ["A", "B", "D", "global_scratch"]
    assert [p.buffer for p in launch.args[4].patches] == ["D", "A"]
    assert moved.build_key == row.build_key and moved.kernel_id != row.kernel_id
    assert moved.kernel_id == make_kernel_id("abc", moved.launches, moved.problem, "sm_80")
    assert moved.status == "built" and moved.max_abs_err is None and moved.time_us_median is None
    assert source_problem(moved).digest() == row.problem.digest()
    assert moved.provenance["source_group_id"] == "triton/gemm/float16/M256xN256xK256"
    assert [a.buffer for a in row.launches[0].args if a.kind == "buffer"][2] == "C"   # the input row is untouched
    assert canonical_record(moved) is moved   # already canonical
    # stored and read back through the schema, the source problem survives
    from dataset_spec.schema import record_to_row, row_to_record
    again = row_to_record(record_to_row(moved))
    assert source_problem(again).digest() == row.problem.digest()


def test_scratch_named_like_a_canonical_buffer_is_refused():
    row = _triton_like_row()
    row.scratch = [Buffer("D", "uint8", (64,), "scratch")]
    with pytest.raises(ValueError, match="scratch buffer 'D'"):
        canonical_record(row)


def test_crossource_set_gives_gemm_groups_of_three_sources():
    """Which sources state each crossource function, by canonical group (no compile): fp16
    and bf16 GEMM from Triton, CUTLASS and TVM at every llm size; softmax and RMSNorm from two."""
    pytest.importorskip("cutlass_library")
    from builders.base import BuildOptions
    from builders.cutlass import catalog
    from builders.cutlass.problem import make_problem
    from builders.shapes import CROSSOURCE, LLM, load_shape_set
    from builders.triton.builder import suite_groups, suite_payload
    from builders.tvm.builder import selected_workloads
    from builders.tvm.workloads import problem
    assert load_shape_set("crossource") is CROSSOURCE
    sources = {}
    for group in suite_groups(CROSSOURCE):
        pid = canonical_problem(Problem(**suite_payload(group, group["configs"][0], "sm_80")["problem"])).problem_id
        sources.setdefault(pid, set()).add("triton")
    for w in selected_workloads(None, "crossource"):
        sources.setdefault(canonical_problem(problem(w)).problem_id, set()).add("tvm")
    specs = catalog.enumerate_kernels(catalog.DEFAULT_FAMILIES, ("sm_80", "sm_90a"))
    for spec in specs:
        for m, n, k in CROSSOURCE.gemm:
            sources.setdefault(canonical_problem(make_problem(spec, m, n, k)).problem_id, set()).add("cutlass")
    fp16 = {f"function/gemm/float16_float16_float32_float16/rrr/a1b0/M{m}xN{n}xK{k}" for m, n, k in LLM.gemm}
    bf16 = {f"function/gemm/bfloat16_bfloat16_float32_bfloat16/rrr/a1b0/M{m}xN{n}xK{k}" for m, n, k in LLM.gemm}
    assert {pid for pid, s in sources.items() if len(s) >= 3} == fp16 | bf16
    for pid in fp16 | bf16:
        assert sources[pid] == {"triton", "cutlass", "tvm"}
    for op in ("softmax", "rmsnorm"):
        rows = {pid for pid in sources if pid.startswith(f"function/{op}/")}
        assert len(rows) == len(LLM.rows) and all(sources[pid] == {"triton", "tvm"} for pid in rows), op
    # TVM's default build keeps its own two sizes: fourteen original workloads, the two fp16
    # batch_matmul ones that bring tensor-core members, bf16 matmul, rmsnorm and the NHWC fp16 conv
    assert len(selected_workloads(None)) == 22 and {w.size for w in selected_workloads(None)} == {"small", "large"}
    assert [w.group_id for w in selected_workloads(["matmul_fp16"], "crossource")][:1] == [
        "tvm/matmul_fp16/M4096xN4096xK4096"]
    tvm_items = __import__("builders.tvm", fromlist=["TvmBuilder"]).TvmBuilder(
        BuildOptions(archs=["sm_80"], extra={"shapes": "crossource", "schedules": 1})).work_items()
    sampled = [i for i in tvm_items if not i.payload.get("tensor_core")]
    assert len(sampled) == 3 * len(LLM.gemm) + 2 * len(LLM.rows)
    # the fp16 matmul at every llm size also gets its tensor-core (WMMA) members, and the fp16
    # and bf16 matmuls their mma.sync members where a tile divides the size
    tensor_core = [i for i in tvm_items if i.payload.get("tensor_core") and not i.payload.get("mma")]
    assert sorted(i.group_id for i in tensor_core) == sorted(
        f"tvm/matmul_fp16/M{m}xN{n}xK{k}" for m, n, k in LLM.gemm)
    from builders.tvm.mma import MMA_CONFIGS
    mma = [i for i in tvm_items if i.payload.get("mma")]
    assert sorted(i.group_id for i in mma) == sorted(
        f"tvm/matmul_{t}/M{m}xN{n}xK{k}" for t in ("fp16", "bf16") for m, n, k in LLM.gemm
        if any(not c.unfit(m, n, k) for c in MMA_CONFIGS))


def test_tilelang_states_every_crossource_function_as_triton_and_tvm_do():
    """TileLang's crossource workloads (no compile, no tilelang needed: the problems are
    plain data) are Triton's and TVM's canonical problems at every size, so each crossource
    group gets a third source: GEMM fp16/bf16 (with CUTLASS a fourth), softmax, RMSNorm, and
    attention with Triton (Mirage's muGraphs join at their own sizes)."""
    from builders.shapes import CROSSOURCE, LLM, shape_label
    from builders.tilelang.builder import selected_workloads as tilelang_workloads
    from builders.tilelang.kernels import problem as tilelang_problem
    from builders.triton.builder import suite_groups, suite_payload
    from builders.tvm.builder import selected_workloads as tvm_workloads
    from builders.tvm.workloads import problem as tvm_problem
    by_source = {"triton": {}, "tvm": {}, "tilelang": {}}
    for group in suite_groups(CROSSOURCE):
        c = canonical_problem(Problem(**suite_payload(group, group["configs"][0], "sm_80")["problem"]))
        by_source["triton"][c.problem_id] = c
    for w in tvm_workloads(None, "crossource"):
        c = canonical_problem(tvm_problem(w))
        by_source["tvm"][c.problem_id] = c
    tilelang = tilelang_workloads(None, "crossource")
    assert len(tilelang) == 2 * len(LLM.gemm) + len(LLM.attention) + 2 * len(LLM.rows)
    assert "tilelang/attention_fp16/B32xSq16xSkv4096xD64" in {w.group_id for w in tilelang}
    assert "tilelang/softmax_fp32/M32768xN128" in {w.group_id for w in tilelang}
    for w in tilelang:
        c = canonical_problem(tilelang_problem(w))
        assert c is not None, w.group_id
        by_source["tilelang"][c.problem_id] = c
    expected = {"triton": set(), "tvm": set()}
    for m, n, k in LLM.gemm:
        for dtype in ("float16", "bfloat16"):
            pid = f"function/gemm/{dtype}_{dtype}_float32_{dtype}/rrr/a1b0/M{m}xN{n}xK{k}"
            expected["triton"].add(pid)
            expected["tvm"].add(pid)
    for m, n in LLM.rows:
        for op, dtypes in (("softmax", "float32"), ("rmsnorm", "float16/eps1e-06")):
            pid = f"function/{op}/{dtypes}/M{m}xN{n}"
            expected["triton"].add(pid)
            expected["tvm"].add(pid)
    for size in LLM.attention:
        expected["triton"].add(f"function/attention/float16/{shape_label('attention', size)}")
    assert set(by_source["tilelang"]) == expected["triton"]
    for other in ("triton", "tvm"):
        for pid in expected[other]:
            # equal problems, not just equal ids: buffers, domains, params and trials alike
            assert by_source["tilelang"][pid] == by_source[other][pid], (other, pid)
    # the default build keeps its groups: five programs at two sizes, no softmax
    assert {w.group_id for w in tilelang_workloads(None)} == {w.group_id for w in tilelang_workloads(None, "default")}
    assert len(tilelang_workloads(None)) == 10 and not any(w.kind == "softmax" for w in tilelang_workloads(None))


def test_card_names_the_fastest_source_of_each_cross_source_group():
    from dataset_spec.store.card import _cross_source_table
    def row(group, source, name, status="passed", t=None):
        return {"group_id": group, "source": source, "name": name, "status": status, "time_us_median": t}
    rows = [row(GEMM_256, "triton", "t1", t=9.0), row(GEMM_256, "triton", "t2", t=7.5),
            row(GEMM_256, "cutlass", "c1", t=6.25), row(GEMM_256, "cutlass", "c2", "wrong_result", t=1.0),
            row(GEMM_256, "tvm", "v1", "disagrees", t=2.0), row("triton/x", "triton", "only", t=1.0)]
    table = _cross_source_table(rows)
    assert f"| {GEMM_256} | 5 | cutlass | cutlass 6.25 us, triton 7.50 us, tvm - |" in table
    assert "triton/x" not in table   # one source: not a cross-source group
    assert _cross_source_table(rows[-1:]) == ""


def test_merge_rows_writes_one_kernel_once_and_mutants_follow_their_base():
    import copy
    from ptxds.merge import merge_rows
    shaped = _triton_like_row()
    default = copy.deepcopy(shaped)   # the same kernel from a default-set build: no shape param
    default.problem = triton_problem(record_shape=False)
    default.variant, default.build_key = {"cfg": 1, "set": "default"}, ""
    default.__post_init__()
    assert default.build_key != shaped.build_key and default.problem.digest() != shaped.problem.digest()
    mutant = copy.deepcopy(shaped)
    mutant.ptx_hash, mutant.build_key = "def", ""
    mutant.variant = {"base": shaped.kernel_id, "mutation": "flip_sign"}
    mutant.provenance = {"base_kernel_id": shaped.kernel_id}
    mutant.__post_init__()
    rows, summary = merge_rows([[shaped, mutant], [default]])
    assert summary.duplicates == 1 and summary.rows == 2 and summary.moved == 2
    base, moved_mutant = rows
    assert base.group_id == moved_mutant.group_id == GEMM_256
    assert moved_mutant.variant["base"] == base.kernel_id != shaped.kernel_id
    assert moved_mutant.provenance["base_kernel_id"] == base.kernel_id
    again, summary = merge_rows([[shaped, default, mutant]], present=rows)
    assert again == [] and summary.duplicates == 3
