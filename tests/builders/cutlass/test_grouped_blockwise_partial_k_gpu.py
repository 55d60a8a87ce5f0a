"""GPU test of a CUTLASS grouped blockwise-scaled FP8 kernel at the ``sweep`` sizes, one of
which ends in a partial K block (4 experts, K = 1040 = 8 x 128 + 16: the ninth block's
scales multiply a 16-product sum). Verifies ``.gpu/conv19/gblock-sweep``, built with::

    ptxds build --source cutlass --arch sm_90a --shapes sweep --jobs 1 --out .gpu/conv19/gblock-sweep \\
      --family cutlass3x_sm90_tensorop_gemm_grouped_1x128f32xe4m3_128x128f32xe4m3_f32_bf16_bf16_\\
128x128x128_1x2x1_0_tnn_align16_warpspecialized_cooperative_epi_tma

and expects its three rows (K = 1024, 256 and 1040) to pass. Skipped without a GPU, and
where the dataset was not carried.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from dataset_spec.store.shards import read_records

pytestmark = pytest.mark.gpu

DATASET = Path(__file__).resolve().parents[3] / ".gpu" / "conv19" / "gblock-sweep"


def test_grouped_blockwise_rows_pass_with_a_partial_k_block(tmp_path):
    from verify import verify_dataset
    if not DATASET.exists():
        pytest.skip(f"{DATASET} was not carried (build it with the command in this file's docstring)")
    verify_dataset(DATASET, tmp_path / "out", kernel_timeout=60.0, progress=False, timing=False)
    rows = read_records(tmp_path / "out")
    assert len(rows) == 3 and any(r.group_id.endswith("K1040") for r in rows)
    failed = {r.group_id: f"{r.status}: {r.status_message[:300]}" for r in rows if r.status != "passed"}
    assert not failed, failed
