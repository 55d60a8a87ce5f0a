"""complex_gemm: D = alpha * op(A) @ op(B) + beta * C over complex numbers, op() the
kernel's ComplexTransform (none or conjugate) per operand, alpha and beta real.

Complex buffers are stored interleaved, as ``cutlass::complex<T>`` is: a real buffer of
dtype T (float32 or float64) whose last axis (size 2) holds the real and imaginary part,
so input drawing, poisoning, the unwritten-output check and the comparison work on each
part (an element counts as written only if both parts are). With
``params.complex.planar`` they are planar instead (CUTLASS's ``GemmPlanarComplex``): the
first axis (size 2) holds a whole real plane, then a whole imaginary plane, each in the
operand's layout; T may then be float16 or bfloat16 too. The function is the same. The reference runs in
complex128. The bound is per part: the real part of a product sum is sum(ar br - ai bi),
2K real products, S_re = |ar| @ |br| + |ai| @ |bi|; the imaginary part
S_im = |ar| @ |bi| + |ai| @ |br|; n = 2K. The Gaussian (3-multiplication) form is
CUTLASS's (gemm/warp/mma_gaussian_complex_tensor_op.h): three real products accumulate
P1 = (ar + ai) br, P2 = -ar (br - bi) and P3 = ai (br + bi), and the parts are
re = P1 - P3 and im = P1 + P2. Both parts cancel between products of pre-added operands,
whose roundings count once more (hence 2x): S_re = 2 ((|ar| + |ai|) @ |br| + |ai| @
(|br| + |bi|)), S_im = 2 ((|ar| + |ai|) @ |br| + |ar| @ (|br| + |bi|))
(``params.complex.gaussian``). The standard form's S_re alone misses the real part's
cancellation: an H100 run caught a Gaussian kernel outside it on a wide trial.
"""
from __future__ import annotations

import numpy as np

from ..model import Problem
from .gemm import _logical, gemm_epilogue_roundings
from .spec import OpSpec, _inputs_of, _out_name


def is_planar(problem: Problem) -> bool:
    return bool((problem.params.get("complex") or {}).get("planar"))


def complex_shape(problem: Problem, name: str) -> tuple:
    shape = tuple(problem.buffer(name).shape)
    return shape[1:] if is_planar(problem) else shape[:-1]


def to_complex(values, problem, name) -> np.ndarray:
    if is_planar(problem):
        planes = np.asarray(values).reshape((2,) + complex_shape(problem, name))
        return planes[0] + 1j * planes[1]
    parts = np.asarray(values).reshape(complex_shape(problem, name) + (2,))
    return parts[..., 0] + 1j * parts[..., 1]


def to_parts(values: np.ndarray, problem: Problem = None) -> np.ndarray:
    """Real and imaginary parts in the problem's storage: interleaved (last axis) or planar."""
    return stack_parts(values.real, values.imag, problem)


def stack_parts(real: np.ndarray, imag: np.ndarray, problem: Problem = None) -> np.ndarray:
    return np.stack([real, imag], axis=0 if problem is not None and is_planar(problem) else -1)


def _operand(inputs, problem, name, layout_key, transform_key):
    p = problem.params
    value = _logical(to_complex(inputs[name], problem, name), p.get(layout_key, "row"))
    return np.conj(value) if (p.get("complex") or {}).get(transform_key) == "conj" else value


def ref_complex_gemm(inputs, problem):
    p = problem.params
    _inputs_of(problem, inputs, "A", "B")
    a = _operand(inputs, problem, "A", "layout_a", "transform_a")
    b = _operand(inputs, problem, "B", "layout_b", "transform_b")
    d = float(p.get("alpha", 1.0)) * (a @ b)
    beta = float(p.get("beta", 0.0))
    out = _out_name(problem)
    layout_c = p.get("layout_c", "row")
    if beta != 0.0:
        c_name = "C" if "C" in inputs else out
        d = d + beta * _logical(to_complex(inputs[c_name], problem, c_name), layout_c)
    return {out: to_parts(_logical(d, layout_c), problem)}


def scale_complex_gemm(inputs, problem):
    """Per part: the magnitudes of the real products that make it (see module docstring)."""
    p = problem.params
    a = _operand(inputs, problem, "A", "layout_a", "transform_a")
    b = _operand(inputs, problem, "B", "layout_b", "transform_b")
    ar, ai, br, bi = np.abs(a.real), np.abs(a.imag), np.abs(b.real), np.abs(b.imag)
    if (p.get("complex") or {}).get("gaussian"):
        first = (ar + ai) @ br  # P1, in both parts
        real = 2 * (first + ai @ (br + bi))
        imag = 2 * (first + ar @ (br + bi))
    else:
        real = ar @ br + ai @ bi
        imag = ar @ bi + ai @ br
    alpha, beta = abs(float(p.get("alpha", 1.0))), abs(float(p.get("beta", 0.0)))
    scale_re, scale_im = alpha * real, alpha * imag
    out = _out_name(problem)
    if beta != 0.0:
        c_name = "C" if "C" in inputs else out
        c = _logical(to_complex(inputs[c_name], problem, c_name), p.get("layout_c", "row"))
        scale_re, scale_im = scale_re + beta * np.abs(c.real), scale_im + beta * np.abs(c.imag)
    layout_c = p.get("layout_c", "row")
    return {out: stack_parts(_logical(scale_re, layout_c), _logical(scale_im, layout_c), problem)}


def pointwise_complex_gemm(inputs, problem, reference):
    count = gemm_epilogue_roundings(problem)
    if count == 0:
        return {}
    return {k: count * v for k, v in scale_complex_gemm(inputs, problem).items()}


def complex_reduction_length(problem: Problem) -> int:
    """Real products in one part: 2K."""
    return 2 * int(problem.params["K"])


def range_complex(problem, buffer):
    """Parts whose 2K-term product sums stay far inside float32 (or float64)."""
    from .spec import _fmt
    out = _fmt(problem.buffer(_out_name(problem)).dtype)
    if buffer.name == "C":
        return _fmt(buffer.dtype).tiny, out.max_finite / (4 * max(1.0, abs(float(problem.params.get("beta", 1.0)))))
    n = complex_reduction_length(problem) * (3 if (problem.params.get("complex") or {}).get("gaussian") else 1)
    return np.sqrt(_fmt(buffer.dtype).tiny), float(np.sqrt(out.max_finite / (8 * n)))


OPS = [
    OpSpec("complex_gemm", ref_complex_gemm, complex_reduction_length,
           "D = alpha op(A)@op(B) + beta C over complex numbers stored interleaved (last axis: re, im) or "
           "planar (first axis: the real plane, the imaginary plane)",
           scale_complex_gemm, range_complex,
           "per part: |alpha| (|ar|@|br| + |ai|@|bi|) (re), |alpha| (|ar|@|bi| + |ai|@|br|) (im; Gaussian: "
           "2 (|ar|+|ai|)@(|br|+|bi|) + |ar|@|br| + |ai|@|bi|) + |beta| |C part|, n = 2K",
           pointwise_scale=pointwise_complex_gemm,
           pointwise_text="e S_i, e the epilogue's roundings of one term (as gemm)"),
]
