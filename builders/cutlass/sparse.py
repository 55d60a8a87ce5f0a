"""CUTLASS 2:4 sparse GEMMs: SM80 ``device::SparseGemm`` (generator kind ``Sparse``) and
SM90 3.x ``SparseUniversal3x``. How their kernels are declared, instantiated and packed,
the sizes they accept, and the ``sparse_gemm`` problem of a row
(dataset_spec/ops/sparse_gemm.py).

The kernel reads A as M x K/2 kept values in A's own layout plus a metadata operand E,
which reaches the packer as the extra buffer slot ``E``: on SM80 in ``cutlass::reorder_meta``'s
order (ColumnMajorInterleaved<2>), on SM90 as bytes placed by the kernel's
``SparseConfig::fill_layoutE``, whose atom depends on min(tile K, 128)
(dataset_spec/sparse_meta.py). E's layout is part of the function, so it is part of the
group id. The generator does not transpose sparse problems (``EmitSparseGemmInstance`` and
the 3.x emitter keep A, B and C as named), so the library layouts are the kernel's.
"""
from __future__ import annotations

import math

from builders.cutlass.kernel_traits import storage_shape
from dataset_spec.model import Buffer, Problem
from dataset_spec.sparse_meta import Sm80SparseFormat, Sm90SparseFormat

KIND = "Sparse"
KIND_3X = "SparseUniversal3x"
EXTRA_SLOTS = ("E",)
ELEMENT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "tf32": 32, "s8": 8, "u8": 8, "e4m3": 8, "e5m2": 8}
MAX_ATOM_K = 128  # the 3.x builder's MinTileShapeK is min(tile K, 128)
DEVICE_HEADER = "cutlass/gemm/device/gemm_sparse.h"


def is_sparse(spec) -> bool:
    return spec.knobs.get("gemm_kind") in (KIND, KIND_3X)


def extra_slots(spec) -> tuple:
    return EXTRA_SLOTS if is_sparse(spec) else ()


def sparse_format(spec):
    bits = ELEMENT_BITS[spec.knobs["element_a"]]
    if spec.generation == 3:
        return Sm90SparseFormat(bits, min(spec.knobs["threadblock_tile"][2], MAX_ATOM_K))
    return Sm80SparseFormat(bits)


def format_params(spec) -> dict:
    """``params["sparse"]`` of the row's problem: how E is laid out."""
    fmt = sparse_format(spec)
    if isinstance(fmt, Sm90SparseFormat):
        return {"format": "sm90", "element_bits": fmt.element_bits, "min_tile_k": fmt.min_tile_k}
    return {"format": "sm80", "element_bits": fmt.element_bits}


def meta_tag(spec) -> str:
    """E's layout as the group id spells it."""
    fmt = sparse_format(spec)
    return f"e_sm90k{fmt.min_tile_k}" if isinstance(fmt, Sm90SparseFormat) else "e_sm80"


class SparseEmitter:
    """The generator's ``EmitSparseGemmInstance`` declaration (a ``device::SparseGemm``),
    plus ``struct <name>``: its kernel, which the PTX entry and the packer are named by."""

    def emit(self, operation) -> str:
        from cutlass_library.gemm_operation import EmitSparseGemmInstance
        name = operation.procedural_name()
        return (f'#include "{DEVICE_HEADER}"\n' + EmitSparseGemmInstance().emit(operation)
                + f"struct {name} : Operation_{name}::GemmKernel {{}};\n")


def entry_instantiation(spec) -> str:
    """device::SparseGemm launches ``cutlass::Kernel<GemmKernel>``."""
    return f"template __global__ void cutlass::Kernel<{spec.name}>({spec.name}::Params);\n"


def size_multiples(spec) -> dict:
    """What M, N and K must be multiples of. SM80 (SparseGemm::can_implement): K of the
    tile's K (out-of-range metadata would be zero-filled, and 0 is no valid code), M of
    reorder_meta's row group. SM90: whole E atoms (M of 64, K of min(tile K, 128)), so no
    padding enters A's or E's layout. Both: every operand's contiguous extent of its
    alignment (A's is K/2 when row-major)."""
    k = spec.knobs
    fmt = sparse_format(spec)
    if isinstance(fmt, Sm90SparseFormat):
        m_base, k_base = 64, fmt.min_tile_k
    else:
        meta_alignment = 128 // fmt.meta_bits
        m_base = math.lcm(fmt.row_group, meta_alignment)
        k_base = math.lcm(k["threadblock_tile"][2], 2 * meta_alignment, 4 * fmt.elements_per_meta)
    m_mult = math.lcm(m_base, k["alignment_c"] if k["layout_c"] == "n" else 1,
                      k["alignment_a"] if k["layout_a"] == "n" else 1)
    n_mult = math.lcm(k["alignment_b"] if k["layout_b"] == "t" else 1, k["alignment_c"] if k["layout_c"] == "t" else 1)
    k_mult = math.lcm(k_base, 2 * k["alignment_a"] if k["layout_a"] == "t" else 1,
                      k["alignment_b"] if k["layout_b"] == "n" else 1)
    return {"M": m_mult, "N": n_mult, "K": k_mult}


def misfit(spec, m: int, n: int, k: int) -> str:
    dims = {"M": m, "N": n, "K": k}
    for dim, multiple in size_multiples(spec).items():
        if dims[dim] % multiple:
            return (f"{spec.name}: a 2:4 sparse kernel needs {dim} a multiple of {multiple} (its "
                    f"metadata layout's blocks and its alignments), got {dim}={dims[dim]}")
    return ""


def _metadata_extent(spec, m: int, k: int) -> tuple:
    """(M, K) E is laid out for: the size itself, or for a size the kernel cannot run (a
    not_applicable row, whose problem must still be well formed) the next one it can."""
    multiples = size_multiples(spec)
    return -(-m // multiples["M"]) * multiples["M"], -(-k // multiples["K"]) * multiples["K"]


def make_sparse_problem(spec, g, m: int, n: int, k: int, alpha: float, beta: float, problem_id: str,
                        dtype_names: dict, params: dict, integer_init) -> Problem:
    """The row's ``sparse_gemm`` problem: kept values A (M x K/2), B, (C,) D and E."""
    fmt = sparse_format(spec)
    buffers = [
        Buffer("A", dtype_names[g.element_a], storage_shape(g.layout_a, m, k // 2), "in",
               init=integer_init(g.element_a, g.element_d)),
        Buffer("B", dtype_names[g.element_b], storage_shape(g.layout_b, k, n), "in",
               init=integer_init(g.element_b, g.element_d)),
        Buffer("E", fmt.meta_dtype, fmt.storage_shape(*_metadata_extent(spec, m, k)), "in"),
    ]
    if beta != 0 and g.element_c != "void":
        buffers.append(Buffer("C", dtype_names[g.element_c], storage_shape(g.layout_c, m, n), "in",
                              init=integer_init(g.element_c, g.element_d)))
    buffers.append(Buffer("D", dtype_names[g.element_d], storage_shape(g.layout_c, m, n), "out"))
    params = dict(params, sparse=format_params(spec))
    return Problem(problem_id=problem_id, op="sparse_gemm", buffers=buffers, params=params)


def emitter_3x():
    """The generator's own 3.x emitter (SparseUniversal3x instances are GemmUniversal3x ones)."""
    from cutlass_library.gemm_operation import EmitGemmUniversal3xInstance
    return EmitGemmUniversal3xInstance()
