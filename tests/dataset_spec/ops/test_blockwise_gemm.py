"""blockwise_scaled_gemm on CPU: the float64 reference applies per-block scales, a kernel
emulated as CUTLASS's blockwise mainloop computes (fp8 tensor-core block sums kept to 14
bits, float32 promotions, float32 epilogue, one rounding at the store) passes every trial
kind, and a planted 1% error fails, for float32, bfloat16, float16 and fp8 outputs."""
import numpy as np
import pytest

from dataset_spec.model import SpecError
from dataset_spec.ops import get_op
from dataset_spec.ops.blockwise_gemm import blockwise_problem, scale_range, scale_shape
from helpers import judge as shared_judge

LAYOUTS = {"a": "row", "b": "col", "c": "col", "sfa": "col", "sfb": "col"}  # CUTLASS's tnn kernels
KINDS = ["normal", "uniform", "wide", "edge", "stress"]


def make(out="float32", granularity=(1, 128, 128), m=192, n=256, k=640, a="float8_e4m3", b="float8_e4m3",
         alpha=1.0, beta=0.0, c="float32"):
    gm, gn, gk = granularity
    return blockwise_problem(f"bw/{out}/{gm}x{gn}x{gk}", m, n, k, {"A": a, "B": b, "C": c, "D": out},
                             (gm, gk), (gn, gk), LAYOUTS, alpha=alpha, beta=beta)


def f32(x):
    return np.asarray(x, dtype=np.float64).astype(np.float32)


def keep_bits(x, bits=14):
    """x truncated toward zero to ``bits`` significant bits (the tensor cores' adder)."""
    mantissa, exponent = np.frexp(x)
    return np.ldexp(np.trunc(mantissa * 2.0 ** bits) / 2.0 ** bits, exponent)


def emulate(values, problem, chunk=32):
    """D as the blockwise mainloop computes it: per K block, products summed on the tensor
    cores in chunks of ``chunk`` (each partial kept to 14 bits), promoted in float32 with the
    block's scales, then the float32 epilogue."""
    p = problem.params
    m, n, k = p["M"], p["N"], p["K"]
    gm, gk = p["scale_granularity_a"]
    gn, _ = p["scale_granularity_b"]
    a = values["A"].reshape(m, k)
    b = values["B"].reshape(n, k).T
    sfa = values["SFA"].reshape(problem.buffer("SFA").shape).T  # stored M-major
    sfb = values["SFB"].reshape(problem.buffer("SFB").shape).T
    rows = np.arange(m) // gm
    cols = np.arange(n) // gn
    acc = np.zeros((m, n), dtype=np.float32)
    with np.errstate(all="ignore"):
        for block, start in enumerate(range(0, k, gk)):
            partial = np.zeros((m, n))
            for s in range(start, min(start + gk, k), chunk):
                partial = keep_bits(partial + a[:, s:s + chunk] @ b[s:s + chunk])
            scale = f32(sfa[rows, block])[:, None] * f32(sfb[cols, block])[None, :]
            acc = acc + f32(partial) * scale
        d = np.float32(p["alpha"]) * acc
        if p["beta"]:
            d = d + np.float32(p["beta"]) * f32(values["C"].reshape(n, m).T)
    return d.T.astype(np.float64)  # D is stored column-major


def judge(problem, kernel):
    return shared_judge(problem, kernel, reference="numpy")


def test_reference_applies_each_blocks_scales():
    problem = make(m=4, n=3, k=256, granularity=(1, 128, 128))
    rng = np.random.default_rng(0)
    values = {"A": rng.integers(-3, 4, (4, 256)).astype(float), "B": rng.integers(-3, 4, (3, 256)).astype(float),
              "SFA": np.array([[1, 2, 4, 8], [0.5, 0.25, 3, 1]]),  # (K blocks, M): M-major
              "SFB": np.array([[2], [10]])}                          # one N block of 128 covers N = 3
    d = get_op("blockwise_scaled_gemm").reference(values, problem)["D"]
    a, b = values["A"], values["B"]
    want = np.zeros((4, 3))
    for blk in range(2):
        ks = slice(128 * blk, 128 * (blk + 1))
        want += (a[:, ks] @ b[:, ks].T) * values["SFA"][blk][:, None] * values["SFB"][blk][0]
    np.testing.assert_array_equal(d, want.T)  # stored column-major


