"""GPU test of the handhack source: the Smith-Waterman base and its hand-edited members all
verify against the int reference, with identical output bits, and are timed."""
import pytest

pytest.importorskip("triton")

from builders.base import BuildOptions  # noqa: E402
from builders.handhack.builder import MEMBERS  # noqa: E402
from dataset_spec.store.shards import read_records  # noqa: E402
from ptxds.pipeline import run_build  # noqa: E402

pytestmark = pytest.mark.gpu


def test_smith_waterman_members_verify_equivalent_and_are_timed(tmp_path, monkeypatch):
    from verify import verify_dataset
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    built = tmp_path / "built"
    run_build("handhack", built, BuildOptions(archs=["sm_90a"], limit=1), jobs=1, progress=False)
    verify_dataset(built, tmp_path / "verified", progress=False)
    rows = {r.variant["member"]: r for r in read_records(tmp_path / "verified")}
    assert set(rows) == {"global", *MEMBERS}
    for member, row in rows.items():
        assert row.status == "passed", f"{member}: {row.status} {row.status_message}"
        assert row.max_abs_err == 0.0 and row.deterministic
        assert row.time_us_median and row.time_us_median > 0
    assert len({row.output_hash for row in rows.values()}) == 1  # int scores: the same bits
