"""The labels of CUTLASS GEMM families whose first GPU verification failed: unsigned
saturating outputs (sparse operands), stress-trial domains, grouped FP8 sizes and the FP8
accumulator bound, each checked on the real kernels' problems with the verifier's draws."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cutlass_library")

from builders.cutlass import catalog  # noqa: E402
from builders.cutlass.problem import DEFAULT_PROBLEM, epilogue_alpha, fit_to_family, make_problem  # noqa: E402
from dataset_spec.ops import get_op  # noqa: E402
from verify.inputs import float_to_bits  # noqa: E402
from verify.outcome import CheckResult, TrialRun, classify  # noqa: E402
from verify.runner import prepare_problem  # noqa: E402


def spec_of(sm: int, name: str):
    return catalog.describe_operation(catalog.load_manifest_operations(sm)[name])


def judge(problem, kernel):
    """The verifier's verdict on ``kernel(values, reference)`` over every trial."""
    prepared = prepare_problem(problem, "g", None)
    assert prepared.refusal == "", prepared.refusal
    spec = prepared.specs[0]
    runs = [TrialRun(trial.trial, {spec.name: float_to_bits(kernel(trial.values, ref[spec.name]), spec.dtype)})
            for trial, ref in zip(prepared.trials, prepared.references)]
    return classify(CheckResult(runs), prepared.specs, prepared.references), prepared


UNSIGNED_SATURATING = [
    (80, "cutlass_tensorop_u4_i16864gemm_u4_64x128_256x3_tn_align32", 15),
    (80, "cutlass_tensorop_u8_i16832gemm_u8_256x64_128x4_tn_align16", 255),
    (90, "cutlass3x_sm90_tensorop_gemm_u8_u8_s32_s8_u8_64x128x128_1x2x1_0_tnn_align16_warpspecialized_pingpong_epi_tma",
     255),
]


@pytest.mark.parametrize("sm,name,top", UNSIGNED_SATURATING)
def test_unsigned_saturating_gemms_draw_sparse_operands_whose_outputs_spread(sm, name, top):
    """u4 x u4 -> u4 and u8 x u8 -> u8 GEMMs at the default size: uniform operands made
    every output saturate (a refused, near-constant reference); the builder's sparse
    operands and power-of-two alpha spread the outputs over the range in every trial, a
    correct kernel passes and a one-step error in one element is caught."""
    spec = spec_of(sm, name)
    m, n, k = fit_to_family([spec], *DEFAULT_PROBLEM)
    alpha = epilogue_alpha(spec, m, n, k, 1.0, False)
    assert alpha < 1 and float(alpha).is_integer() is False and np.log2(alpha).is_integer()
    assert epilogue_alpha(spec, m, n, k, 0.5, True) == 0.5  # --alpha wins
    problem = make_problem(spec, m, n, k, alpha, 0.0)
    assert problem.params["operand_density"] == pytest.approx((16 / k) ** 0.5)
    assert get_op("gemm").integer_range(problem, problem.buffer("A")) is None
    verdict, prepared = judge(problem, lambda values, ref: ref)
    assert verdict.status == "passed", verdict.message
    assert len(prepared.trials) == 5
    for trial, ref in zip(prepared.trials, prepared.references):
        a = np.asarray(trial.values["A"])
        assert 0.01 < np.mean(a > 0) < 0.5 and a.max() > top / 2
        d = np.asarray(ref["D"]).reshape(-1)
        assert d.std() > top / 10 and 0 < np.mean(d == top) < 0.5, (trial.kind, d.mean(), d.std())
    one_step = lambda values, ref: np.where(np.arange(ref.size).reshape(ref.shape) == 7,  # noqa: E731
                                            np.where(ref > 0, ref - 1, ref + 1), ref)
    verdict, _ = judge(problem, one_step)
    assert verdict.status == "wrong_result"