def test_scale_buffers_have_the_kernels_block_counts():
    problem = make(m=200, n=300, k=520, granularity=(128, 128, 128))
    assert problem.buffer("SFA").shape == (5, 2)  # ceil(520/128) K blocks x ceil(200/128) M blocks
    assert problem.buffer("SFB").shape == (5, 3)
    assert scale_shape(200, 520, 1, 128, "row") == (200, 5)
    with pytest.raises(SpecError, match="share one K granularity"):
        blockwise_problem("x", 128, 128, 256, {"A": "float8_e4m3", "B": "float8_e4m3", "D": "float32"},
                          (1, 128), (128, 64), LAYOUTS)


OUTPUTS = ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2"]
GRANULARITIES = [(1, 128, 128), (128, 128, 128), (1, 1, 128)]


@pytest.mark.parametrize("out", OUTPUTS)
@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_emulated_kernel_passes_every_trial_kind(out, granularity):
    problem = make(out, granularity)
    verdict, prepared = judge(problem, lambda values, ref: emulate(values, problem))
    assert [t.kind for t in prepared.trials] == KINDS
    assert verdict.status == "passed", verdict.message
    assert 0 < verdict.max_err_ratio <= 1


# e5m2 keeps 2 mantissa bits: u_out is 12.5%, and a value pushed across a rounding tie
# lands at most 1/9 + the error away, so a 1% error can never show; 5% does.
PLANTED = {"float32": 0.01, "bfloat16": 0.01, "float16": 0.01, "float8_e4m3": 0.01, "float8_e5m2": 0.05}


@pytest.mark.parametrize("out", OUTPUTS)
def test_planted_error_is_caught(out):
    problem = make(out)
    verdict, prepared = judge(problem, lambda values, ref: emulate(values, problem) * (1 + PLANTED[out]))
    assert verdict.status == "wrong_result", f"{out}: a {PLANTED[out]:.0%} error passed"
    if out in ("float32", "bfloat16", "float16"):  # fp8 outputs: caught only where it crosses a tie
        assert prepared.catches_rel_err < 0.01


def test_one_percent_error_of_a_correctly_rounded_output_is_caught():
    """The exact reference rounded to the output passes; the same 1% off fails."""
    problem = make("bfloat16", granularity=(128, 128, 128))
    verdict, _ = judge(problem, lambda values, ref: ref)
    assert verdict.status == "passed", verdict.message
    verdict, _ = judge(problem, lambda values, ref: ref * 1.01)
    assert verdict.status == "wrong_result"


def test_wrong_block_scale_is_caught():
    """A kernel that applies the scales of the wrong K block (off by one) fails."""
    problem = make("float32", (1, 128, 128))

    def shifted(values, ref):
        moved = dict(values)
        moved["SFA"] = np.roll(values["SFA"].reshape(problem.buffer("SFA").shape), 1, axis=0)
        return emulate(moved, problem)
    verdict, _ = judge(problem, shifted)
    assert verdict.status == "wrong_result"


def test_epilogue_with_c_passes_and_the_plain_fp8_bound_is_looser():
    problem = make("bfloat16", alpha=0.5, beta=0.25, c="bfloat16")
    verdict, _ = judge(problem, lambda values, ref: emulate(values, problem))
    assert verdict.status == "passed", verdict.message
    op = get_op("blockwise_scaled_gemm")
    blockwise = op.bound_terms(make("float32", k=7168), "float32")
    from dataset_spec.numerics import bound_terms
    plain = bound_terms("float32", 7168, "fp8_tensor_core")
    assert blockwise.scale_coefficient < plain.scale_coefficient / 5


def test_domains_keep_every_promotion_finite():
    for out in OUTPUTS:
        problem = make(out, k=7168)
        op = get_op("blockwise_scaled_gemm")
        lo, hi = scale_range(problem)
        assert 0 < lo < hi
        top_a, top_b = (op.domain(problem, name)[1] for name in ("A", "B"))
        s_hi = op.domain(problem, "SFA")[1]
        from dataset_spec.numerics import FORMATS
        limit = min(FORMATS[out].max_finite, FORMATS["float32"].max_finite)
        assert 7168 * top_a * top_b * s_hi * s_hi <= limit / 4 * (1 + 1e-9)
