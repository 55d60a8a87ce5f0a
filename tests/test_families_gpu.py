"""GPU test of the new CUTLASS families (int8 with saturating stores, FP8, f64 DMMA, SIMT,
mixed input, SM90 ConvertOnly mixed input, reduced-precision float32 math, beta != 0): verifies the datasets built into
``.gpu/families/cutlass-*`` (docs/cutlass.md, "Families"; the build commands are in
docs/gpu-results.md) and expects every row to pass or be ``not_applicable``.

Skipped without a GPU, and where those datasets were not carried.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dataset_spec.shards import read_records

pytestmark = pytest.mark.gpu

FAMILIES = Path(__file__).resolve().parents[1] / ".gpu" / "families"
DATASETS = ("cutlass-sm80", "cutlass-beta", "cutlass-sm90", "cutlass-cvt", "cutlass-cvt-seed3",
            "cutlass-cvt-schedules")


@pytest.mark.parametrize("name", DATASETS)
def test_every_family_row_passes(name, tmp_path):
    dataset = FAMILIES / name
    if not dataset.is_dir():
        pytest.skip(f"{dataset} was not carried (build it with the commands in docs/gpu-results.md)")
    out = tmp_path / "verified"
    proc = subprocess.run([sys.executable, "-m", "ptxds", "verify", str(dataset), "--out", str(out),
                           "--silent", "--no-timing"], capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = list(read_records(out))
    assert rows
    failed = [(r.name, r.arch, r.status, r.status_message[:300]) for r in rows
              if r.status not in ("passed", "not_applicable")]
    assert not failed, failed
