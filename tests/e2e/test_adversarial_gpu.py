"""The adversarial suite on a real GPU: both groups (fp32 vector add, fp16 GEMM) verified in
one run, where every broken member gets its failing status (the one whose low bit follows
the clock is a race: no floating-point atomics excuse runs that differ), and the correct members of the same groups still pass beside them."""
import re
from pathlib import Path

import pytest

from builders.base import BuildOptions
from dataset_spec.store.shards import read_records, read_table
from ptxds.pipeline import run_build

pytestmark = pytest.mark.gpu
SUITE = Path(__file__).parents[1] / "data" / "adversarial"
MANIFESTS = [SUITE / "manifest.yaml", SUITE / "gemm_f16.yaml"]
ROWS = 18 + 4  # members of the two manifests, one arch
PASSING = 4 + 2  # correct vector adds, correct GEMMs


def names_buffer(message: str, buffer: str) -> bool:
    """Whether ``message`` names ``buffer`` as a word; "out of bounds" and its spellings do
    not count as naming a buffer called out."""
    message = re.sub(r"out[ _-]of[ _-]bounds", "", message, flags=re.I)
    return re.search(rf"\b{re.escape(buffer)}\b", message) is not None


def test_adversarial_members_are_classified(tmp_path):
    from verify import verify_dataset
    built = tmp_path / "built"
    # One manifest per build; both land in the same dataset folder as two groups.
    for manifest in MANIFESTS:
        options = BuildOptions(archs=["sm_90a"], extra={"manifest": str(manifest)})
        run_build("ptx", built, options, jobs=2, progress=False)
    assert len(read_records(built)) == ROWS
    # Four trials: one of each input kind (normal, uniform, wide, edge).
    verify_dataset(built, tmp_path / "verified", trials=4, kernel_timeout=10.0,
                   progress=False, time_budget=0.2)
    rows = read_records(tmp_path / "verified")
    assert len(rows) == ROWS
    by_name = {row.name: row for row in rows}
    for row in rows:
        expect = row.variant.get("expect")
        assert expect is not None, f"{row.name} has no expected status"
        if expect == "passed_nondeterministic":
            assert (row.status, row.deterministic) == ("passed", False), row.name
        else:
            assert row.status == expect, f"{row.name}: {row.status} {row.status_message}"
        if row.status == "passed":
            assert row.time_us_median and row.time_samples >= 10
    assert sum(r.status == "passed" for r in rows if "expect" in r.variant) == PASSING
    past_end = by_name["writes_past_end"]
    assert names_buffer(past_end.status_message, "out"), past_end.status_message
    # The race check: wrong in many elements, and which ones changes between runs, so its
    # row may also say deterministic=false; it must never pass.
    assert by_name["racy"].status != "passed"
    timer = by_name["timer_noise"]
    assert timer.status == "race_detected" and "no floating-point atomics" in timer.status_message
    # a second run over the same output resumes: nothing left to do, nothing written twice
    again = verify_dataset(built, tmp_path / "verified", progress=False)
    assert again.skipped_groups == 2 and not again.groups
    assert len(read_records(tmp_path / "verified")) == ROWS
    assert read_table(tmp_path / "verified", "kernels").num_rows == ROWS
