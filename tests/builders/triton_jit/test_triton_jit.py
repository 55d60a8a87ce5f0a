"""The triton-jit source: @triton.jit kernels from a module, compiled ahead of time from a call
description (tests/data/triton_jit) for sm_80 and sm_90a through the build pipeline, into rows
whose launches fill their PTX entries' parameters in order, with the compiled dynamic shared
memory; a bad description is one line naming its field."""
import shutil
from pathlib import Path

import pytest

pytest.importorskip("triton")
yaml = pytest.importorskip("yaml")

from builders.base import BuildOptions  # noqa: E402
from builders.triton_jit import CallDescriptionError, TritonJitBuilder, load_description  # noqa: E402
from builders.triton_jit.builder import member_plan  # noqa: E402
from dataset_spec.store.dataset import Dataset  # noqa: E402
from ptx_tools.parse import parse_ptx  # noqa: E402
from ptxds.pipeline import run_build  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data" / "triton_jit"
ARCHS = ["sm_80", "sm_90a"]


@pytest.fixture(autouse=True)
def private_triton_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


def build(call: Path, out: Path) -> list:
    summary = run_build("triton-jit", out, BuildOptions(archs=ARCHS, extra={"call": str(call)}), jobs=1,
                        progress=False)
    assert not summary.failed_items, summary.failed_items
    return sorted(Dataset(out).records(), key=lambda r: (r.variant["config"], r.arch))


def entry_params(row):
    [entry] = [f for f in parse_ptx(row.ptx).functions if f.is_entry]
    assert entry.name == row.name == row.launches[0].entry
    return entry


def check_launch(row, kinds):
    """The launch fills the entry's params one to one, in order, and its block is the PTX's."""
    assert row.status == "built", row.status_message
    assert row.source == "triton-jit" and f".target {row.arch}" in row.ptx
    [launch] = row.launches
    entry = entry_params(row)
    assert [a.size for a in launch.args] == [p.size for p in entry.params]
    assert [a.kind if a.kind != "scalar" else a.dtype for a in launch.args] == kinds
    assert launch.block == (32 * row.variant["num_warps"], 1, 1)
    assert tuple(entry.reqntid) + (1,) * (3 - len(entry.reqntid)) == launch.block
    assert launch.dynamic_smem == row.variant["shared"]


def test_autotune_configs_become_members(tmp_path):
    rows = build(DATA / "rmsnorm.yaml", tmp_path / "out")
    # the kernel's three @triton.autotune configs x two archs, one group
    assert len(rows) == 6 and {r.arch for r in rows} == set(ARCHS)
    assert {r.group_id for r in rows} == {"triton-jit/rmsnorm/float16/M256xN1000"}
    assert [(r.variant["BLOCK_SIZE"], r.variant["num_warps"], r.variant["num_stages"]) for r in rows[::2]] == \
        [(1024, 4, 1), (1024, 8, 1), (2048, 16, 2)]
    for row in rows:
        # X_col_stride = 1, RSTD = None and RSTD_row_stride = 1 are compiled in: 7 runtime
        # params in the kernel's order, then the global and profile scratch pointers
        check_launch(row, ["buffer", "s32", "buffer", "s32", "buffer", "s32", "f32", "null", "null"])
        assert [a.buffer for a in row.launches[0].args if a.kind == "buffer"] == ["out", "x", "w"]
        assert row.launches[0].grid == (256, 1, 1)
        assert row.launches[0].dynamic_smem > 0  # the cross-warp reduction
        assert row.variant["specialization"] == {"divisibility_16": ["Y", "X", "W"],
                                                 "specialised_away": {"X_col_stride": 1, "RSTD": None,
                                                                      "RSTD_row_stride": 1}}
        assert row.provenance["configs_from"] == "autotune"
        assert row.problem.op == "rmsnorm" and row.launches[0].args[6].value == "1e-06"
    # more warps, more partial sums in shared memory
    assert rows[4].launches[0].dynamic_smem > rows[0].launches[0].dynamic_smem


