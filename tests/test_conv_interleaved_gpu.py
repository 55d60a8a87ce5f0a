"""GPU test of the four interleaved conv families (s8/u8 nc32hw32, s4/u4 nc64hw64 fprop)
whose filters are stored reordered along K as ``cutlass::reorder_convK<I>`` leaves them
(dataset_spec/ops/conv_layouts.py). Verifies the datasets built into ``.gpu/convfix/`` and
expects every row to pass: before the reorder every row was wrong_result.

``data`` (one kernel of each family, default size) and ``llm`` (the same kernels at the
ResNet-50 / ViT sizes, ``--shapes llm``) were built with::

    ptxds build --source cutlass-conv --arch sm_80 --out .gpu/convfix/data \\
      --family 'cutlass_tensorop_s8_i16832fprop_optimized_s8_256x64_64x4_nc32hw32_align16,\\
cutlass_tensorop_u8_i16832fprop_optimized_u8_256x64_64x4_nc32hw32_align16,\\
cutlass_tensorop_s4_i16864fprop_optimized_s4_128x128_128x5_nc64hw64_align32,\\
cutlass_tensorop_u4_i16864fprop_optimized_u4_128x128_128x5_nc64hw64_align32'

and the same command with ``--shapes llm --out .gpu/convfix/llm``.

Skipped without a GPU, and where a dataset was not carried.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dataset_spec.shards import read_records

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1] / ".gpu" / "convfix"
ROWS = {"data": 4, "llm": 20}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_interleaved_conv_row_passes(name, tmp_path):
    dataset = ROOT / name
    if not dataset.is_dir():
        pytest.skip(f"{dataset} was not carried (build it with the command in this file's docstring)")
    out = tmp_path / "verified"
    proc = subprocess.run([sys.executable, "-m", "ptxds", "verify", str(dataset), "--out", str(out),
                           "--silent", "--no-timing"], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = list(read_records(out))
    assert len(rows) == ROWS[name]
    assert {r.problem.params.get("layout") for r in rows} == {"nc32hw32", "nc64hw64"}
    assert {r.problem.buffer("w").dtype for r in rows} == {"int8", "uint8", "int4", "uint4"}
    failed = [(r.name, r.group_id, r.status, r.status_message[:300]) for r in rows if r.status != "passed"]
    assert not failed, failed
