"""CUTLASS 3.x mixed-input GEMMs with scales (ScaleOnly) and zero points
(ScaleWithZeroPoint): their ``mixed_input_gemm`` problem, the group size along K, and what
the packer needs beyond A, B, C, D (the S and Z slots, ``group_size``).

The generator's kernels take the narrow operand as A (M x K, K-major: ``tnn``) and scales
and zero points of the wide type (``cute::tuple<narrow, wide[, wide]>``). Their mainloop
accepts a group size equal to K or a multiple of the tile's K (64 or 128); the problem
uses 128 (the common weight-only quantisation group, GPTQ/AWQ) for every kernel of a
family, so K must be a multiple of 128 (built-in sizes are rounded up to it).
"""
from __future__ import annotations

from dataset_spec.model import Buffer, Distribution, Problem
from builders.cutlass.catalog import DTYPE_NAMES, KernelSpec

GROUP_SIZE = 128
# mixed_input_mode -> (mixed_input_gemm mode, further buffer slots, group-id tag)
SCALED_MODES = {"ScaleOnly": ("scale", ("S",), "scl"),
                "ScaleWithZeroPoint": ("scale_zero", ("S", "Z"), "sclzr")}
# Largest |A| of each narrow type the scales are sized by (as mixed_input_gemm's domain).
NARROW_MAGNITUDE = {"s4": 8, "u4": 15, "s2": 2, "u2": 3, "s8": 128, "u8": 255, "e4m3": 16, "e5m2": 16}


def is_scaled(spec: KernelSpec) -> bool:
    return spec.knobs.get("mixed_input_mode") in SCALED_MODES


def extra_slots(spec: KernelSpec) -> tuple:
    return SCALED_MODES[spec.knobs["mixed_input_mode"]][1] if is_scaled(spec) else ()


def pack_params(spec: KernelSpec):
    return {"group_size": GROUP_SIZE} if is_scaled(spec) else None


def mode_tag(spec: KernelSpec) -> str:
    """The family id's mark of the dequantisation ('' for kernels without scales)."""
    return f"_{SCALED_MODES[spec.knobs['mixed_input_mode']][2]}_g{GROUP_SIZE}" if is_scaled(spec) else ""


# S and Z are read by TMA along M: rows of 16 bytes, 8 elements of the 16-bit wide type
SCALE_ALIGNMENT = 8


def group_misfit(spec: KernelSpec, m: int, k: int) -> str:
    """Why a scaled kernel cannot run (M, K) ('' when it can)."""
    if not is_scaled(spec):
        return ""
    if k % GROUP_SIZE:
        return f"{spec.name}: K={k} is not a multiple of the scale group size {GROUP_SIZE}"
    if m % SCALE_ALIGNMENT:
        return (f"{spec.name}: the scales' contiguous extent M={m} is not a multiple of {SCALE_ALIGNMENT} "
                "(16-byte TMA rows)")
    return ""


def make_mixed_problem(spec: KernelSpec, gemm, m: int, n: int, k: int, alpha: float, beta: float,
                       problem_id: str, accumulator: str, storage_shape) -> Problem:
    """The ``mixed_input_gemm`` problem of a scaled kernel (``gemm``: problem.KernelGemm)."""
    if gemm.layout_a != "row":
        raise ValueError(f"{spec.name}: the scaled operand must be A, K-major (row-major); got layout {gemm.layout_a}")
    narrow, wide = gemm.element_a, gemm.element_b
    mode, slots, _ = SCALED_MODES[spec.knobs["mixed_input_mode"]]
    groups = k // GROUP_SIZE
    scale_std = 1.0 / NARROW_MAGNITUDE.get(narrow, 1)  # |A S| about 1, as a quantised weight
    buffers = [Buffer("A", DTYPE_NAMES[narrow], (m, k), "in"),
               Buffer("S", DTYPE_NAMES[wide], (groups, m), "in",
                      init=Distribution("normal", {"mean": 0.0, "std": scale_std}))]
    if "Z" in slots:
        buffers.append(Buffer("Z", DTYPE_NAMES[wide], (groups, m), "in",
                              init=Distribution("normal", {"mean": 0.0, "std": 0.5})))
    buffers.append(Buffer("B", DTYPE_NAMES[wide], storage_shape(gemm.layout_b, k, n), "in"))
    if beta != 0 and gemm.element_c != "void":
        buffers.append(Buffer("C", DTYPE_NAMES[gemm.element_c], storage_shape(gemm.layout_c, m, n), "in"))
    buffers.append(Buffer("D", DTYPE_NAMES[gemm.element_d], storage_shape(gemm.layout_c, m, n), "out"))
    params = {"M": m, "N": n, "K": k, "layout_a": gemm.layout_a, "layout_b": gemm.layout_b,
              "layout_c": gemm.layout_c, "alpha": alpha, "beta": beta, "group_size": GROUP_SIZE,
              "mode": mode, "accumulator": accumulator}
    return Problem(problem_id=problem_id, op="mixed_input_gemm", buffers=buffers, params=params)
