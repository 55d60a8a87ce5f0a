"""Mirage lowering: the for-loop's tile loads are cp.async multi-stage pipelined where the
tiles and the shared-memory budget allow, tile products run on mma.sync where the shapes
allow, and the members that cannot use either fall back (and still compile)."""
from __future__ import annotations

import functools
import re

import pytest

from builders.mirage.builder import analyse_file, default_dir, plan_of
from builders.mirage.cuda import kernel_sources, module_source
from builders.mirage.plan import MAX_STAGES, SMEM_LIMITS
from helpers import needs_nvcc

MUGRAPH_DIR = default_dir()
needs_files = pytest.mark.skipif(not (MUGRAPH_DIR / "gqa_bs1.json").is_file(),
                                 reason=f"no shared muGraphs at {MUGRAPH_DIR}")


@functools.lru_cache(maxsize=None)
def _info(stem):
    return analyse_file(MUGRAPH_DIR / f"{stem}.json")


def _plan(stem, index, arch):
    info = _info(stem)
    return plan_of(info, info.graphs[index], arch)


def _loop_kernel(plan):
    return next(k for k in plan.kernels if k.kind == "customized" and k.forloop_range > 1)


def _loop_text(source):
    """The text of the first for-loop over muGraph iterations."""
    start = source.index("for (int it = 0;")
    return source[start:source.index("\n  }\n", start)]


@needs_files
def test_attention_loop_loads_are_pipelined_three_deep():
    plan = _plan("gqa_bs1", 0, "sm_80")
    kernel = _loop_kernel(plan)
    assert kernel.stages == MAX_STAGES == 3
    staged = [kernel.smem[s.outputs[0]] for s in kernel.pipelined_loads]
    assert len(staged) == 2 and all(b.stages == 3 for b in staged)
    source, _ = module_source(plan)
    loop = _loop_text(source)
    # loads for it + 2 are requested before iteration it computes; one group per iteration
    assert "const int ahead = it + 2;" in loop and "if (ahead < 4)" in loop
    assert loop.count("mrt::cp_async_commit();") == 1 and "mrt::cp_async_wait<2>();" in loop
    assert "cp_async_wait_all" not in loop
    assert "mrt::matmul_tc<" in loop
    # the prologue fills stages 0 and 1 before the loop
    before = source[:source.index("for (int it = 0;")]
    assert before.count("mrt::cp_async_commit();") == 2


@needs_files
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_stages_fit_the_arch_shared_memory_and_never_overlap(arch):
    for path in sorted(MUGRAPH_DIR.glob("*.json")):
        info = _info(path.stem)
        for graph in info.graphs:
            for kernel in plan_of(info, graph, arch).kernels:
                if kernel.kind != "customized":
                    continue
                assert kernel.smem_bytes <= SMEM_LIMITS[arch]
                assert 1 <= kernel.stages <= min(MAX_STAGES, max(kernel.forloop_range, 1))
                spans = sorted((b.offset, b.offset + b.footprint) for b in kernel.smem.values())
                if sum(b.footprint for b in kernel.smem.values()) == kernel.smem_bytes:  # sequential layout
                    assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:]))
                staged = {s.outputs[0] for s in kernel.pipelined_loads}
                assert all((b.stages > 1) == (b.name in staged) for b in kernel.smem.values())


@needs_files
def test_depth_drops_when_the_stages_do_not_fit():
    # mha_bs1 muGraph 14: a 64 KiB V tile and a 16 KiB score tile per iteration, 110 KiB
    # unstaged: a second stage fits sm_90a's 227 KiB, not sm_80's 163 KiB
    sm80, sm90 = _loop_kernel(_plan("mha_bs1", 14, "sm_80")), _loop_kernel(_plan("mha_bs1", 14, "sm_90a"))
    assert sm80.stages == 1 and sm80.smem_bytes == 112640 and not sm80.pipelined_loads
    assert sm90.stages == 2 and sm90.smem_bytes == 112640 + 81920 <= SMEM_LIMITS["sm_90a"]
    loop = _loop_text(module_source(_plan("mha_bs1", 14, "sm_80"))[0])
    assert "mrt::cp_async_wait_all();" in loop and "cp_async_wait<" not in loop


