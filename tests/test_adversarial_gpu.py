"""The adversarial suite on a real GPU: every broken member gets its failing status, the
non-deterministic one is flagged, and the correct members of the same group still pass in
the same run."""
from pathlib import Path

import pytest

from builders.base import BuildOptions
from dataset_spec.shards import read_records
from ptxds.pipeline import run_build

pytestmark = pytest.mark.gpu
MANIFEST = Path(__file__).parent / "data" / "adversarial" / "manifest.yaml"


def test_adversarial_members_are_classified(tmp_path):
    from verify import verify_dataset
    built = tmp_path / "built"
    options = BuildOptions(archs=["sm_90a"], extra={"manifest": str(MANIFEST)})
    run_build("ptx", built, options, jobs=2, progress=False)
    verify_dataset(built, tmp_path / "verified", trials=3, kernel_timeout=10.0,
                   progress=False, time_budget=0.2)
    rows = read_records(tmp_path / "verified")
    assert len(rows) == 13
    for row in rows:
        expect = row.variant["expect"]
        if expect == "passed_nondeterministic":
            assert (row.status, row.deterministic) == ("passed", False), row.name
        else:
            assert row.status == expect, f"{row.name}: {row.status} {row.status_message}"
        if row.status == "passed":
            assert row.time_us_median and row.time_samples >= 10
    assert sum(r.status == "passed" for r in rows) == 5
    # a second run over the same output resumes: nothing left to do, nothing written twice
    again = verify_dataset(built, tmp_path / "verified", progress=False)
    assert again.skipped_groups == 1 and not again.groups
    assert len(read_records(tmp_path / "verified")) == 13
    from dataset_spec.shards import read_table
    assert read_table(tmp_path / "verified", "kernels").num_rows == 13
