"""The GEMM a CUTLASS kernel computes, stated in the kernel's own terms, and its group.

CUTLASS 2.x library instances with column-major C are emitted as the transposed problem
(A and B swapped, M and N swapped, every layout transposed), so the kernel always writes a
row-major D. We describe each row by what its PTX does: the kernel's M, N, K, its A/B/C
layouts, and buffers A, B, (C,) D stored as row-major arrays of the storage shape.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dataset_spec.model import Buffer, Distribution, Problem
from dataset_spec.ops import get_op
from dataset_spec.ops.unsigned_sums import (is_signed_saturating, is_unsigned_saturating, mid_range_alpha,
                                             sparsify, spread_alpha)
from builders.cutlass import blockwise, mixed_input, sparse
from builders.cutlass.kernel_traits import storage_shape
from builders.cutlass import complex as complex_kind
from builders.cutlass.catalog import DTYPE_NAMES, KernelSpec

DEFAULT_PROBLEM = (512, 768, 520)  # M, N, K: 520 exercises a partial K tile
LAYOUT_WORDS = {"n": "col", "t": "row"}
TRANSPOSED = {"col": "row", "row": "col"}


@dataclass
class KernelGemm:
    """Element types and layouts of the GEMM as the kernel sees it."""
    element_a: str
    element_b: str
    element_c: str
    element_d: str
    element_accumulator: str
    layout_a: str
    layout_b: str
    layout_c: str
    alignment_a: int
    alignment_b: int
    alignment_c: int
    swapped: bool  # True when the library problem was transposed into this kernel


def kernel_gemm(spec: KernelSpec) -> KernelGemm:
    k = spec.knobs
    la, lb, lc = (LAYOUT_WORDS[k["layout_a"]], LAYOUT_WORDS[k["layout_b"]], LAYOUT_WORDS[k["layout_c"]])
    if spec.generation == 2 and not sparse.is_sparse(spec):  # EmitGemmUniversalInstance: "transposed B/A operand"
        return KernelGemm(k["element_b"], k["element_a"], k["element_c"], k["element_d"],
                          k["element_accumulator"], TRANSPOSED[lb], TRANSPOSED[la], TRANSPOSED[lc],
                          k["alignment_b"], k["alignment_a"], k["alignment_c"], True)
    return KernelGemm(k["element_a"], k["element_b"], k["element_c"], k["element_d"],
                      k["element_accumulator"], la, lb, lc,
                      k["alignment_a"], k["alignment_b"], k["alignment_c"], False)




# Math operations that round float32 operands to a narrower type (or split them, 3xTF32)
# before the tensor cores: a different precision, so a group of its own.
ROUNDING_MATH = {"multiply_add_fast_bf16": "bf16math", "multiply_add_fast_f16": "f16math",
                 "multiply_add_fast_f32": "3xtf32math"}


def family_id(spec: KernelSpec, alpha: float, beta: float) -> str:
    """The group id without its size: the function, before a shape set states it at sizes."""
    if _blockwise(spec):
        return _blockwise(spec).family_id(spec, alpha, beta)
    g = kernel_gemm(spec)
    types = "_".join([g.element_a, g.element_b, g.element_accumulator, g.element_d])
    if beta != 0:  # C is read: its type is part of the function (beta = 0: C is never read)
        types = "_".join([g.element_a, g.element_b, g.element_accumulator, f"c{g.element_c}", g.element_d])
    math = ROUNDING_MATH.get(spec.knobs.get("math_operation", ""))
    if math:
        types += f"_{math}"
    if spec.generation == 2 and g.element_a == "f32" and spec.knobs.get("math_element_a") == "tf32":
        types += "_tf32math"  # float32 storage read as tf32 (s1688tf32gemm)
    layouts = "".join(x[0] for x in (g.layout_a, g.layout_b, g.layout_c))  # r/c, kernel terms
    if mixed_input.is_scaled(spec):  # another function: A dequantised by scales (zero points)
        return f"cutlass/mixed_input_gemm/{types}{mixed_input.mode_tag(spec)}/{layouts}/a{alpha:g}b{beta:g}"
    if complex_kind.is_complex(spec):
        return complex_kind.family_id(spec, g, alpha, beta)
    if sparse.is_sparse(spec):
        return f"cutlass/sparse_gemm/{types}/{layouts}/{sparse.meta_tag(spec)}/a{alpha:g}b{beta:g}"
    return f"cutlass/gemm/{types}/{layouts}/a{alpha:g}b{beta:g}"


def group_id(spec: KernelSpec, m: int, n: int, k: int, alpha: float, beta: float) -> str:
    return f"{family_id(spec, alpha, beta)}/M{m}N{n}K{k}"


def contiguous_extents(spec: KernelSpec) -> dict:
    """Operand -> (the problem dimension its rows are contiguous along, its alignment)."""
    g = kernel_gemm(spec)
    return {
        "A": ("K" if g.layout_a == "row" else "M", g.alignment_a),
        "B": ("N" if g.layout_b == "row" else "K", g.alignment_b),
        "C": ("N" if g.layout_c == "row" else "M", g.alignment_c),
    }


def alignment_misfit(spec: KernelSpec, m: int, n: int, k: int) -> str:
    """Why the kernel cannot run (M, N, K), or '' when it can: every operand's contiguous
    extent must be a multiple of its alignment (vector loads, TMA's 16-byte strides)."""
    if sparse.is_sparse(spec):
        return sparse.misfit(spec, m, n, k)
    dims = {"M": m, "N": n, "K": k}
    for name, (dim, align) in contiguous_extents(spec).items():
        if dims[dim] % align:
            return (f"{spec.name}: {name}'s contiguous extent {dim}={dims[dim]} is not a multiple "
                    f"of its alignment {align}")
    return mixed_input.group_misfit(spec, m, k) or (_blockwise(spec).misfit(spec, m, n, k) if _blockwise(spec) else "")


def check_alignment(spec: KernelSpec, m: int, n: int, k: int) -> None:
    """Raise ValueError when a leading dimension is not a multiple of an alignment."""
    reason = alignment_misfit(spec, m, n, k)
    if reason:
        raise ValueError(reason)


def fit_to_family(specs: list, m: int, n: int, k: int) -> tuple:
    """(M, N, K) rounded up so every kernel of ``specs`` (one group's members) can run it:
    each dimension becomes a multiple of the alignments of the operands contiguous along it.
    Dimensions no operand is contiguous along keep their size (odd M stays odd)."""
    multiple = {"M": 1, "N": 1, "K": 1}
    for spec in specs:
        for dim, align in contiguous_extents(spec).values():
            multiple[dim] = math.lcm(multiple[dim], int(align))
        if mixed_input.is_scaled(spec):  # K holds whole scale groups; M whole 16-byte scale rows
            multiple["K"] = math.lcm(multiple["K"], mixed_input.GROUP_SIZE)
            multiple["M"] = math.lcm(multiple["M"], mixed_input.SCALE_ALIGNMENT)
        if sparse.is_sparse(spec):
            for dim, align in sparse.size_multiples(spec).items():
                multiple[dim] = math.lcm(multiple[dim], int(align))
    dims = {"M": m, "N": n, "K": k}
    return tuple(-(-dims[d] // multiple[d]) * multiple[d] for d in ("M", "N", "K"))


MATH_INPUT_NAMES = {"tf32": "tf32", "f16": "float16", "bf16": "bfloat16"}
FP8 = ("e4m3", "e5m2")
# Integer operands' inits: small values, so every product sum is exact in an int32
# accumulator and in the float32 epilogue (|sum| <= K * 64 < 2^24 up to K = 2^18). The
# trials draw a dense GEMM's integer operands over the op's ``integer_range`` instead; an
# unsigned saturating dense GEMM's operands get sparse inits (``unsigned_saturating``).
INTEGER_INPUTS = {"s8": Distribution("randint", {"low": -8, "high": 8}),
                  "u8": Distribution("randint", {"low": 0, "high": 8})}
UNSIGNED_BYTE_OUTPUT_INPUTS = Distribution("randint", {"low": 0, "high": 2})


def integer_inputs(element: str, element_d: str):
    """The init of an integer operand (None for float operands)."""
    if element == "u8" and element_d == "u8":
        return UNSIGNED_BYTE_OUTPUT_INPUTS
    return INTEGER_INPUTS.get(element)


def _plain_types(spec: KernelSpec):
    """(A, B, D) project dtypes of a dense, 3.x or 2:4 sparse GEMM; None for a complex,
    scaled or blockwise one (it builds its own problem) or an element the project lacks."""
    if mixed_input.is_scaled(spec) or complex_kind.is_complex(spec) or _blockwise(spec):
        return None
    g = kernel_gemm(spec)
    elements = (g.element_a, g.element_b, g.element_d)
    return tuple(DTYPE_NAMES[e] for e in elements) if all(e in DTYPE_NAMES for e in elements) else None


def unsigned_saturating(spec: KernelSpec) -> bool:
    """A saturating unsigned output of unsigned operands (u4 x u4 -> u4, u8 x u8 -> u8):
    every product is >= 0, so its problem draws sparse operands (unsigned_sums.py); a 2:4
    sparse kernel's kept values of A are drawn sparse in turn."""
    types = _plain_types(spec)
    return types is not None and is_unsigned_saturating(*types)


def signed_saturating(spec: KernelSpec) -> bool:
    """A saturating int8/int4 output of integer products through a float epilogue (s8 x s8
    -> s8, s4 x s4 -> s4, s8 x s4 -> s8): full-range operands would saturate almost every
    output, so its rows get a power-of-two alpha (unsigned_sums.spread_alpha). An integer
    epilogue takes integer alphas only."""
    types = _plain_types(spec)
    return (types is not None and spec.knobs.get("element_epilogue") not in ("s32", "u32")
            and is_signed_saturating(*types))


def epilogue_alpha(spec: KernelSpec, m: int, n: int, k: int, alpha: float, alpha_given: bool) -> float:
    """The alpha a row uses: the user's, or 1; but an ``unsigned_saturating`` GEMM's sparse
    operands still sum to about SPARSE_TERMS products of mean E[a] E[b], past the output's
    top, and a ``signed_saturating`` one's full-range sums spread far past it. Without
    --alpha those rows get unsigned_sums.mid_range_alpha or spread_alpha (powers of two,
    exact in the float32 epilogue)."""
    if alpha_given:
        return alpha
    if unsigned_saturating(spec):
        return mid_range_alpha(make_problem(spec, m, n, k, 1.0, 0.0), ("A", "B"), "D", products_per_output(spec, k))
    if signed_saturating(spec):
        problem = make_problem(spec, m, n, k, 1.0, 0.0)
        op = get_op(problem.op)
        ranges = [op.integer_range(problem, problem.buffer(name)) for name in ("A", "B")]
        return spread_alpha(ranges, products_per_output(spec, k), problem.buffer("D").dtype)
    return alpha


def products_per_output(spec: KernelSpec, k: int) -> int:
    """The products an output sums: K, or the K/2 that a 2:4 sparse A keeps."""
    return k // 2 if sparse.is_sparse(spec) else k


def epilogue_misfit(spec: KernelSpec, alpha: float, beta: float) -> str:
    """Why the kernel's epilogue cannot compute alpha * A @ B + beta * C, or '' when it can:
    3.x 'void C' kernels read no C (beta must be 0), and int32 epilogues (s8 -> s32) hold
    alpha and beta as integers."""
    if beta != 0 and spec.knobs.get("element_c") == "void":
        return f"{spec.name}: its epilogue has no C operand (element C is void), so beta must be 0, got {beta:g}"
    if spec.knobs.get("element_epilogue") in ("s32", "u32") and not (float(alpha).is_integer()
                                                                      and float(beta).is_integer()):
        return (f"{spec.name}: its epilogue computes in {spec.knobs['element_epilogue']}, so alpha and beta "
                f"must be integers, got {alpha:g} and {beta:g}")
    return ""


def accumulator_name(spec: KernelSpec) -> str:
    """The accumulation precision the verifier's bound uses (FP8 tensor cores add in fewer
    bits than float32: numerics.ACCUMULATORS). A 3.x ConvertOnly kernel converts its one FP8
    operand to the other's 16-bit type before the MMA, so it adds like a bf16/f16 GEMM."""
    g = kernel_gemm(spec)
    if g.element_a in FP8 and g.element_b in FP8:
        return "fp8_tensor_core"
    return DTYPE_NAMES[g.element_accumulator]


def math_input(spec: KernelSpec) -> str:
    """The precision the kernel's tensor cores read operands in when it is narrower than
    their storage (tf32 for float32 GEMMs), else ''; the verifier's error bound counts it."""
    math, storage = spec.knobs.get("math_element_a"), spec.knobs.get("element_a")
    if storage in INTEGER_INPUTS or storage in FP8:
        return ""  # exact in every math type it is converted to
    if math and math != storage:
        return MATH_INPUT_NAMES.get(math, math)
    return "tf32" if storage == "tf32" else ""


def _blockwise(spec: KernelSpec):
    """builders.cutlass.blockwise for a blockwise-scaled kernel (its own problem), else None."""
    return blockwise if blockwise.is_blockwise(spec) else None


def make_problem(spec: KernelSpec, m: int, n: int, k: int, alpha: float = 1.0, beta: float = 0.0) -> Problem:
    if _blockwise(spec):
        return _blockwise(spec).make_problem(spec, group_id(spec, m, n, k, alpha, beta), m, n, k, alpha, beta)
    g = kernel_gemm(spec)
    if mixed_input.is_scaled(spec):
        return mixed_input.make_mixed_problem(spec, g, m, n, k, alpha, beta, group_id(spec, m, n, k, alpha, beta),
                                              accumulator_name(spec), storage_shape)
    if complex_kind.is_complex(spec):
        return complex_kind.make_complex_problem(spec, g, m, n, k, alpha, beta, group_id(spec, m, n, k, alpha, beta))
    buffers = [
        Buffer("A", DTYPE_NAMES[g.element_a], storage_shape(g.layout_a, m, k), "in",
               init=integer_inputs(g.element_a, g.element_d)),
        Buffer("B", DTYPE_NAMES[g.element_b], storage_shape(g.layout_b, k, n), "in",
               init=integer_inputs(g.element_b, g.element_d)),
    ]
    if beta != 0 and g.element_c != "void":
        buffers.append(Buffer("C", DTYPE_NAMES[g.element_c], storage_shape(g.layout_c, m, n), "in",
                              init=integer_inputs(g.element_c, g.element_d)))
    buffers.append(Buffer("D", DTYPE_NAMES[g.element_d], storage_shape(g.layout_c, m, n), "out"))
    params = {
        "M": m, "N": n, "K": k, "layout_a": g.layout_a, "layout_b": g.layout_b,
        "layout_c": g.layout_c, "alpha": alpha, "beta": beta,
        "accumulator": accumulator_name(spec),
        "math_input": math_input(spec),
    }
    if spec.knobs.get("math_operation") == "multiply_add_fast_f32":
        params["finite_operands"] = True  # 3xTF32 splits x into big + tf32(x - big): inf becomes NaN
    if sparse.is_sparse(spec):
        problem = sparse.make_sparse_problem(spec, g, m, n, k, alpha, beta, group_id(spec, m, n, k, alpha, beta),
                                             DTYPE_NAMES, params, integer_inputs)
    else:
        problem = Problem(problem_id=group_id(spec, m, n, k, alpha, beta), op="gemm", buffers=buffers, params=params)
    if unsigned_saturating(spec):
        sparsify(problem, ("A", "B"), products_per_output(spec, k))
    return problem


def scratch_init() -> Distribution:
    return Distribution("zeros")
