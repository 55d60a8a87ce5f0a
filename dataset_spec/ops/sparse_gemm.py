"""sparse_gemm: D = alpha * A @ B + beta * C where A is 2:4 structured-sparse along K and
stored as the kernel reads it: the kept values (buffer ``A``, M x K/2 in ``layout_a``) and
the metadata operand (buffer ``E``: CUTLASS's reordered words on SM80, the config's
``fill_layoutE`` bytes on SM90; dataset_spec/sparse_meta.py).

The reference expands A from ``A`` and ``E`` (what ``cutlass::uncompress`` does) and runs
the dense float64 GEMM over the kept products only (a dropped zero never meets an
infinity of B). Each output element is a sum of K/2 products (the kept ones), so
the bound is the GEMM bound with n = K/2 and S = |alpha| |A_dense| @ |B| + |beta| |C|.
``E`` is not drawn from a distribution: every trial gives it new valid codes (``derive``).
"""
from __future__ import annotations

import numpy as np

from ..model import Problem, SpecError
from ..sparse_meta import Sm80SparseFormat, Sm90SparseFormat
from .gemm import _logical, gemm_epilogue_roundings, operand_magnitudes, range_gemm, saturate_to_output, stress_gemm
from .spec import OpSpec, _inputs_of, _out_name, range_int_products

FORMATS = {"sm80": Sm80SparseFormat, "sm90": Sm90SparseFormat}


def sparse_format(problem: Problem):
    spec = problem.params.get("sparse") or {}
    make = FORMATS.get(spec.get("format"))
    if make is None:
        raise SpecError(f"problem {problem.problem_id}: params.sparse.format must be one of {sorted(FORMATS)}, "
                        f"got {spec.get('format')!r}")
    return make(int(spec["element_bits"]), **({"min_tile_k": int(spec["min_tile_k"])} if "min_tile_k" in spec else {}))


def dense_a(inputs, problem) -> np.ndarray:
    """The logical M x K operand A, expanded from its kept values and metadata."""
    return expanded_a(inputs, problem)[0]


def expanded_a(inputs, problem) -> tuple:
    """(dense A, mask of its kept positions): M x K each."""
    p = problem.params
    m, k = int(p["M"]), int(p["K"])
    kept, stored = _inputs_of(problem, inputs, "A", "E")
    kept = _logical(np.asarray(kept).reshape(problem.buffer("A").shape), p.get("layout_a", "row"))
    fmt = sparse_format(problem)
    codes = fmt.decode(np.asarray(stored).astype(np.uint64), m, k)
    return fmt.expand(kept, codes), fmt.expand(np.ones(kept.shape), codes) != 0


def kept_products(a: np.ndarray, kept: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A @ B summing only the kept products: the hardware never multiplies a dropped zero,
    so a non-finite B[k, n] reaches D[m, n] only where A keeps (m, k) (0 * inf would make
    the dense product NaN). Rows of B with non-finite values are few (stress trials)."""
    finite = np.isfinite(b)
    with np.errstate(invalid="ignore", over="ignore"):
        d = a @ np.where(finite, b, 0.0)
        for k, n in zip(*np.nonzero(~finite)):
            d[:, n] += np.where(kept[:, k], a[:, k] * b[k, n], 0.0)
    return d


def sparse_exact(inputs, problem):
    p = problem.params
    a, kept = expanded_a(inputs, problem)
    b = _logical(np.asarray(inputs["B"]).reshape(problem.buffer("B").shape), p.get("layout_b", "row"))
    d = float(p.get("alpha", 1.0)) * kept_products(a, kept, b)
    beta = float(p.get("beta", 0.0))
    out = _out_name(problem)
    layout_c = p.get("layout_c", "row")
    if beta != 0.0:
        c_name = "C" if "C" in inputs else out
        d = d + beta * _logical(np.asarray(inputs[c_name]).reshape(problem.buffer(c_name).shape), layout_c)
    return {out: _logical(d, layout_c)}


def ref_sparse_gemm(inputs, problem):
    out = _out_name(problem)
    return {out: saturate_to_output(sparse_exact(inputs, problem)[out], problem.buffer(out).dtype)}


def scale_sparse_gemm(inputs, problem):
    p = problem.params
    weighed = operand_magnitudes(problem, inputs)
    magnitudes = {k: (v if k == "E" else weighed[k]) for k, v in inputs.items()}
    absolute = Problem(problem.problem_id, problem.op, problem.buffers,
                       {**p, "alpha": abs(float(p.get("alpha", 1.0))), "beta": abs(float(p.get("beta", 0.0)))})
    return sparse_exact(magnitudes, absolute)


def pointwise_sparse_gemm(inputs, problem, reference):
    count = gemm_epilogue_roundings(problem)
    if count == 0:
        return {}
    return {k: count * v for k, v in scale_sparse_gemm(inputs, problem).items()}


def kept_length(problem: Problem) -> int:
    """Products per output element: the K/2 kept values of A's row."""
    return int(problem.params["K"]) // 2


def derive_meta(problem: Problem, buffer, rng: np.random.Generator, previous=None) -> np.ndarray:
    """E's contents for one trial: a valid code for every group, chosen at random."""
    if buffer.name != "E":
        raise SpecError(f"problem {problem.problem_id}: sparse_gemm derives only E, not {buffer.name}")
    p = problem.params
    fmt = sparse_format(problem)
    stored = fmt.encode(fmt.random_nibbles(rng, int(p["M"]), int(p["K"])))
    return stored.astype(np.float64).reshape(buffer.shape)


def range_sparse(problem, buffer):
    return range_gemm(problem, buffer)


_int_range = range_int_products(kept_length, "A", "B")


def integer_range_sparse(problem, buffer):
    return None if buffer.name == "E" else _int_range(problem, buffer)


OPS = [
    OpSpec("sparse_gemm", ref_sparse_gemm, kept_length,
           "D = alpha A@B + beta C, A 2:4 sparse along K given as kept values A and metadata E",
           scale_sparse_gemm, range_sparse, "|alpha| |A_dense| @ |B| + |beta| |C|, n = K/2",
           integer_range_sparse, pointwise_sparse_gemm, stress_gemm,
           "e S_i, e the epilogue's float32 roundings of one term (alpha, beta, their products, the add)",
           derived_inputs=("E",), derive=derive_meta, sizes="gemm", exact_flops=True),
]
