"""GPU: the small CUTLASS grouped blockwise-scaled FP8 datasets (built into .gpu/c-gblock/gblock
at the default size and .gpu/c-gblock/gblock-llm at the llm MoE sizes, docs/cutlass.md
"Grouped blockwise-scaled FP8 GEMM") verify: every row passes, its scales reached through the
ptr_SFA/ptr_SFB tables the verifier fills after allocation."""
from __future__ import annotations

from pathlib import Path

import pytest

from dataset_spec.shards import read_records

pytestmark = pytest.mark.gpu

DATASETS = Path(__file__).resolve().parents[1] / ".gpu" / "c-gblock"


@pytest.mark.parametrize("name", ["gblock", "gblock-llm"])
def test_cutlass_grouped_blockwise_rows_pass(name, tmp_path):
    from verify import verify_dataset
    if not (DATASETS / name).exists():
        pytest.skip(f"the CUTLASS grouped blockwise dataset {name} is not built "
                    "(see docs/cutlass.md, Grouped blockwise-scaled FP8 GEMM)")
    verify_dataset(DATASETS / name, tmp_path / "out", kernel_timeout=60.0, progress=False, timing=False)
    rows = read_records(tmp_path / "out")
    assert rows and all(r.problem.op == "grouped_blockwise_scaled_gemm" for r in rows)
    failed = {r.name: f"{r.status}: {r.status_message[:300]}" for r in rows if r.status != "passed"}
    assert not failed, failed
