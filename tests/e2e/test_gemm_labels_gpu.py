"""GPU check of the relabelled CUTLASS GEMM families (tests/builders/cutlass/test_cutlass_gemm_labels.py on
the CPU): the small datasets built into .gpu/gemmfix/<part> pass every trial kind.

A: unsigned saturating u4/u8 GEMMs (sparse operands, mid-range alpha); B: integer x f16
mixed-input (the eight SM80 upcast families) and 3xTF32 kernels on the stress trial; C:
grouped FP8-output TMA epilogues at 16-byte column sizes; D: the grouped e4m3 x e5m2 -> f32
GEMM whose edge trial failed before the FP8 bound weighed subnormal operands as the tensor
core aligns them; E: the SM90a 2:4 sparse u8 x u8 -> u8 GEMM (sparse kept values and
operands, mid-range alpha); S and S-conv: one kernel of each of the 7 signed saturating GEMM
families (s4/s8 outputs, dense and sparse) and 14 conv families, with spread_alpha's power of
two (built with the commands in docs/runs/run-067-071.md, run 75).
Skipped where a dataset is not built or no CUDA driver or device is present.
"""
from pathlib import Path

import pytest

from dataset_spec.store.shards import read_records

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2] / ".gpu" / "gemmfix"
PARTS = ["A", "A-sm90", "B", "B-sm90", "C", "D", "E", "S", "S-conv"]


@pytest.mark.parametrize("part", PARTS)
def test_relabelled_gemm_rows_pass(part, tmp_path):
    dataset = ROOT / part
    if not dataset.exists():
        pytest.skip(f"{dataset} is not built (docs/cutlass.md)")
    from verify import verify_dataset
    verify_dataset(dataset, tmp_path / "out", kernel_timeout=60.0, progress=False, timing=False)
    rows = read_records(tmp_path / "out")
    assert rows
    failed = {r.name: f"{r.status}: {r.status_message[:400]}" for r in rows if r.status != "passed"}
    assert not failed, failed
