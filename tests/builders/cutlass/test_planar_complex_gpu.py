"""GPU: the small CUTLASS planar complex datasets (docs/cutlass.md "Complex GEMMs") verify:
.gpu/c-gblock/planar (PlanarComplex, default size; each imaginary plane one plane past its
buffer's real one) and .gpu/c-gblock/planar-array (PlanarComplexArray, the default grouped
size; sizes and plane addresses through device tables), each also with alpha 1.5 and beta 0.5
(``-beta``: the C planes too). Every row passes."""
from __future__ import annotations

from pathlib import Path

import pytest

from dataset_spec.store.shards import read_records

pytestmark = pytest.mark.gpu

DATASETS = Path(__file__).resolve().parents[3] / ".gpu" / "c-gblock"


@pytest.mark.parametrize("name", ["planar", "planar-beta", "planar-array", "planar-array-beta"])
def test_cutlass_planar_complex_rows_pass(name, tmp_path):
    from verify import verify_dataset
    if not (DATASETS / name).exists():
        pytest.skip(f"the CUTLASS planar complex dataset {name} is not built (see docs/cutlass.md, Complex GEMMs)")
    verify_dataset(DATASETS / name, tmp_path / "out", kernel_timeout=60.0, progress=False, timing=False)
    rows = read_records(tmp_path / "out")
    assert rows and all(r.problem.params["complex"].get("planar") for r in rows)
    failed = {r.name: f"{r.status}: {r.status_message[:300]}" for r in rows if r.status != "passed"}
    assert not failed, failed