def test_configs_from_the_file_and_a_file_path(tmp_path):
    rows = build(DATA / "add.yaml", tmp_path / "out")
    assert len(rows) == 4 and {r.group_id for r in rows} == {"triton-jit/vector_add/float32/n98432"}
    for row in rows:
        check_launch(row, ["buffer", "buffer", "buffer", "s32", "null", "null"])
        assert row.launches[0].grid == (-(-98432 // row.variant["BLOCK_SIZE"]), 1, 1)
        assert row.launches[0].dynamic_smem == 0 and row.variant["num_stages"] == 1
        assert row.variant["specialization"]["divisibility_16"] == ["x_ptr", "y_ptr", "out_ptr", "n_elements"]
        assert row.provenance["configs_from"] == "file"


def test_specialisation_is_the_pinned_jits():
    """Our plan equals what Triton's own binder makes of the same call (MockTensor stands for
    a 16-byte aligned tensor)."""
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import MockTensor, create_function_from_signature

    description = load_description(DATA / "rmsnorm.yaml")
    plan = member_plan(description, 0)
    fn = description.kernel.fn
    binder = create_function_from_signature(fn.signature, fn.params, make_backend(GPUTarget("cuda", 90, 32)))
    tensor = MockTensor(torch.float16)
    _, theirs, _ = binder(tensor, 1000, tensor, 1000, 1, tensor, None, 1, 1000, 1e-6, BLOCK_SIZE=1024)
    ours = [(p["type"], "D" if p["divisible"] else None) for p in plan["plans"]]
    assert ours == [(kind, "D" if attr == "D" else None) for kind, attr in theirs]


def test_cluster_configs_skip_sm80_and_unknown_archs_are_refused(tmp_path):
    call = tmp_path / "add.yaml"
    data = yaml.safe_load((DATA / "add.yaml").read_text())
    data["kernel"] = str(DATA / "kernels.py") + ":add_kernel"
    data["configs"] = [{"BLOCK_SIZE": 1024, "num_ctas": 2}]
    call.write_text(yaml.safe_dump(data))
    items = TritonJitBuilder(BuildOptions(archs=ARCHS, extra={"call": str(call)})).work_items()
    assert [i.payload["arch"] for i in items] == ["sm_90a"]
    with pytest.raises(CallDescriptionError, match="--arch sm_75"):
        TritonJitBuilder(BuildOptions(archs=["sm_75"], extra={"call": str(call)})).work_items()


BAD = [
    (lambda d: d.update(gird=[1]), "gird: unknown field"),
    (lambda d: d.pop("grid"), "grid: is required"),
    (lambda d: d["args"].update(n_elem=3), "args.n_elem: add_kernel has no parameter 'n_elem'"),
    (lambda d: d["args"].pop("n_elements"), "args: no value for n_elements"),
    (lambda d: d["args"].update(BLOCK_SIZE=4), "args.BLOCK_SIZE: is a tl.constexpr parameter"),
    (lambda d: d["args"].update(n_elements="m"), "args.n_elements: expression 'm': unknown name 'm'"),
    (lambda d: d.update(grid=["cdiv(n, BLOCK)"]), "grid[0]: expression 'cdiv(n, BLOCK)': unknown name 'BLOCK'"),
    (lambda d: d.update(grid=["__import__('os')"]), "grid[0]: expression"),
    (lambda d: d["configs"][1].update(BLOCKSIZE=8), "configs[1].BLOCKSIZE: is neither a tl.constexpr parameter"),
    (lambda d: d["configs"][0].pop("BLOCK_SIZE"), "constexprs.BLOCK_SIZE: no value in configs[0]"),
    (lambda d: d["configs"][0].update(num_warps=0), "configs[0].num_warps: must be a positive integer"),
    (lambda d: d["problem"].update(op="vector_addd"), "problem.op:"),
    (lambda d: d["problem"]["buffers"][0].update(dtype="float17"), "problem.buffers[0]"),
    (lambda d: d.update(kernel="kernels.py:nope"), "kernel: 'kernels.py' has no 'nope'"),
    (lambda d: d.update(kernel="no_such_module:add_kernel"), "kernel: module 'no_such_module' is neither"),
    (lambda d: d.update(kernel="add_kernel"), "kernel: write it as module:function"),
]


@pytest.mark.parametrize("mutate, field", BAD, ids=[field.split(":")[0] for _, field in BAD])
def test_a_bad_description_is_one_line_naming_the_field(tmp_path, mutate, field):
    shutil.copy(DATA / "kernels.py", tmp_path / "kernels.py")
    data = yaml.safe_load((DATA / "add.yaml").read_text())
    mutate(data)
    call = tmp_path / "bad.yaml"
    call.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(CallDescriptionError) as caught:
        run_build("triton-jit", tmp_path / "out", BuildOptions(archs=ARCHS, extra={"call": str(call)}),
                  jobs=1, progress=False)
    message = caught.value.one_line()
    assert message == str(caught.value) and "\n" not in message
    assert message.startswith(f"{call}: {field}"), message
    assert not (tmp_path / "out").exists()


def test_the_cli_reports_a_bad_description_in_one_line(tmp_path):
    from click.testing import CliRunner
    from ptxds.cli import cli
    shutil.copy(DATA / "kernels.py", tmp_path / "kernels.py")
    data = yaml.safe_load((DATA / "add.yaml").read_text())
    data["args"]["n_elem"] = 3
    call = tmp_path / "bad.yaml"
    call.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(cli, ["build", "--source", "triton-jit", "--call", str(call),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code != 0
    assert result.output.strip().splitlines()[-1].startswith(f"Error: {call}: args.n_elem: add_kernel has no parameter")


def test_a_second_problem_for_the_group_is_refused(tmp_path):
    build(DATA / "add.yaml", tmp_path / "out")
    data = yaml.safe_load((DATA / "add.yaml").read_text())
    data["kernel"] = str(DATA / "kernels.py") + ":add_kernel"
    data["problem"]["tolerance"] = {"atol": 0.5}
    call = tmp_path / "other.yaml"
    call.write_text(yaml.safe_dump(data))
    with pytest.raises(CallDescriptionError, match="already has a different problem"):
        run_build("triton-jit", tmp_path / "out", BuildOptions(archs=ARCHS, extra={"call": str(call)}),
                  jobs=1, progress=False)
