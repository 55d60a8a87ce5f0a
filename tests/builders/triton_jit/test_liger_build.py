"""A real library's kernel built end to end from its call description on CPU: Liger-Kernel
0.8.5's RMSNorm forward (examples/liger/rms_norm.yaml) becomes one runnable row whose
problem declares the kernel's rstd output, with the registry's two-rounding default for
Llama's cast; the stride-1 arguments Triton compiles away are recorded."""
from pathlib import Path

import pytest

from builders.base import BuildOptions
from dataset_spec.store.dataset import Dataset
from dataset_spec.ops import get_op

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "liger" / "rms_norm.yaml"


def test_liger_rms_norm_builds_from_its_description(tmp_path):
    pytest.importorskip("liger_kernel")
    pytest.importorskip("triton")
    from ptxds.pipeline import run_build
    run_build("triton-jit", tmp_path, BuildOptions(archs=["sm_90a"], extra={"call": str(EXAMPLE)}),
              jobs=1, progress=False)
    [row] = Dataset.open(tmp_path).records()
    assert row.status == "built", row.status_message
    assert row.source == "triton-jit" and row.name == "_rms_norm_forward_kernel"
    assert row.group_id == "triton-jit/liger/rms_norm/bfloat16/M256xN4096"
    assert [b.name for b in row.problem.buffers if b.role == "out"] == ["y", "rstd"]
    assert set(get_op("rmsnorm").produced_outputs(row.problem)) == {"y", "rstd"}
    assert get_op("rmsnorm").output_roundings(row.problem, "y") == 2
    assert row.variant["specialization"]["specialised_away"] == {"W_row_stride": 1, "RSTD_row_stride": 1}
    [launch] = row.launches
    assert launch.grid == (256, 1, 1) and launch.block == (256, 1, 1)
    assert [a.buffer for a in launch.args if a.kind == "buffer"] == ["y", "x", "w", "rstd"]
