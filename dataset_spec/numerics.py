"""Floating-point facts per storage dtype and the verifier's per-element error bound.

The bound for output element i of a problem (the error model is docs/verification.md):

    |out_i - ref_i| <= r * u_out * |ref_i|
                       + ((2 * u_in + acc(n)) * S_i + u_acc * P_i) * (1 + u_out)
                       + sub_out + n * tiny_acc

    acc(n) = min(gamma(n), C_ACC * sqrt(n) * u_acc),  gamma(n) = n u_acc / (1 - n u_acc)

``u_out``: unit roundoff of the output's storage dtype, ``r`` the roundings to it (1: the
store's round-to-nearest; params.output_roundings); ``u_in``:
roundoff a kernel may apply to its operands before multiplying (0 when operands are used
as stored, 2^-10 for tf32 tensor-core inputs, which may truncate); ``u_acc``: roundoff of
the accumulation precision (float32 unless the problem says otherwise); ``n``: reduction
length (terms per output element); ``S_i``: the op's float64 magnitude scale of the terms
that produced element i (``|A| @ |B|`` for a GEMM, ``|x| + |y|`` for an add), so
cancellation in ``ref_i`` never makes a correct kernel fail; ``sub_out``: the output
dtype's smallest subnormal (rounding in the subnormal range is absolute, not relative);
``tiny_acc``: the accumulator's smallest normal, covering flush-to-zero of subnormal
intermediates in float32 arithmetic (``.ftz``), once per reduction step; ``P_i``: the op's
pointwise scale, the magnitudes a fixed number of roundings carry to element i whatever
``n`` is (a GEMM's alpha/beta epilogue, exp's argument in a softmax), each counted once.

``gamma(n)`` is the worst case of any order of n roundings (Higham, Accuracy and
Stability, 3.1); ``C_ACC sqrt(n) u_acc`` the probabilistic one of a random walk. The
smaller of the two is taken per n: below n = C_ACC^2 the worst case is the smaller.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import fp8

C_ACC = 2.0  # margin on the accumulation term: about 6 standard deviations of a random-walk sum


def fp8_alignment_magnitudes(values, dtype: str):
    """|values| of an FP8 operand as an FP8 tensor core weighs them when it aligns products:
    a nonzero subnormal counts as the format's smallest normal (zero stays 0). The adder
    aligns every product of an MMA to the largest exponent among them, read from the
    operands' exponent fields; a subnormal's field holds the smallest normal exponent, so
    a product of a subnormal claims up to 2^(mantissa bits) times its magnitude, and the
    others are truncated to that coarser step (docs/verification.md, "FP8 tensor cores").
    Works on numpy arrays and torch tensors alike."""
    magnitudes = abs(values)
    tiny = FORMATS[dtype].tiny
    return magnitudes + (magnitudes > 0) * (tiny - magnitudes).clip(min=0)


def accumulation_coefficient(n: int, u_acc: float) -> float:
    """acc(n): the relative error of an n-term float reduction in any order, the smaller of
    the worst case gamma(n) and the probabilistic C_ACC sqrt(n) u_acc."""
    n = max(1, int(n))
    worst = n * u_acc / (1.0 - n * u_acc) if n * u_acc < 0.5 else math.inf
    return min(worst, C_ACC * math.sqrt(n) * u_acc)


@dataclass(frozen=True)
class FloatFormat:
    """What the verifier needs to know of a floating-point storage dtype."""
    name: str
    unit_roundoff: float   # half an ulp at 1.0
    max_finite: float
    tiny: float            # smallest positive normal
    subnormal_min: float   # smallest positive subnormal


FORMATS = {
    "float16": FloatFormat("float16", 2.0 ** -11, 65504.0, 2.0 ** -14, 2.0 ** -24),
    "bfloat16": FloatFormat("bfloat16", 2.0 ** -8, float(np.float32(3.3895313892515355e38)), 2.0 ** -126, 2.0 ** -133),
    "float32": FloatFormat("float32", 2.0 ** -24, float(np.finfo(np.float32).max), 2.0 ** -126, 2.0 ** -149),
    "float64": FloatFormat("float64", 2.0 ** -53, float(np.finfo(np.float64).max), 2.0 ** -1022, 2.0 ** -1074),
    **{name: FloatFormat(name, fp8.unit_roundoff(name), fp8.max_finite(name), fp8.smallest_normal(name),
                         fp8.smallest_subnormal(name)) for name in fp8.FP8_LAYOUTS},
}
# Accumulators that are not a storage dtype. Hopper's FP8 tensor cores add products into
# fewer bits than float32 (about 14 significant bits, DeepSeek-V3 report, section 3.3.2);
# CUTLASS moves the partial sums into float32 registers every few MMAs, so the error of a
# K-long sum is at most that of a 2^-13-roundoff accumulation.
ACCUMULATORS = {
    "fp8_tensor_core": FloatFormat("fp8_tensor_core", 2.0 ** -13, float(np.finfo(np.float32).max),
                                   2.0 ** -126, 2.0 ** -149),
}
UNIT_ROUNDOFF = {name: f.unit_roundoff for name, f in FORMATS.items()}
# Operand precisions a kernel may round inputs to inside its math (tensor-core input modes).
# Twice the unit roundoff: tensor cores may truncate rather than round to nearest.
MATH_INPUT_ROUNDOFF = {"tf32": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}


def is_float(dtype: str) -> bool:
    return dtype in FORMATS


@dataclass(frozen=True)
class BoundTerms:
    """The scalar coefficients of the bound for one output buffer (see module docstring)."""
    u_out: float
    u_in: float
    u_acc: float
    n: int
    tiny_out: float   # smallest normal of the output dtype (the scale below which ulps stop shrinking)
    tiny_acc: float
    sub_out: float = 0.0

    @property
    def scale_coefficient(self) -> float:
        return (2.0 * self.u_in + accumulation_coefficient(self.n, self.u_acc)) * (1.0 + self.u_out)

    @property
    def pointwise_coefficient(self) -> float:
        return self.u_acc * (1.0 + self.u_out)

    @property
    def floor(self) -> float:
        return self.sub_out + max(1, self.n) * self.tiny_acc

    def bound(self, reference: np.ndarray, scale: np.ndarray, pointwise=None) -> np.ndarray:
        """Per-element bound (float64) for a float64 reference, magnitude scale S and
        pointwise scale P (None: 0); 0 where the reference is not finite."""
        reference = np.asarray(reference, dtype=np.float64)
        scale = np.abs(np.asarray(scale, dtype=np.float64))
        with np.errstate(invalid="ignore", over="ignore"):
            out = self.u_out * np.abs(reference) + self.scale_coefficient * scale + self.floor
            if pointwise is not None:
                out = out + self.pointwise_coefficient * np.abs(np.asarray(pointwise, dtype=np.float64))
        # a non-finite reference element must be matched exactly: no allowance there
        return np.where(np.isfinite(reference), np.where(np.isfinite(out), out, np.inf), 0.0)

    def describe(self) -> str:
        return (f"u_out={self.u_out:.3g} u_in={self.u_in:.3g} u_acc={self.u_acc:.3g} n={self.n} "
                f"(S coefficient {self.scale_coefficient:.3g}, P coefficient {self.pointwise_coefficient:.3g}, "
                f"floor {self.floor:.3g})")


def bound_terms(out_dtype: str, reduction_length: int, accumulator: str = "", math_input: str = "",
                output_roundings: int = 1) -> BoundTerms:
    """Coefficients for an output of ``out_dtype``. Integer outputs get an all-zero bound
    (they must match exactly). ``accumulator``: the accumulation dtype (default float32, or
    float64 for float64 outputs); ``math_input``: tf32/bfloat16/float16 when the kernel
    rounds its operands to that before multiplying; ``output_roundings``: how many times the
    kernel may round a value to the output dtype (1: one round-to-nearest at the store)."""
    if out_dtype not in FORMATS:
        return BoundTerms(0.0, 0.0, 0.0, max(1, int(reduction_length)), 0.0, 0.0)
    out = FORMATS[out_dtype]
    if accumulator in ACCUMULATORS:
        acc = ACCUMULATORS[accumulator]
    else:
        acc = FORMATS[accumulator if accumulator in FORMATS else ("float64" if out_dtype == "float64" else "float32")]
    u_in = MATH_INPUT_ROUNDOFF.get(str(math_input or "").lower(), 0.0)
    return BoundTerms(out.unit_roundoff * max(1, int(output_roundings)), u_in, acc.unit_roundoff,
                      max(1, int(reduction_length)), out.tiny, acc.tiny, out.subnormal_min)


def smallest_caught_relative_error(reference: np.ndarray, bound: np.ndarray) -> float:
    """The smallest uniform relative error eps such that ``ref * (1 + eps)`` fails the bound
    somewhere: min over elements with ref != 0 of bound_i / |ref_i| (inf if none)."""
    ref = np.abs(np.asarray(reference, dtype=np.float64))
    bound = np.asarray(bound, dtype=np.float64)
    mask = (ref > 0) & np.isfinite(ref) & np.isfinite(bound)
    if not mask.any():
        return float("inf")
    return float(np.min(bound[mask] / ref[mask]))
