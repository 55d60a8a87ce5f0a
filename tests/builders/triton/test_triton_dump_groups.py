"""triton-dump groups by function (builders/triton_dump/specs.py) and speaks in the kernel's
terms (builders/triton_dump/messages.py), on a real Triton cache of two add_kernel variants
(tiles of 256 and 512) and a square_kernel: entries sharing a problem share a group, a
variant that cannot cover a problem is not_applicable with the failed condition, variants
compiled for several sizes need ``fits``, a second different problem for a group is refused
in the spec file and in the output folder, and a kernel with no entry is told its parameter
names and the entry to write."""
import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2]))
from builders.base import BuildOptions  # noqa: E402
from builders.triton_dump import TritonDumpBuilder  # noqa: E402
from dataset_spec.model import SpecError  # noqa: E402


def add_entry(n: int, **extra) -> dict:
    entry = {"kernel": "add_kernel", "signature": "*fp32,*fp32,*fp32,i32",
             "problem": {"problem_id": f"add/n{n}", "op": "vector_add", "buffers": [
                 {"name": "x", "dtype": "float32", "shape": [n]}, {"name": "y", "dtype": "float32", "shape": [n]},
                 {"name": "out", "dtype": "float32", "shape": [n], "role": "out"}]},
             "vars": {"n": n}, "args": ["x", "y", "out", "n"], "grid": [1]}
    entry.update(extra)
    return entry


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    pytest.importorskip("triton")
    from test_triton_builder import compile_into
    base = tmp_path_factory.mktemp("groups")
    with pytest.MonkeyPatch.context() as monkeypatch:
        compile_into(monkeypatch, base / "cache", base / "dump")
    return base / "cache"


def builder_for(cache: Path, specs, tmp_path) -> TritonDumpBuilder:
    path = tmp_path / "problems.json"
    path.write_text(json.dumps(specs))
    return TritonDumpBuilder(BuildOptions(extra={"from_dump": str(cache), "problem_file": str(path)}))


def rows_of(cache: Path, specs, tmp_path) -> list:
    builder = builder_for(cache, specs, tmp_path)
    return [row for item in builder.work_items() for row in builder.build(item)]


def adds(rows):
    return sorted((r for r in rows if r.name == "add_kernel"), key=lambda r: r.variant["ranges"])


def test_one_kernel_at_two_sizes_gives_a_group_per_size(cache, tmp_path):
    specs = [add_entry(512, fits=["max_range >= n"]), add_entry(256, fits="max_range >= n")]
    small, large = adds(rows_of(cache, specs, tmp_path))
    assert (small.variant["ranges"], large.variant["ranges"]) == ([256], [512])
    assert small.group_id == "triton-dump/add/n256" and small.status == "built" and small.launches
    assert large.group_id == "triton-dump/add/n512" and large.status == "built" and large.launches
    assert small.problem.problem_id == "add/n256"


def test_a_variant_that_cannot_cover_the_problem_is_not_applicable(cache, tmp_path):
    small, large = adds(rows_of(cache, [add_entry(512, fits=["max_range >= n"])], tmp_path))
    assert large.status == "built" and large.group_id == "triton-dump/add/n512"
    assert small.status == "not_applicable" and small.group_id == "triton-dump/add/n512"
    assert small.ptx and small.launches == []
    assert small.status_message == (
        f"variant {small.variant['hash']} of add_kernel (make_range sizes [256]) covers no problem of its "
        "entries: problem add/n512: max_range >= n is false (max_range = 256, n = 512)")


def test_variants_of_several_sizes_under_a_fixed_grid_need_fits(cache, tmp_path):
    rows = adds(rows_of(cache, [add_entry(512)], tmp_path))
    assert all(r.status == "no_problem" and not r.launches for r in rows)
    assert rows[0].status_message.startswith(
        "variants of add_kernel were compiled for several sizes (make_range sizes 256, 512; this one 256) and "
        "entry 1 (problem add/n512) does not say which it covers: add fits")
    # a grid that follows the tile covers any size: no fits needed
    rows = adds(rows_of(cache, [add_entry(512, grid=["cdiv(n, max_range)"])], tmp_path))
    assert [r.status for r in rows] == ["built", "built"] and [r.launches[0].grid[0] for r in rows] == [2, 1]


def test_entries_naming_one_problem_share_its_group(cache, tmp_path):
    first = add_entry(1024, grid=["cdiv(n, max_range)"], kernel=["add_kernel", "other_add_kernel"])
    second = dict(add_entry(1024, grid=["cdiv(n, max_range)"]), kernel="square_kernel", problem="add/n1024",
                  signature="*fp32,*fp32,i32", args=["x", "out", "n"])
    rows = rows_of(cache, [first, second], tmp_path)
    assert {r.group_id for r in rows} == {"triton-dump/add/n1024"} and len(rows) == 3
    assert {r.problem.digest() for r in rows} == {rows[0].problem.digest()}


