"""Tests for builders.triton: the built-in suite compiles on CPU for sm_80 and sm_90a into
rows whose launches match their PTX entries, and Triton cache/dump dirs are ingested."""
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("triton")

from builders.base import BuildOptions, WorkItem  # noqa: E402
from builders.triton import TritonBuilder, compile_kernel, specialize  # noqa: E402
from builders.triton.compile import triton_version  # noqa: E402
from builders.triton_dump import TritonDumpBuilder  # noqa: E402
from dataset_spec.model import KernelRecord  # noqa: E402

ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)([^{]*)\{", re.S)
PARAM = re.compile(r"\.param\s+\.(\w+)(?:\s+\.ptr)?(?:\s+\.\w+)*(?:\s+\.align\s+\d+)?\s+([\w$]+)(?:\[(\d+)\])?")
TYPE_SIZES = {"u8": 1, "s8": 1, "b8": 1, "u16": 2, "s16": 2, "b16": 2, "f16": 2, "u32": 4, "s32": 4,
              "b32": 4, "f32": 4, "u64": 8, "s64": 8, "b64": 8, "f64": 8}


@pytest.fixture(autouse=True)
def private_triton_cache(tmp_path, monkeypatch):
    """Every test compiles into its own cache dir (cold, and leaves no state behind)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


def param_sizes_from_parser(ptx: str, entry: str):
    """Param sizes from ptx_tools' parser when it is available, else None."""
    try:
        from ptx_tools.parse import parse_ptx
    except ImportError:
        return None
    [function] = [f for f in parse_ptx(ptx).functions if f.name == entry]
    return [p.size for p in function.params]


def entry_of(ptx: str):
    """(entry name, list of param byte sizes, reqntid or None) of the PTX's one .entry."""
    match = ENTRY.search(ptx)
    assert match, "no .entry in PTX"
    sizes = []
    for param in PARAM.finditer(match.group(2)):
        ptype, _, count = param.groups()
        sizes.append(TYPE_SIZES[ptype] * int(count or 1))
    parsed = param_sizes_from_parser(ptx, match.group(1))
    assert parsed is None or parsed == sizes
    reqntid = re.search(r"\.reqntid\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", match.group(3))
    dims = tuple(int(d or 1) for d in reqntid.groups()) if reqntid else None
    return match.group(1), sizes, dims


def check_row(record: KernelRecord, arch: str):
    assert record.status == "built", record.status_message
    assert record.arch == arch and f".target {arch}" in record.ptx
    assert ".version 8.7" in record.ptx
    name, sizes, reqntid = entry_of(record.ptx)
    [launch] = record.launches
    assert launch.entry == name == record.name
    assert [a.size for a in launch.args] == sizes
    assert reqntid == launch.block == (32 * record.variant["num_warps"], 1, 1)
    assert launch.dynamic_smem <= 163 * 1024
    names = {b.name for b in record.buffers()}
    assert all(a.buffer in names for a in launch.args if a.kind == "buffer")
    assert record.toolchain["ptx_isa"] == "8.7"
    KernelRecord.from_json(record.to_json())


def test_suite_size_and_order():
    items = TritonBuilder(BuildOptions()).work_items()
    for arch in ("sm_80", "sm_90a"):
        mine = [i for i in items if i.payload["arch"] == arch]
        assert len(mine) >= 40
        assert len({i.group_id for i in mine}) >= 6
    assert [i.key for i in items] == [i.key for i in TritonBuilder(BuildOptions()).work_items()]
    assert len({i.key for i in items}) == len(items)
    ops = {i.payload["problem"]["op"] for i in items}
    assert ops == {"vector_add", "square", "softmax", "gemm", "rmsnorm", "layernorm"}
    groups = {}
    for item in items:
        groups.setdefault((item.group_id, item.payload["arch"]), []).append(item)
    assert all(len(members) >= 4 for members in groups.values())


def test_hints_hold_for_problem_sizes():
    for item in TritonBuilder(BuildOptions(archs=["sm_80"])).work_items():
        for p in item.payload["params"]:
            if p.get("divisible") and p["kind"] == "scalar":
                assert int(p["value"]) % 16 == 0, (item.key, p)
            if p["kind"] == "scalar" and p["dtype"].startswith("i") and not p["constexpr"]:
                assert int(p["value"]) != 1


def test_awkward_group_is_not_hinted():
    items = TritonBuilder(BuildOptions(archs=["sm_80"])).work_items()
    odd = [i for i in items if i.group_id == "triton/vector_add/float32/n1000003"]
    assert odd and all(i.payload["specialization"]["divisibility_16"] == [] for i in odd)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_every_config_builds_and_matches_ptx_entry(arch):
    builder = TritonBuilder(BuildOptions(archs=[arch]))
    for item in builder.work_items():
        [record] = builder.build(item)
        check_row(record, arch)
        assert record.problem.op == item.payload["problem"]["op"]
        assert record.variant["specialization"] == item.payload["specialization"]
        assert record.launches[0].args[-2:][0].kind == "null"  # no global scratch in this suite


def test_gemm_on_sm90a_uses_wgmma():
    builder = TritonBuilder(BuildOptions(archs=["sm_90a"]))
    item = next(i for i in builder.work_items() if i.group_id.startswith("triton/gemm/float16"))
    [record] = builder.build(item)
    check_row(record, "sm_90a")
    assert "wgmma" in record.ptx
    assert record.problem.params["layout_a"] == "row"


def test_compile_failure_is_a_row():
    builder = TritonBuilder(BuildOptions(archs=["sm_80"]))
    item = next(i for i in builder.work_items() if i.group_id.startswith("triton/gemm/float16"))
    broken = dict(item.payload, config=dict(item.payload["config"], num_warps=3))
    [record] = builder.build(WorkItem(item.key, item.group_id, item.label, broken))
    assert record.status == "build_failed" and record.ptx == "" and record.launches == []
    assert record.status_message and "\n" not in record.status_message
    assert record.problem.op == "gemm"


def test_integer_one_becomes_constexpr():
    params, spec = specialize([{"name": "s", "kind": "scalar", "dtype": "i32", "value": 1},
                               {"name": "n", "kind": "scalar", "dtype": "i32", "value": 32}], hint=True)
    assert spec == {"divisibility_16": ["n"], "equal_to_1": ["s"]}


# --------------------------------------------------------------------------- dump ingestion

def compile_into(monkeypatch, cache_dir: Path, dump_dir: Path):
    """Compile two add_kernel configs and one square_kernel into a fresh cache + dump dir."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("TRITON_KERNEL_DUMP", "1")
    monkeypatch.setenv("TRITON_DUMP_DIR", str(dump_dir))
    builder = TritonBuilder(BuildOptions(archs=["sm_80"]))
    items = builder.work_items()
    wanted = [i for i in items if i.group_id == "triton/vector_add/float32/n1048576"][:2]
    wanted += [i for i in items if i.group_id == "triton/square/float32/n1048576"][:1]
    for item in wanted:
        p = item.payload
        compile_kernel(p["kernel"], p["params"], p["config"], p["arch"])
    monkeypatch.delenv("TRITON_KERNEL_DUMP")


ADD_SPEC = [{
    "kernel": "add_kernel",
    "signature": "*fp32,*fp32,*fp32,i32",
    "problem": {"problem_id": "dump/add/n1048576", "op": "vector_add", "buffers": [
        {"name": "x", "dtype": "float32", "shape": [1048576], "role": "in"},
        {"name": "y", "dtype": "float32", "shape": [1048576], "role": "in"},
        {"name": "out", "dtype": "float32", "shape": [1048576], "role": "out"}]},
    "vars": {"n": 1048576},
    "args": ["x", "y", "out", "n"],
    "grid": ["cdiv(n, max_range)"],
}]


@pytest.fixture
def dump_dirs(tmp_path, monkeypatch):
    cache, dump = tmp_path / "cache", tmp_path / "dump"
    compile_into(monkeypatch, cache, dump)
    spec = tmp_path / "problems.json"
    spec.write_text(json.dumps(ADD_SPEC))
    return cache, dump, spec


def ingest(folder: Path, problem_file=None) -> list:
    extra = {"from_dump": str(folder)}
    if problem_file:
        extra["problem_file"] = str(problem_file)
    builder = TritonDumpBuilder(BuildOptions(extra=extra))
    return [row for item in builder.work_items() for row in builder.build(item)]


def test_cache_dir_groups_and_maps(dump_dirs):
    cache, _, spec = dump_dirs
    rows = ingest(cache, spec)
    assert len(rows) == 3 and {r.source for r in rows} == {"triton-dump"}
    adds = [r for r in rows if r.name == "add_kernel"]
    assert len(adds) == 2 and len({r.group_id for r in adds}) == 1
    for row in adds:
        check_row(row, "sm_80")
        block = row.variant["ranges"][-1]
        assert row.launches[0].grid == (1048576 // block, 1, 1)
    [square] = [r for r in rows if r.name == "square_kernel"]
    assert square.group_id != adds[0].group_id
    assert square.status == "no_problem" and "--problem" in square.status_message
    assert square.ptx and square.launches == [] and square.problem.op == "unknown"


def test_cache_dir_without_spec_keeps_every_kernel(dump_dirs):
    cache, _, _ = dump_dirs
    rows = ingest(cache)
    assert len(rows) == 3 and all(r.status == "no_problem" and r.ptx for r in rows)


def test_kernel_dump_dir_is_ingested(dump_dirs):
    _, dump, spec = dump_dirs
    rows = ingest(dump, spec)
    assert {r.name for r in rows} == {"add_kernel", "square_kernel"}
    for row in rows:
        if row.name == "add_kernel":
            check_row(row, "sm_80")
        else:
            assert row.status == "no_problem"


def test_spec_with_wrong_args_is_no_problem(dump_dirs, tmp_path):
    cache, _, _ = dump_dirs
    bad = tmp_path / "bad.yaml"
    bad.write_text("- kernel: add_kernel\n  problem: {problem_id: p, op: vector_add, buffers: "
                   "[{name: out, dtype: float32, shape: [4], role: out}]}\n  args: [out]\n  grid: [1]\n")
    rows = ingest(cache, bad)
    adds = [r for r in rows if r.name == "add_kernel"]
    assert adds and all(r.status == "no_problem" and "4 runtime params" in r.status_message for r in adds)


# --------------------------------------------------------------------------- dump recovery

@pytest.fixture(scope="module")
def example_dump(tmp_path_factory):
    """builders.triton_dump.example run as its own process with TRITON_KERNEL_DUMP: a dump
    tree, the cache tree of the same compiles, and the problem spec for them."""
    import os
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("triton-example")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[3])
    done = subprocess.run([sys.executable, "-m", "builders.triton_dump.example", str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def cache_metadata_by_ptx(cache: Path) -> dict:
    """ptx_hash of each cached kernel's PTX -> its metadata json."""
    from ptx_tools.normalize import ptx_hash
    found = {}
    for meta_path in cache.rglob("*.json"):
        ptx_path = meta_path.with_suffix(".ptx")
        if not meta_path.name.startswith("__grp__") and ptx_path.exists():
            found[ptx_hash(ptx_path.read_text())] = json.loads(meta_path.read_text())
    return found


def test_dump_rows_recover_launch_facts(example_dump):
    from ptx_tools.normalize import ptx_hash
    picks = json.loads((example_dump / "picks.json").read_text())
    rows = ingest(example_dump / "dump", example_dump / "problems.json")
    assert len(rows) == len(picks) == 6
    cached = cache_metadata_by_ptx(example_dump / "cache")
    for row in rows:
        assert not any(example_dump.joinpath("dump").glob("*.json"))
        assert row.status == "built", row.status_message
        pick = picks[row.variant["hash"]]
        assert row.arch == pick["arch"] and row.name == pick["kernel"]
        [launch] = row.launches
        assert launch.entry == row.name and launch.block == (32 * pick["config"]["num_warps"], 1, 1)
        assert launch.grid[0] % launch.cluster[0] == 0
        name, sizes, _ = entry_of(row.ptx)
        assert [a.size for a in launch.args] == sizes
        meta = cached[ptx_hash(row.ptx)]  # the cache tree's json for this very kernel
        assert launch.dynamic_smem == row.variant["shared"] == meta["shared"]
        assert launch.cluster == (meta["num_ctas"], 1, 1) == (pick["config"].get("num_ctas", 1), 1, 1)
        scratch = {b.name: b for b in row.scratch}
        assert ("global_scratch" in scratch) == (meta["global_scratch_size"] > 0)
        facts = row.provenance["launch_facts"]
        assert facts["recovered"] is True and facts["stage"] in ("ttir", "ttgir")
        assert facts["triton_version"] == meta["triton_version"] == row.toolchain["triton"]
        assert facts["target"] == f"cuda:{meta['target']['arch']}"
        if facts["stage"] == "ttir":
            assert facts["tried"][-1].endswith("PTX identical")
        KernelRecord.from_json(row.to_json())
    by_kind = {(r.name, r.arch, r.variant["shared"] > 0) for r in rows}
    assert ("softmax_kernel", "sm_80", True) in by_kind  # a reduction through shared memory
    gemm = [r for r in rows if r.name == "matmul_kernel" and r.arch == "sm_80"]
    assert gemm and gemm[0].variant["num_stages"] == 3 and gemm[0].provenance["launch_facts"]["stage"] == "ttir"
    assert any(r.launches[0].cluster == (2, 1, 1) for r in rows)
    assert any(s.name == "global_scratch" for r in rows for s in r.scratch)


def test_dump_with_other_ptx_stays_no_problem(example_dump, tmp_path):
    import shutil
    dump = tmp_path / "dump"
    shutil.copytree(example_dump / "dump", dump)
    picks = json.loads((example_dump / "picks.json").read_text())
    folder = next(f for f, p in picks.items() if p["kernel"] == "softmax_kernel" and p["arch"] == "sm_80")
    for other in dump.iterdir():
        if other.name != folder:
            shutil.rmtree(other)
    ptx_path = dump / folder / "softmax_kernel.ptx"
    # a PTX the installed Triton did not write: one instruction changed, as another version might
    edited = re.sub(r"max\.f32", "min.f32", ptx_path.read_text(), count=1)
    assert edited != ptx_path.read_text()
    ptx_path.write_text(edited)
    [row] = ingest(dump, example_dump / "problems.json")
    assert row.status == "no_problem" and row.launches == []
    message = row.status_message
    assert message.startswith("launch facts not recovered") and f"Triton {triton_version()}" in message
    assert "--problem" not in message
    assert "does not record its Triton version" in message and "differs from the dumped PTX" in message
    assert "\n" not in message and row.ptx == edited
    facts = row.provenance["launch_facts"]
    assert facts["recovered"] is False and any("ttgir: PTX differs" in t for t in facts["tried"])
    assert "shared" not in row.variant


def test_dump_without_ir_stays_no_problem(example_dump, tmp_path):
    import shutil
    picks = json.loads((example_dump / "picks.json").read_text())
    folder = next(f for f, p in picks.items() if p["kernel"] == "matmul_kernel" and p["arch"] == "sm_80")
    dump = tmp_path / "dump"
    shutil.copytree(example_dump / "dump" / folder, dump / folder)
    for ir in ("ttir", "ttgir"):
        (dump / folder / f"matmul_kernel.{ir}").unlink()
    [row] = ingest(dump, example_dump / "problems.json")
    assert row.status == "no_problem" and "neither matmul_kernel.ttir" in row.status_message
