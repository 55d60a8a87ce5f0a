"""Typed source options and the one-folder-plus-one-line source: a toy source in a
temporary package builds through the CLI (its PTX assembled by the pinned ptxas), its
option arrives typed, and options a source does not take are errors naming the ones that do."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import BUILDERS, load_builder, resolve_source_options, source_classes
from builders.base import BuildOptions, Builder
from builders.options import OptionError, given_values, typed_options
from dataset_spec.store.shards import read_records
from ptxds.cli import cli

ROOT = Path(__file__).resolve().parents[3]

TOY_PACKAGE = '''
"""A toy source: out = x + y in float32, one hand-written kernel, ``n`` elements."""
from dataclasses import dataclass, field

from builders.base import Builder, WorkItem
from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem, make_build_key

PTX = """
.version 8.0
.target {arch}
.address_size 64
.visible .entry toy_add(.param .u64 x, .param .u64 y, .param .u64 out, .param .u32 n)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<11>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    ld.param.u64 %rd3, [out];
    ld.param.u32 %r2, [n];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.s32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r1, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd9];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
DONE:
    ret;
}}
"""


@dataclass(frozen=True)
class ToyOptions:
    n: int = field(default=1024, metadata={"min": 1, "help": "elements"})


class ToyBuilder(Builder):
    name = "toy"
    Options = ToyOptions
    credit = "Rows of source `toy` come from a test."

    def work_items(self):
        group = f"toy/vector_add/float32/n{self.settings.n}"
        return [WorkItem(key=f"{group}/{arch}", group_id=group, label=group, payload={"arch": arch})
                for arch in self.options.archs]

    def build(self, item):
        n, arch = self.settings.n, item.payload["arch"]
        problem = Problem(f"vector_add_n{n}", "vector_add", [
            Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,)), Buffer("out", "float32", (n,), "out")])
        launch = Launch("toy_add", ((n + 255) // 256,), (256,), [
            Arg("buffer", "x"), Arg("buffer", "y"), Arg("buffer", "out"), Arg("scalar", dtype="u32", value=str(n))])
        variant = {"member": "toy_add"}
        return [KernelRecord(group_id=item.group_id, source=self.name, variant=variant, name="toy_add", arch=arch,
                             ptx=PTX.format(arch=arch), launches=[launch], problem=problem,
                             provenance={"licence": "Apache-2.0"},
                             build_key=make_build_key(self.name, item.group_id, variant, arch, "toy_add"))]
'''


@pytest.fixture
def toy_package(tmp_path):
    """One folder (a package) holding the toy source; the registry line is the caller's."""
    package = tmp_path / "pkgs" / "toy_source"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(TOY_PACKAGE)
    return package.parent


def test_a_new_source_is_one_folder_plus_one_registry_line(toy_package, tmp_path):
    out = tmp_path / "toy-data"
    code = ("import builders; builders.BUILDERS['toy'] = 'toy_source:ToyBuilder'\n"  # the one registry line
            "from ptxds.cli import main; main()")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(toy_package), str(ROOT)]))
    result = subprocess.run([sys.executable, "-c", code, "build", "--source", "toy", "--out", str(out),
                             "--arch", "sm_80", "--option", "n=2048", "--silent", "--jobs", "1"],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    [row] = read_records(out)
    assert (row.source, row.status, row.group_id) == ("toy", "built", "toy/vector_add/float32/n2048")
    assert row.launches[0].args[3].value == "2048" and row.resources and row.kernel_id
    assert "Rows of source `toy` come from a test." in (out / "README.md").read_text()

    wrong = subprocess.run([sys.executable, "-c", code, "build", "--source", "triton", "--out", str(tmp_path / "w"),
                            "--option", "n=5"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert wrong.returncode == 2
    assert "Error: option n applies to --source toy, not triton" in wrong.stderr


def run_cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_a_flag_of_another_source_names_the_sources_that_take_it(tmp_path):
    result = run_cli("build", "--source", "triton", "--family", "cutlass_*", "--out", tmp_path / "d")
    assert result.exit_code == 2
    assert "Error: --family applies to --source cutlass and cutlass-conv, not triton" in result.output
    assert not (tmp_path / "d").exists()


def test_option_values_are_typed_and_checked(tmp_path):
    source, settings = resolve_source_options("cutlass", {"batch_size": "4", "per_family": "2"})
    assert (source, settings.batch_size, settings.per_family, settings.sm_count) == ("cutlass", 4, 2, 132)
    with pytest.raises(OptionError, match="--per-family: 'many' is not a int"):
        resolve_source_options("cutlass", {"per_family": "many"})
    with pytest.raises(OptionError, match="no source takes option 'colour'"):
        resolve_source_options("tvm", {"colour": "red"})
    with pytest.raises(OptionError, match=r"--source ptx needs --manifest FILE \(see docs/manifest.md\)"):
        resolve_source_options("ptx", {})


def test_options_file_and_from_dump_select_the_dump_source(tmp_path):
    options = tmp_path / "options.yaml"
    options.write_text(f"from_dump: {tmp_path}\n")
    source, settings = resolve_source_options("triton", {"from_dump": str(tmp_path)})
    assert source == "triton-dump" and settings.from_dump == str(tmp_path)
    result = run_cli("build", "--source", "triton", "--options", options, "--out", tmp_path / "d", "--dry-run")
    assert result.exit_code == 1
    assert result.output == ("Error: --source triton-dump selects no work item with these options "
                             "(archs sm_80, sm_90a); nothing was written\n")


def test_every_source_declares_frozen_options_and_its_attributes():
    for name, cls in source_classes().items():
        assert issubclass(cls, Builder) and cls.Options.__dataclass_params__.frozen, name
        assert isinstance(cls.takes_shapes, bool) and isinstance(cls.credit, str), name
        settings = cls(BuildOptions()).settings
        assert isinstance(settings, cls.Options)
        assert typed_options(cls.Options, given_values(settings), name) == settings
    assert {n for n, c in source_classes().items() if c.takes_shapes} == {"triton", "cutlass", "cutlass-conv", "tvm", "tilelang"}
    assert load_builder("mirage").credit.startswith("Rows of source `mirage`") and set(BUILDERS) >= {"mirage"}
