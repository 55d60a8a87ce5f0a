"""GPU: the mma.sync tensor-core members of the carried dataset .gpu/tvmmma/data (built by
``ptxds build --source tvm --workloads matmul_fp16,matmul_bf16 --tensor-cores only
--out .gpu/tvmmma/data``) verify all-passing against the float64 reference, at both sizes."""
from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

DATASET = Path(__file__).resolve().parents[1] / ".gpu" / "tvmmma" / "data"


def test_mma_members_pass(tmp_path):
    if not (DATASET / "kernels").is_dir():
        pytest.skip(f"no dataset at {DATASET}; build it with ptxds build --source tvm --workloads "
                    "matmul_fp16,matmul_bf16 --tensor-cores only --out .gpu/tvmmma/data")
    from dataset_spec.shards import read_records
    from verify import verify_dataset
    verify_dataset(DATASET, tmp_path / "out", time_budget=0.1, progress=False)
    built = {r.kernel_id for r in read_records(DATASET) if r.status == "built"}
    rows = [r for r in read_records(tmp_path / "out") if r.kernel_id in built]
    assert len(rows) == len(built)
    mma = [r for r in rows if r.variant.get("generator") == "mma"]
    assert {r.group_id for r in mma} >= {f"tvm/{w}/{s}" for w in ("matmul_fp16", "matmul_bf16")
                                        for s in ("small", "large")}
    bad = [(r.name, r.arch, r.status, r.status_message[:200]) for r in rows if r.status != "passed"]
    assert not bad, bad
