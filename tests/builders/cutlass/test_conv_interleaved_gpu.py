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

from pathlib import Path

import pytest

from helpers import verified_carried

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3] / ".gpu" / "convfix"
ROWS = {"data": 4, "llm": 20}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_interleaved_conv_row_passes(name, tmp_path):
    rows = verified_carried(ROOT / name, tmp_path)
    assert len(rows) == ROWS[name]
    assert {r.problem.params.get("layout") for r in rows} == {"nc32hw32", "nc64hw64"}
    assert {r.problem.buffer("w").dtype for r in rows} == {"int8", "uint8", "int4", "uint4"}
    failed = [(r.name, r.group_id, r.status, r.status_message[:300]) for r in rows if r.status != "passed"]
    assert not failed, failed
