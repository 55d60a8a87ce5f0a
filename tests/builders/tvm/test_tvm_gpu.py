"""GPU: every small group of the carried TVM dataset (.gpu/tvm, built by
``ptxds build --source tvm --out .gpu/tvm``) verifies all-passing. The large groups are
verified by benchmarks/gpu_run.sh, which runs ``ptxds verify`` on every carried dataset."""
from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

DATASET = Path(__file__).resolve().parents[3] / ".gpu" / "tvm"


def test_small_tvm_groups_all_pass(tmp_path):
    if not (DATASET / "kernels").is_dir():
        pytest.skip(f"no TVM dataset at {DATASET}; build it with ptxds build --source tvm --out .gpu/tvm")
    from dataset_spec.store.shards import read_records
    from verify import verify_dataset
    verify_dataset(DATASET, tmp_path / "out", groups="tvm/*/small", time_budget=0.1, progress=False)
    built = {r.kernel_id for r in read_records(DATASET) if r.status == "built" and r.group_id.endswith("/small")}
    rows = [r for r in read_records(tmp_path / "out") if r.kernel_id in built]   # build_failed rows are not run
    assert len(rows) == len(built)
    groups = {r.group_id for r in rows}
    assert len(groups) >= 6, groups
    bad = [(r.name, r.arch, r.status, r.status_message[:200]) for r in rows if r.status != "passed"]
    assert not bad, bad
