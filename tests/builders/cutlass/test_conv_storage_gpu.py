"""GPU test of the conv families whose buffers are not channels-last real arrays
(docs/cutlass.md, "Convolutions"): packed int4/uint4 (NHWC, single and multiple group),
interleaved nc32hw32 / nc64hw64 and complex<float> SIMT fprop, dgrad and wgrad. Verifies
the datasets built into ``.gpu/conv19/`` and expects every row to pass.

``data`` (one kernel of each of those 19 families, default size) was built with::

    ptxds build --source cutlass-conv --arch sm_80 --per-family 1 --out .gpu/conv19/data \\
      --family 'cutlass_tensorop_*4_i16864fprop_*,cutlass_tensorop_i16864fprop_*,\\
cutlass_tensorop_*8_i16832fprop_*_nc32hw32_*,cutlass_simt_cf32_c*'

``llm`` (s4 -> s32 NHWC, s8 nc32hw32, u4 nc64hw64 and cf32 fprop at the ResNet-50 / ViT
sizes) with ``--shapes llm --family 'cutlass_tensorop_i16864fprop_*_s4_*_nhwc_align32,\\
cutlass_tensorop_s8_i16832fprop_*_nc32hw32_*,cutlass_tensorop_u4_i16864fprop_*_nc64hw64_*,\\
cutlass_simt_cf32_cfprop_*'``.

Skipped without a GPU, and where a dataset was not carried.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import verified_carried

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3] / ".gpu" / "conv19"
ROWS = {"data": 19, "llm": 20}


def storage_kinds(rows) -> set:
    kinds = set()
    for r in rows:
        p = r.problem.params
        kinds.add("complex" if p.get("complex") else p.get("layout", "nhwc"))
        kinds.update(b.dtype for b in r.problem.buffers if b.dtype in ("int4", "uint4"))
    return kinds


@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_sub_byte_interleaved_and_complex_conv_row_passes(name, tmp_path):
    rows = verified_carried(ROOT / name, tmp_path)
    assert len(rows) == ROWS[name]
    assert {"complex", "nc32hw32", "nc64hw64", "nhwc", "int4", "uint4"} <= storage_kinds(rows)
    failed = [(r.name, r.group_id, r.status, r.status_message[:300]) for r in rows if r.status != "passed"]
    assert not failed, failed
