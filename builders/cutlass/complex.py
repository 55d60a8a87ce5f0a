"""CUTLASS complex GEMMs as ``complex_gemm`` problems (dataset_spec/ops/complex_gemm.py):
interleaved ones (2.x ``GemmUniversal`` with complex<float> or complex<double> elements: cf32
SIMT and tf32 / 3xTF32 tensor-op, cf64 DMMA, and their Gaussian 3-multiplication forms) and
planar ones (2.x ``PlanarComplex``: f16 / bf16 parts, each operand a real and an imaginary
plane, ``params.complex.planar``).

Interleaved kernels take the plain universal GEMM's Arguments (``pack_2x``), so only the
problem differs: every buffer is a real array of the part type with a last axis of 2 (the
bytes of ``cutlass::complex<T>``). Planar kernels take a pointer and a leading dimension per
plane (``pack_planar_complex_2x``, host/planar_complex.h): every buffer holds the real plane
then the imaginary plane (a first axis of 2), so the imaginary pointer is the buffer's
address plus one plane, a pointer patch with an addend. Each operand's ComplexTransform
(conjugate or none) is part of the function. The 2.x emitters swap A and B into the kernel,
their transforms with them.
"""
from __future__ import annotations

from builders.cutlass.kernel_traits import storage_shape
from dataset_spec.model import Buffer, Problem

COMPLEX_MATH = ("multiply_add_complex", "multiply_add_complex_gaussian", "multiply_add_complex_fast_f32")
PART_DTYPES = {"cf32": "float32", "cf64": "float64", "f16": "float16", "bf16": "bfloat16", "f32": "float32"}
PLANAR_KIND = "PlanarComplex"


def is_planar(spec) -> bool:
    """A planar complex kernel: its element types name the parts, its operands are planes
    (GemmPlanarComplex Arguments: a pointer and leading dimension per plane, host/planar_complex.h)."""
    return spec.knobs.get("gemm_kind") == PLANAR_KIND


def is_complex(spec) -> bool:
    return spec.knobs.get("math_operation") in COMPLEX_MATH or is_planar(spec)


def kernel_transforms(spec) -> tuple:
    """(transform of the kernel's A, of its B): the library's swapped for 2.x kernels."""
    ta, tb = spec.knobs.get("transform_a", "none"), spec.knobs.get("transform_b", "none")
    return (tb, ta) if spec.generation == 2 else (ta, tb)


def math_tag(spec) -> str:
    """What beyond the types changes the bound: Gaussian form, tf32 operands."""
    tags = []
    if spec.knobs["math_operation"] == "multiply_add_complex_gaussian":
        tags.append("gauss")
    if spec.knobs.get("math_element_a") == "tf32":
        tags.append("tf32math")
    elif spec.knobs["math_operation"] == "multiply_add_complex_fast_f32":
        tags.append("3xtf32math")
    return "_".join(tags)


def family_id(spec, g, alpha: float, beta: float) -> str:
    types = "_".join([g.element_a, g.element_b, g.element_accumulator, g.element_d])
    if beta != 0:
        types = "_".join([g.element_a, g.element_b, g.element_accumulator, f"c{g.element_c}", g.element_d])
    tag = math_tag(spec)
    if tag:
        types += f"_{tag}"
    layouts = "".join(x[0] for x in (g.layout_a, g.layout_b, g.layout_c))
    ta, tb = kernel_transforms(spec)
    conj = "".join("c" if t == "conj" else "n" for t in (ta, tb))
    storage = "/planar" if is_planar(spec) else ""
    return f"cutlass/complex_gemm/{types}/{layouts}/{conj}{storage}/a{alpha:g}b{beta:g}"


def complex_storage(spec, layout: str, rows: int, cols: int) -> tuple:
    """An operand's buffer shape: its storage shape with the parts interleaved (last axis) or
    as two planes (first axis)."""
    shape = storage_shape(layout, rows, cols)
    return (2,) + shape if is_planar(spec) else shape + (2,)


def make_complex_problem(spec, g, m: int, n: int, k: int, alpha: float, beta: float, problem_id: str) -> Problem:
    part = PART_DTYPES[g.element_a]
    buffers = [Buffer("A", part, complex_storage(spec, g.layout_a, m, k), "in"),
               Buffer("B", PART_DTYPES[g.element_b], complex_storage(spec, g.layout_b, k, n), "in")]
    if beta != 0:
        buffers.append(Buffer("C", PART_DTYPES[g.element_c], complex_storage(spec, g.layout_c, m, n), "in"))
    buffers.append(Buffer("D", PART_DTYPES[g.element_d], complex_storage(spec, g.layout_c, m, n), "out"))
    ta, tb = kernel_transforms(spec)
    params = {
        "M": m, "N": n, "K": k, "layout_a": g.layout_a, "layout_b": g.layout_b, "layout_c": g.layout_c,
        "alpha": alpha, "beta": beta, "accumulator": PART_DTYPES[g.element_accumulator],
        "math_input": "tf32" if spec.knobs.get("math_element_a") == "tf32" else "",
        "complex": {"transform_a": ta, "transform_b": tb,
                    "gaussian": spec.knobs["math_operation"] == "multiply_add_complex_gaussian",
                    **({"planar": True} if is_planar(spec) else {})},
    }
    return Problem(problem_id=problem_id, op="complex_gemm", buffers=buffers, params=params)
