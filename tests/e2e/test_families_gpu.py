"""GPU test of the new CUTLASS families (int8 with saturating stores, FP8, f64 DMMA, SIMT,
mixed input, SM90 ConvertOnly mixed input, reduced-precision float32 math, beta != 0): verifies the datasets built into
``.gpu/families/cutlass-*`` (docs/cutlass.md, "Families"; the build commands are in
docs/runs/) and expects every row to pass or be ``not_applicable``.

Skipped without a GPU, and where those datasets were not carried.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import verified_carried

pytestmark = pytest.mark.gpu

FAMILIES = Path(__file__).resolve().parents[2] / ".gpu" / "families"
DATASETS = ("cutlass-sm80", "cutlass-beta", "cutlass-sm90", "cutlass-cvt", "cutlass-cvt-seed3",
            "cutlass-cvt-schedules")


@pytest.mark.parametrize("name", DATASETS)
def test_every_family_row_passes(name, tmp_path):
    rows = verified_carried(FAMILIES / name, tmp_path, timeout=400, build_hint="the commands in docs/runs/")
    assert rows
    failed = [(r.name, r.arch, r.status, r.status_message[:300]) for r in rows
              if r.status not in ("passed", "not_applicable")]
    assert not failed, failed