@needs_files
def test_unaligned_loop_tiles_fall_back_to_plain_loads_inside_the_pipeline():
    # gqa_bs1 muGraph 9 walks a [1, 4, 2] tile (4-byte rows): no 16-byte copies
    plan = _plan("gqa_bs1", 9, "sm_80")
    index, kernel = next((i, k) for i, k in enumerate(plan.kernels) if k.kind == "customized"
                         and any(s.op == "load" and s.phase == "loop" and not s.tile.cp_async_ok for s in k.steps))
    plain = [s for s in kernel.steps if s.op == "load" and s.phase == "loop" and not s.tile.cp_async_ok]
    assert [s.tile.tile_shape for s in plain] == [(1, 4, 2)]
    assert kernel.stages > 1 and kernel.pipelined_loads and plain[0] not in kernel.pipelined_loads
    loop = _loop_text(kernel_sources(plan)[index][1])
    name = plain[0].outputs[0]
    assert re.search(rf"\b{name}\[i\] = g\d+\[g\];", loop)          # element-wise copy
    assert "cp_async_wait_all" not in loop                        # which must not drain the pipeline


@needs_files
def test_tiles_that_do_not_fit_mma_use_scalar_products():
    # rmsnorm_bs1 muGraph 9: a 12-column weight tile (N % 8 != 0)
    source, _ = module_source(_plan("rmsnorm_bs1", 9, "sm_80"))
    assert "mrt::matmul_simt<" in source and "mrt::matmul_tc<" not in source.split("}  // namespace mrt")[1]


@needs_files
@needs_nvcc
@pytest.mark.parametrize("stem,index", [("gqa_bs1", 0), ("mha_bs1", 14), ("gqa_bs1", 9), ("rmsnorm_bs1", 9)])
def test_pipelined_and_fallback_kernels_compile_for_both_archs(stem, index):
    from ptx_tools.ptx_cache import cached_ptx
    for arch in ("sm_80", "sm_90a"):
        plan = _plan(stem, index, arch)
        ptx = cached_ptx(module_source(plan)[0], arch, "mirage")
        depth = _loop_kernel(plan).stages
        assert f".target {arch}" in ptx
        assert "cp.async.cg.shared.global" in ptx
        if depth > 1:
            assert "cp.async.commit_group" in ptx and f"cp.async.wait_group {depth - 1}" in ptx
        else:
            assert not re.search(r"cp\.async\.wait_group [1-9]", ptx)
        if (stem, index) != ("rmsnorm_bs1", 9):
            assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx


@needs_files
@pytest.mark.parametrize("stem", ["gqa_bs1", "mha_bs1", "mqa_bs1", "gated_mlp", "rmsnorm_bs1"])
def test_swizzled_tiles_are_written_and_read_with_the_same_layout(stem):
    """A tile copied with XOR-swizzled chunks must be read swizzled by every matmul that
    takes it, and a row-major one row-major: the flags in the text must agree per buffer."""
    info = _info(stem)
    copy = re.compile(r"mrt::cp_async16\((s\d+)(?:_next)? \+ mrt::chunk_offset<\d+, (true|false)>")
    call = re.compile(r"mrt::matmul_tc<\d+, \d+, \d+, (true|false), (true|false), [124]>\((s\d+)[^,]*, (s\d+)")
    swizzled_somewhere = False
    for graph in info.graphs[:6]:
        for arch in ("sm_80", "sm_90a"):
            for _, text in kernel_sources(plan_of(info, graph, arch)):
                written = {}
                for name, flag in copy.findall(text):
                    assert written.setdefault(name, flag) == flag
                for flag_a, flag_b, a, b in call.findall(text):
                    for name, flag in ((a, flag_a), (b, flag_b)):
                        assert written.get(name, "false") == flag, (stem, graph.index, name)
                        swizzled_somewhere |= flag == "true"
    # rmsnorm_bs1: the X tile also feeds the rms accumulator, the W tiles are 12 to 24 columns
    assert swizzled_somewhere == (stem != "rmsnorm_bs1")


def test_mma_tiles_per_warp_step_keep_every_warp_busy():
    from builders.mirage.cuda import n_group
    assert n_group(64, 128, 4) == 4      # 4 x 16 tiles: 16 steps of 4 for 4 warps
    assert n_group(16, 64, 4) == 2       # 8 tiles: 4 steps of 2, one per warp
    assert n_group(16, 32, 4) == 1       # 4 tiles: grouping would idle warps
    assert n_group(64, 24, 4) == 1       # 3 column tiles: 4 and 2 do not divide