def test_two_problems_under_one_id_are_refused(cache, tmp_path):
    other = add_entry(1024)
    other["problem"]["params"] = {"eps": 1}
    with pytest.raises(SpecError, match=r"entry 2 \(add_kernel\): problem_id 'add/n1024' is already a different "
                                        r"problem \(entry 1\)"):
        rows_of(cache, [add_entry(1024), other], tmp_path)
    with pytest.raises(SpecError, match="problem 'add/n9' names no problem_id of the file's entries"):
        rows_of(cache, [add_entry(1024), dict(add_entry(1024), problem="add/n9")], tmp_path)


def test_a_second_build_with_another_problem_is_refused(cache, tmp_path):
    from ptxds.pipeline import run_build
    first = builder_for(cache, [add_entry(1024, grid=["cdiv(n, max_range)"])], tmp_path)
    out = tmp_path / "out"
    run_build("triton-dump", out, first.options, jobs=1, progress=False)
    changed = add_entry(1024, grid=["cdiv(n, max_range)"])
    changed["problem"]["tolerance"] = {"atol": 0.5}
    (tmp_path / "second").mkdir()
    second = builder_for(cache, [changed], tmp_path / "second")
    with pytest.raises(SpecError, match=r"problem_id 'add/n1024' \(group triton-dump/add/n1024\) already has a "
                                        r"different problem in .*differing in tolerance"):
        run_build("triton-dump", out, second.options, jobs=1, progress=False)


def test_an_unmapped_kernel_is_told_its_parameters_and_the_entry_to_write(cache, tmp_path):
    builder = TritonDumpBuilder(BuildOptions(extra={"from_dump": str(cache)}))
    rows = [row for item in builder.work_items() for row in builder.build(item)]
    square = next(r for r in rows if r.name == "square_kernel")
    assert square.status == "no_problem"
    message = square.status_message
    assert message.startswith("kernel square_kernel has no problem: no problem spec file given; its runtime "
                              "parameters are x_ptr (*fp32), output_ptr (*fp32), n_elements (i32); tl.constexprs (not in "
                              "args): BLOCK_SIZE; add to the problem spec file")
    assert ("{kernel: square_kernel, signature: \"*fp32,*fp32,i32\", problem: {problem_id: NAME, op: OP, buffers: "
            "[{name: x_ptr, dtype: float32, shape: [SIZE], role: in|out}, {name: output_ptr, dtype: float32, "
            "shape: [SIZE], role: in|out}]}, args: [x_ptr, output_ptr, n_elements], vars: {n_elements: VALUE}, "
            "grid: [GRID], "
            "fits: [CONDITION]}") in message


def test_a_wrong_argument_count_names_the_parameters(cache, tmp_path):
    entry = add_entry(1024, grid=["cdiv(n, max_range)"], args=["x", "out"])
    rows = adds(rows_of(cache, [entry], tmp_path))
    assert rows[0].status == "no_problem"
    assert "spec gives 2 args, kernel add_kernel has 4 runtime params (*fp32,*fp32,*fp32,i32): its runtime " \
           "parameters are x_ptr (*fp32), y_ptr (*fp32), output_ptr (*fp32), n_elements (i32)" in rows[0].status_message


def test_dropped_parameters_are_named_from_the_kernel_source(tmp_path):
    from builders.triton_dump.messages import describe_params
    source = tmp_path / "k.py"
    source.write_text("import triton\n\n@triton.jit\ndef k(Y, Y_stride, X, W_stride, RSTD, n, BLOCK: tl.constexpr):\n"
                      "    pass\n")
    ttir = f'#loc = loc("{source}":3:0)\nmodule {{ tt.func public @k(%Y: !tt.ptr<bf16>) {{ }} }}\n'
    variant = {"params": [("Y", "*bf16", True), ("Y_stride", "i32", False), ("X", "*bf16", True), ("n", "i32", False)]}
    assert describe_params(variant, ttir) == (
        "its runtime parameters are Y (*bf16), Y_stride (i32), X (*bf16), n (i32); Triton compiled away "
        "W_stride, RSTD (each an int equal to 1 or None in the call that compiled it: leave them out of args); "
        "tl.constexprs (not in args): BLOCK")
    assert "unknown: the TTIR names no source file" in describe_params(variant, "module {}")
