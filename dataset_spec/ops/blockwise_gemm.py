"""blockwise_scaled_gemm: an FP8 GEMM with per-block scale tensors (DeepSeek-style 1x128 /
128x128 scaling, CUTLASS's ``KernelTmaWarpSpecializedCooperativeFP8Blockwise`` mainloops).

    D = alpha * sum_kb (A[:, kb] @ B[kb, :]) * SFA[m // gm, kb] * SFB[n // gn, kb] + beta * C

Buffers: A (M x K, fp8), B (K x N, fp8), SFA ((M/gm) x (K/gk), float32), SFB ((N/gn) x
(K/gk), float32), optional C, and D; block counts round up (a partial block has its own
scale). ``params``: M, N, K, ``layout_a/b/c`` (row/col, as for ``gemm``),
``scale_granularity_a`` [gm, gk], ``scale_granularity_b`` [gn, gk] and ``layout_sfa``,
``layout_sfb`` ("col": the logical (blocks x K-blocks) matrix stored M- or N-major, as
CUTLASS's MN-major ``ScaleConfig::tile_atom_to_shape_SFA/SFB`` lays it out; "row":
K-major), alpha, beta.

The error model (docs/verification.md, "blockwise_scaled_gemm"): each K block of gk
products is summed on the FP8 tensor cores (``fp8_tensor_core`` roundoff, gk terms), the
block sum is promoted into float32 times its scales (two float32 roundings: the scale
product and the scaled term) and the K/gk promoted terms are summed in float32, in any
order (stream-K may split the sum between CTAs). With S_i the scaled magnitude
(|alpha| |A_s| @ |B_s| + |beta| |C|, A_s = A * SFA per block), the coefficient of S_i is
acc_tc(gk) + 2 u_f32 + acc_f32(K/gk), against acc_tc(K) for a plain FP8 GEMM.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..model import Buffer, Distribution, Problem, SpecError
from ..numerics import ACCUMULATORS, FORMATS, BoundTerms, accumulation_coefficient, bound_terms
from .gemm import _logical, gemm_epilogue_roundings, operand_magnitudes, saturate_to_output
from .spec import OpSpec, _fmt, _inputs_of, _out_dtype, _out_name

OP = "blockwise_scaled_gemm"
SCALE_BUFFERS = ("SFA", "SFB")
TENSOR_CORE = "fp8_tensor_core"
# Typical |D| the default inputs aim at: well inside every output dtype (fp8 e4m3 tops at
# 448), so few outputs saturate and the reference is not trivial.
TYPICAL_OUTPUT = 32.0
# Binades the wide, edge and stress trials spread the scales over, below their top.
SCALE_BINADES = 20


def granularities(problem: Problem) -> tuple:
    """(gm, gn, gk) from the problem's params; the K granularities of A and B must agree."""
    p = problem.params
    try:
        gm, gka = (int(v) for v in p["scale_granularity_a"])
        gn, gkb = (int(v) for v in p["scale_granularity_b"])
    except (KeyError, TypeError, ValueError):
        raise SpecError(f"problem {problem.problem_id}: {OP} needs params scale_granularity_a [gm, gk] and "
                        f"scale_granularity_b [gn, gk] (positive ints)") from None
    if gka != gkb or min(gm, gn, gka) < 1:
        raise SpecError(f"problem {problem.problem_id}: scale granularities {[gm, gka]} (A) and {[gn, gkb]} (B) "
                        f"must be positive and share one K granularity")
    return gm, gn, gka


