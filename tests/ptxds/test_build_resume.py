"""A build run again where nothing is left to build returns at once: it leaves a finished
folder (its card and configs) as it is; a folder whose last build did not finish is still
published."""
from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from ptxds.cli import cli
from ptxds.pipeline import BUILDING

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"


def _build(out):
    result = CliRunner().invoke(cli, ["build", "--source", "ptx", "--manifest", str(MANIFESTS / "ok_blob.yaml"),
                                      "--jobs", "1", "--silent", "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _files(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_resume_with_nothing_to_build_leaves_the_finished_folder_as_it_is(tmp_path):
    out = tmp_path / "ds"
    _build(out)
    before = _files(out)
    assert "README.md" in before
    assert "0 rows written (3 of 3 work items already done)" in _build(out)
    assert _files(out) == before


def test_a_resume_after_an_unfinished_build_publishes_again(tmp_path):
    out = tmp_path / "ds"
    _build(out)
    card = out / "README.md"
    os.utime(card, ns=(0, 0))
    (out / BUILDING).write_text('{"command": "ptxds build"}')  # the last build stopped part-way
    assert "0 rows written" in _build(out)
    assert card.stat().st_mtime_ns > 0 and not (out / BUILDING).exists()  # the card written again
