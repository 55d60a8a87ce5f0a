"""Facts about a CUTLASS kernel that both the GEMM and the grouped GEMM rows need: the PTX
target of its SM, whether its mainloop loads through TMA, and its entry's parameters."""
from __future__ import annotations

from ptx_tools import parse_ptx


def arch_of(spec) -> str:
    return "sm_90a" if spec.sm == 90 else f"sm_{spec.sm}"


def uses_tma(spec) -> bool:
    """3.x kernels load through TMA unless their mainloop is the cp.async one."""
    return spec.generation == 3 and "cpasync" not in spec.name.lower()


def entry_params(ptx: str, entry: str) -> list:
    """The entry's ``.param`` declarations (``.size``, ``.align``) as ptx_tools parses them."""
    return parse_ptx(ptx).function(entry).params


def storage_shape(layout: str, rows: int, cols: int) -> tuple:
    """A rows x cols operand's array shape: as is when row-major, transposed when column-major."""
    return (rows, cols) if layout == "row" else (cols, rows)
