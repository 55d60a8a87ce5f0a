"""The wheel installs one top-level package, ``ptxds``: the four inner packages are
``ptxds.builders`` ... ``ptxds.verify``, still importable by their short names after
``import ptxds``, and another distribution's ``verify`` on the path cannot shadow them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The built wheel unpacked into a site folder, and a foreign ``verify`` package."""
    base = tmp_path_factory.mktemp("install")
    wheels, site, foreign = base / "wheels", base / "site", base / "foreign" / "verify"
    leftovers = [p for p in (ROOT / "build", ROOT / "ptxds.egg-info") if not p.exists()]
    try:
        build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                                "-w", str(wheels), str(ROOT)], capture_output=True, text=True, timeout=600)
    finally:  # setuptools builds in the checkout: leave it as it was
        for path in leftovers:
            shutil.rmtree(path, ignore_errors=True)
    if build.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip().splitlines()[-1:]}")
    [wheel] = wheels.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    foreign.mkdir(parents=True)
    (foreign / "__init__.py").write_text("FOREIGN = True\n")
    return site, foreign.parent


def run(code: str, installed) -> subprocess.CompletedProcess:
    site, foreign = installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(foreign)]))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=site.parent, timeout=300)


def test_the_wheel_has_one_top_level_package(installed):
    site, _ = installed
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info")) == ["ptxds"]
    assert {p.name for p in (site / "ptxds").iterdir() if p.is_dir()} >= {"builders", "dataset_spec", "ptx_tools",
                                                                         "verify", "executors", "report"}
    assert (site / "ptxds" / "builders" / "cutlass" / "host" / "packer.h").is_file()


def test_short_names_are_ptxds_own_after_import_ptxds(installed):
    result = run("import ptxds, verify, builders, dataset_spec.model as m, ptxds.dataset_spec.model as n\n"
                 "print(verify.__name__, builders.__name__, m is n, hasattr(verify, 'FOREIGN'))\n"
                 "from ptxds.cli import cli\n"
                 "from click.testing import CliRunner\n"
                 "print(CliRunner().invoke(cli, ['build', '--source', 'nope', '--out', 'x']).output)", installed)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "ptxds.verify ptxds.builders True False"
    assert "Error: unknown source 'nope'; known sources: cutlass, cutlass-conv, handhack, inductor, mirage, ptx" in result.stdout


def test_a_foreign_verify_imported_first_is_one_clear_error(installed):
    result = run("import verify\nimport ptxds", installed)
    assert result.returncode == 1
    assert ("ImportError: ptxds imports its package 'verify' by that name, but another 'verify' "
            in result.stderr) and "import ptxds before it (its own is ptxds.verify)" in result.stderr
