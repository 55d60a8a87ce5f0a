"""GPU: the mma.sync tensor-core members of the carried datasets verify all-passing against
the float64 reference, at both sizes: .gpu/tvmmma/data (``ptxds build --source tvm --workloads
matmul_fp16,matmul_bf16 --tensor-cores only --out .gpu/tvmmma/data``) and .gpu/tvmmma/conv
(``ptxds build --source tvm --workloads conv2d_nhwc_fp16 --arch sm_90a --out .gpu/tvmmma/conv``:
the implicit-GEMM members beside the CUDA-core ones)."""
from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

HERE = Path(__file__).resolve().parents[3] / ".gpu" / "tvmmma"


def _verified(dataset: Path, tmp_path, build: str) -> list:
    if not (dataset / "kernels").is_dir():
        pytest.skip(f"no dataset at {dataset}; build it with {build}")
    from dataset_spec.store.shards import read_records
    from verify import verify_dataset
    verify_dataset(dataset, tmp_path / "out", time_budget=0.1, progress=False)
    built = {r.kernel_id for r in read_records(dataset) if r.status == "built"}
    rows = [r for r in read_records(tmp_path / "out") if r.kernel_id in built]
    assert len(rows) == len(built)
    bad = [(r.name, r.arch, r.status, r.status_message[:200]) for r in rows if r.status != "passed"]
    assert not bad, bad
    return rows


def test_mma_matmul_members_pass(tmp_path):
    rows = _verified(HERE / "data", tmp_path, "ptxds build --source tvm --workloads matmul_fp16,matmul_bf16 "
                                              "--tensor-cores only --out .gpu/tvmmma/data")
    mma = [r for r in rows if r.variant.get("generator") == "mma"]
    assert {r.group_id for r in mma} == {f"tvm/{w}/{s}" for w in ("matmul_fp16", "matmul_bf16")
                                        for s in ("small", "large")}


def test_mma_conv_members_pass(tmp_path):
    rows = _verified(HERE / "conv", tmp_path, "ptxds build --source tvm --workloads conv2d_nhwc_fp16 "
                                              "--arch sm_90a --out .gpu/tvmmma/conv")
    mma = [r for r in rows if r.variant.get("generator") == "mma"]
    assert {r.group_id for r in mma} == {"tvm/conv2d_nhwc_fp16/small", "tvm/conv2d_nhwc_fp16/large"}