def scale_shape(rows: int, k: int, row_granularity: int, k_granularity: int, layout: str) -> tuple:
    """The storage shape of a scale tensor: (blocks along rows, blocks along K), transposed
    for "col" (M- or N-major) storage."""
    blocks = (-(-rows // row_granularity), -(-k // k_granularity))
    if layout not in ("row", "col"):
        raise SpecError(f"scale layout must be 'row' (K-major) or 'col' (M/N-major), got {layout!r}")
    return blocks if layout == "row" else blocks[::-1]


def _expand(scales: np.ndarray, rows: int, k: int, row_granularity: int, k_granularity: int) -> np.ndarray:
    """A (rows x K) array holding each element's block scale."""
    return np.repeat(np.repeat(scales, row_granularity, axis=0)[:rows], k_granularity, axis=1)[:, :k]


def scaled_operands(inputs: dict, problem: Problem) -> tuple:
    """(A_s, B_s): A (M x K) and B (K x N) with every element times its block's scale, in
    float64, so that D = alpha A_s @ B_s + beta C exactly."""
    p = problem.params
    gm, gn, gk = granularities(problem)
    a, b, sfa, sfb = _inputs_of(problem, inputs, "A", "B", "SFA", "SFB")
    a = _logical(np.asarray(a).reshape(problem.buffer("A").shape), p.get("layout_a", "row"))
    b = _logical(np.asarray(b).reshape(problem.buffer("B").shape), p.get("layout_b", "col"))
    m, k = a.shape
    n = b.shape[1]
    sfa = _logical(np.asarray(sfa).reshape(problem.buffer("SFA").shape), p.get("layout_sfa", "col"))
    sfb = _logical(np.asarray(sfb).reshape(problem.buffer("SFB").shape), p.get("layout_sfb", "col"))
    want_a, want_b = (-(-m // gm), -(-k // gk)), (-(-n // gn), -(-k // gk))
    if sfa.shape != want_a or sfb.shape != want_b:
        raise SpecError(f"problem {problem.problem_id}: SFA holds {sfa.shape} and SFB {sfb.shape} blocks, "
                        f"the granularities need {want_a} and {want_b}")
    with np.errstate(invalid="ignore", over="ignore"):
        return a * _expand(sfa, m, k, gm, gk), b * _expand(sfb, n, k, gn, gk).T


def blockwise_exact(inputs: dict, problem: Problem) -> dict:
    """alpha * A_s @ B_s + beta * C in float64, before the conversion to D's dtype."""
    p = problem.params
    a, b = scaled_operands(inputs, problem)
    out = _out_name(problem)
    with np.errstate(invalid="ignore", over="ignore"):
        d = float(p.get("alpha", 1.0)) * (a @ b)
        beta = float(p.get("beta", 0.0))
        layout_c = p.get("layout_c", "col")
        if beta != 0.0:
            c_name = "C" if "C" in inputs else out
            d = d + beta * _logical(np.asarray(inputs[c_name]).reshape(problem.buffer(c_name).shape), layout_c)
    return {out: _logical(d, layout_c)}


def ref_blockwise(inputs: dict, problem: Problem) -> dict:
    out = _out_name(problem)
    exact = blockwise_exact(inputs, problem)
    return {out: saturate_to_output(exact[out], problem.buffer(out).dtype)}


def scale_blockwise(inputs: dict, problem: Problem) -> dict:
    """S_i = |alpha| (|A_s| @ |B_s|)_i + |beta| |C_i|: the scaled products' magnitudes."""
    p = problem.params
    magnitudes = Problem(problem.problem_id, problem.op, problem.buffers,
                         {**p, "alpha": abs(float(p.get("alpha", 1.0))), "beta": abs(float(p.get("beta", 0.0)))})
    return blockwise_exact(operand_magnitudes(problem, inputs), magnitudes)


def pointwise_blockwise(inputs: dict, problem: Problem, reference: dict) -> dict:
    count = gemm_epilogue_roundings(problem)
    if count == 0:
        return {}
    return {name: count * v for name, v in scale_blockwise(inputs, problem).items()}


def reduction_length(problem: Problem) -> int:
    return int(problem.params["K"])


def k_blocks(problem: Problem) -> int:
    return -(-reduction_length(problem) // granularities(problem)[2])


@dataclass(frozen=True)
class BlockwiseBoundTerms(BoundTerms):
    """The GEMM bound with the block structure: ``n`` is the tensor-core sum's length (gk),
    ``promotion`` the relative error of the scaled promotions and their float32 sum over
    the K blocks, ``steps`` the products per output (K), each a possible flush to zero."""
    promotion: float = 0.0
    steps: int = 1

    @property
    def scale_coefficient(self) -> float:
        return (2.0 * self.u_in + accumulation_coefficient(self.n, self.u_acc) + self.promotion) * (1.0 + self.u_out)

    @property
    def pointwise_coefficient(self) -> float:
        return FORMATS["float32"].unit_roundoff * (1.0 + self.u_out)  # the epilogue runs in float32

    @property
    def floor(self) -> float:
        return self.sub_out + max(1, self.steps) * FORMATS["float32"].tiny

    def describe(self) -> str:
        return super().describe() + f" [blockwise: tensor-core sums of n={self.n}, promotion {self.promotion:.3g}]"


def promotion_coefficient(blocks: int) -> float:
    """Two float32 roundings per promoted block term (the scale product, the scaled term)
    and the float32 sum of ``blocks`` terms in any order."""
    u32 = FORMATS["float32"].unit_roundoff
    return 2.0 * u32 + accumulation_coefficient(blocks, u32)


@dataclass(frozen=True)
class BlockwiseOpSpec(OpSpec):
    """``OpSpec`` whose bound splits the accumulation at the scale blocks."""

    def bound_terms(self, problem: Problem, dtype: str, name: Optional[str] = None) -> BoundTerms:
        base = bound_terms(dtype, granularities(problem)[2], TENSOR_CORE, "", self.output_roundings(problem, name))
        if base.u_out == 0.0 and base.u_acc == 0.0:  # an integer output: exact match
            return base
        return BlockwiseBoundTerms(base.u_out, base.u_in, base.u_acc, base.n, base.tiny_out, base.tiny_acc,
                                   base.sub_out, promotion=promotion_coefficient(k_blocks(problem)),
                                   steps=reduction_length(problem))


def output_limit(problem: Problem) -> float:
    """How large alpha * sum_k |a b sa sb| may get: a quarter of the output's and float32's
    range, over K products."""
    p = problem.params
    limit = min(_fmt(_out_dtype(problem)).max_finite, FORMATS["float32"].max_finite)
    return limit / (4.0 * reduction_length(problem) * max(1.0, abs(float(p.get("alpha", 1.0)))))


def operand_top(problem: Problem, name: str) -> float:
    """The largest |A| (|B|) of the domain: half the fp8 range, or a quarter of the log
    budget when the output is narrow (the scales take the rest)."""
    return min(_fmt(problem.buffer(name).dtype).max_finite / 2, output_limit(problem) ** 0.25)


def scale_range(problem: Problem) -> tuple:
    """[lo, hi] of a scale: hi spends what the operands leave of the output's range
    (|a b| sa sb K alpha <= limit / 4, so every promotion order stays finite), lo is
    SCALE_BINADES below it but never so small that the scaled product of two smallest
    normal operands underflows float32."""
    hi = math.sqrt(output_limit(problem) / (operand_top(problem, "A") * operand_top(problem, "B")))
    tiny = _fmt(problem.buffer("A").dtype).tiny * _fmt(problem.buffer("B").dtype).tiny
    lo = max(hi * 2.0 ** -SCALE_BINADES, math.sqrt(FORMATS["float32"].tiny / tiny))
    return min(lo, hi), hi


def range_blockwise(problem: Problem, buffer) -> tuple:
    if buffer.name == "C":
        beta = max(1.0, abs(float(problem.params.get("beta", 1.0))))
        return _fmt(buffer.dtype).tiny, _fmt(_out_dtype(problem)).max_finite / (4 * beta)
    if buffer.name in SCALE_BUFFERS:
        return scale_range(problem)
    return _fmt(buffer.dtype).tiny, operand_top(problem, buffer.name)


def stress_blockwise(problem: Problem, buffer, context, previous):
    """A and B: the GEMM's rows along K (tail-heavy, constant, wide, NaN, zeros / tail-heavy,
    alternating, wide, inf). Scales: per K block, cycling through the top of the domain
    (near float32 and output overflow once promoted), its bottom (scaled sums near
    float32 underflow), a one-binade spread around the top, one block far larger than
    the rest (the others then fall below its rounding), and log-uniform over the domain."""
    from .. import stress as st
    p = problem.params
    if buffer.name == "A":
        axis = -1 if p.get("layout_a", "row") == "row" else 0
        return st.row_stress(st.GEMM_A, buffer.shape, context, axis)
    if buffer.name == "B":
        axis = 0 if p.get("layout_b", "col") == "row" else -1
        return st.row_stress(st.GEMM_B, buffer.shape, context, axis)
    if buffer.name not in SCALE_BUFFERS:
        return st.row_stress((st.p_normal,), buffer.shape, context)
    layout = p.get("layout_sfa" if buffer.name == "SFA" else "layout_sfb", "col")
    axis = -1 if layout == "row" else 0  # along the K blocks
    return st.row_stress(SCALE_PATTERNS, buffer.shape, context, axis)


def _scale_top(c, m, n):
    return c.hi * 2.0 ** -c.rng.uniform(0.0, 1.0, (m, n))


def _scale_bottom(c, m, n):
    return c.lo * 2.0 ** c.rng.uniform(0.0, 1.0, (m, n))


def _scale_one_large(c, m, n):
    x = c.lo * 2.0 ** c.rng.uniform(0.0, 4.0, (m, n))
    x[np.arange(m), c.rng.integers(0, n, m)] = c.hi
    return x


def _scale_log_uniform(c, m, n):
    return np.exp(c.rng.uniform(math.log(c.lo), math.log(c.hi), (m, n)))


SCALE_PATTERNS = (_scale_top, _scale_bottom, _scale_one_large, _scale_log_uniform)


def default_inits(problem_k: int) -> dict:
    """{buffer: Distribution}: A and B normal with mean 1 (so that some outputs are as
    large as their magnitude scale and a 1% error shows above the bound: zero-mean data
    leave |D| about S / sqrt(K)); scales positive over two binades, centred so that a
    typical |D| is TYPICAL_OUTPUT."""
    centre = math.sqrt(TYPICAL_OUTPUT / (1.5625 * max(1, problem_k)))
    operand = Distribution("normal", {"mean": 1.0, "std": 1.0})
    scale = Distribution("uniform", {"low": centre / 2, "high": centre * 2})
    return {"A": operand, "B": operand, "SFA": scale, "SFB": scale}


def blockwise_problem(problem_id: str, m: int, n: int, k: int, dtypes: dict, granularity_a: tuple,
                      granularity_b: tuple, layouts: dict, alpha: float = 1.0, beta: float = 0.0) -> Problem:
    """A blockwise_scaled_gemm Problem. ``dtypes``: A, B, D (and C when beta != 0);
    ``layouts``: a, b, c (row/col: storage of the logical M x K, K x N, M x N) and sfa, sfb."""
    inits = default_inits(k)
    gm, gk = granularity_a
    gn, _ = granularity_b
    buffers = [
        Buffer("A", dtypes["A"], (m, k) if layouts["a"] == "row" else (k, m), "in", init=inits["A"]),
        Buffer("B", dtypes["B"], (k, n) if layouts["b"] == "row" else (n, k), "in", init=inits["B"]),
        Buffer("SFA", "float32", scale_shape(m, k, gm, gk, layouts["sfa"]), "in", init=inits["SFA"]),
        Buffer("SFB", "float32", scale_shape(n, k, gn, gk, layouts["sfb"]), "in", init=inits["SFB"]),
    ]
    if beta != 0:
        buffers.append(Buffer("C", dtypes["C"], (m, n) if layouts["c"] == "row" else (n, m), "in"))
    buffers.append(Buffer("D", dtypes["D"], (m, n) if layouts["c"] == "row" else (n, m), "out"))
    params = {"M": m, "N": n, "K": k, "layout_a": layouts["a"], "layout_b": layouts["b"],
              "layout_c": layouts["c"], "layout_sfa": layouts["sfa"], "layout_sfb": layouts["sfb"],
              "scale_granularity_a": [int(gm), int(gk)], "scale_granularity_b": [int(gn), int(granularity_b[1])],
              "alpha": alpha, "beta": beta, "accumulator": TENSOR_CORE}
    problem = Problem(problem_id=problem_id, op=OP, buffers=buffers, params=params)
    granularities(problem)
    return problem


assert TENSOR_CORE in ACCUMULATORS

OPS = [
    BlockwiseOpSpec(
        OP, ref_blockwise, reduction_length,
        "D = alpha sum_kb (A_kb @ B_kb) SFA SFB + beta C, per-block float32 scales", scale_blockwise,
        range_blockwise, "|alpha| |A_s| @ |B_s| + |beta| |C| (A_s, B_s: operands times their block scales), "
                         "n = gk on the tensor cores, then K/gk float32 promotions", None,
        pointwise_blockwise, stress_blockwise,
        "e S_i, e the epilogue's float32 roundings of one term (alpha, beta, their products, the add)",
        sizes="gemm", exact_flops=True),
]
