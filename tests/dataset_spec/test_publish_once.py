"""Publishing once per command (dataset_spec/store/publish.py), on a real Triton build: a publish
reads each part file of the rows once; ``ptxds add`` of one PTX leaves every file it did
not change as it was (bytes and mtime) and gives the rows a whole publish gives; a build's
splits, fixed when its rows were written, are the ones ``ptxds resplit`` would give."""
from __future__ import annotations

import dataclasses
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_spec.store import shards
from dataset_spec.store.dataset import Dataset
from dataset_spec.schema import SCHEMAS
from dataset_spec.store.shards import part_files, read_records, read_split_table
from ptxds.cli import cli


def run_cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("triton")
    out = tmp_path_factory.mktemp("triton") / "built"
    result = run_cli("build", "--source", "triton", "--limit", 24, "--arch", "sm_80,sm_90a", "--jobs", 1, "--silent",
                     "--out", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def verified(built, tmp_path_factory):
    """The build's rows as a verify would leave them, written a group at a time (a part file
    each): every member passed but one wrong member per group, so the folder has pairs of
    both kinds."""
    out = tmp_path_factory.mktemp("verified") / "verified"
    rows, wrong = [], set()
    for record in read_records(built):
        status = "passed"
        if record.group_id not in wrong:
            wrong.add(record.group_id)
            status = "wrong_result"
        rows.append(dataclasses.replace(record, status=status, trials=5, gpu_name="stand-in"))
    for group in sorted({r.group_id for r in rows}):
        Dataset(out).write([r for r in rows if r.group_id == group])
    Dataset(out).publish()
    return out


def every_row(root) -> dict:
    """config -> Counter of its physical rows (with their split) as text."""
    return {config: Counter(json.dumps(row, sort_keys=True, default=repr)
                            for row in read_split_table(root, config).to_pylist()) for config in SCHEMAS}


def files(root) -> dict:
    return {p.relative_to(root): (p.read_bytes(), p.stat().st_mtime_ns) for p in Path(root).rglob("*.parquet")}


def test_a_publish_reads_each_part_file_of_the_rows_once(verified, monkeypatch):
    reads = Counter()
    real = shards._read_part

    def counting(path, *args, **kwargs):
        reads[Path(path)] += 1
        return real(path, *args, **kwargs)
    monkeypatch.setattr(shards, "_read_part", counting)
    kernels = part_files(verified, "kernels")
    assert len(kernels) >= 2 and part_files(verified, "pairs")
    summary = Dataset(verified).publish()
    assert summary.pairs and not summary.moved
    assert dict(reads) == {path: 1 for path in kernels}  # no other config read, no part twice


def test_add_of_one_ptx_changes_only_its_own_files_and_the_card(verified, tmp_path):
    folder = tmp_path / "added"
    shutil.copytree(verified, folder)
    before, rows_before = files(folder), len(read_split_table(folder, "kernels", columns=["build_key"]))
    member = next(r for r in read_records(folder) if r.arch == "sm_80")
    entry = member.ptx.index(".entry")
    ptx = tmp_path / "mine.ptx"
    ptx.write_text(member.ptx[:entry] + member.ptx[entry:].replace("\n{", "\n.maxnreg 128\n{", 1))
    result = run_cli("add", folder, "--group", member.group_id, "--ptx", ptx, "--silent")
    assert result.exit_code == 0, result.output
    after = files(folder)
    assert {path: after[path] for path in before} == before  # every part file as it was
    new = sorted(str(path.parts[0]) for path in set(after) - set(before))
    assert new == ["kernels", "kernels_by_shape"]
    assert f"{rows_before + 1} kernel rows in" in (folder / "README.md").read_text()
    whole = tmp_path / "whole"
    shutil.copytree(folder, whole)
    Dataset(whole).publish()
    assert every_row(folder) == every_row(whole)
    def card_body(root):  # past the YAML header, whose byte sizes follow the part files
        return (root / "README.md").read_text().split("\n---\n", 1)[1].replace(str(root), "DIR")
    assert card_body(folder) == card_body(whole)


def test_a_builds_splits_are_the_ones_resplit_gives(built, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    result = run_cli("resplit", copy, "--silent")
    assert result.exit_code == 0 and f"{copy}: 24 rows, 0 moved" in result.output, result.output
    assert every_row(copy) == every_row(built)
