"""Coverage items as the ops declare them (dataset_spec/coverage.py measures them): plain
data, and the constructors the op families share. A leaf of the registry: it imports no
op module, so every family may declare items and coverage.py may ask the registry."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..model import DTYPES, Problem, dtype_kind
from ..numerics import FORMATS
from ..packed import element_range, is_packed

VALUE_KINDS = ("binade", "subnormal", "zero", "neg_zero", "top_binade", "nan", "inf", "neg_inf", "int")
ROW_KINDS = ("zero_row", "zero_slice", "negative_spread_row", "max_first_far", "max_last_far", "inf_row",
             "neg_inf_row", "nonfinite_all")


def integer_dtype_range(dtype: str) -> tuple:
    """[low, high) of an integer dtype (packed sub-byte ones included)."""
    if is_packed(dtype):
        return element_range(dtype)
    bits = 8 * DTYPES[dtype][0]
    return (-(2 ** (bits - 1)), 2 ** (bits - 1)) if dtype_kind(dtype) == "i" else (0, 2 ** bits)


@dataclass(frozen=True)
class CoverageItem:
    """One thing a problem's trials must draw: ``what`` (a value kind of VALUE_KINDS or a
    row kind of ROW_KINDS) in buffer ``buffer`` (an input, or an output's reference);
    ``arg``: the binade's exponent, the integer value, or the axis rows run along."""
    buffer: str
    what: str
    arg: Optional[float] = None

    @property
    def key(self) -> str:
        if self.arg is None:
            return f"{self.buffer}:{self.what}"
        arg = int(self.arg) if float(self.arg).is_integer() else self.arg
        return f"{self.buffer}:{self.what}:{arg}"

    @property
    def family(self) -> str:
        """The key without a binade's exponent (the card groups binades)."""
        return f"{self.buffer}:{self.what}" if self.what == "binade" else self.key


def _exponent(value: float) -> int:
    """floor(log2(value)) for value > 0, exactly (frexp: no rounding of log2)."""
    return int(math.frexp(value)[1]) - 1


def top_binade_floor(dtype: str) -> float:
    """The smallest value of ``dtype``'s top binade: 2^floor(log2(max finite))."""
    return 2.0 ** _exponent(FORMATS[dtype].max_finite)


# A buffer holds every binade of its domain once it has BINADE_ROOM elements per binade
# (the wide trial's stratified draw); every edge special once it has EDGE_ROOM elements
# (a quarter of them are specials, about 30 kinds). Smaller buffers (a bias, a row of
# weights, per-block scales) declare only the binades at both ends of the domain (the edge
# trial's lo and top), and the specials only where they have room.
BINADE_ROOM = 2
EDGE_ROOM = 128
SMALL_ROOM = 16  # a quarter of 16: the edge draw places +-top and +-lo


def float_input_items(problem: Problem, name: str, domain: tuple, specials=()) -> list:
    """A float input's items: binades [lo, hi] of its domain (normal ones; below the
    dtype's smallest normal the item is ``subnormal``), +0, -0, the top binade where the
    domain reaches it, and ``specials`` (nan, inf, neg_inf); for small buffers as
    BINADE_ROOM and EDGE_ROOM say."""
    buf = problem.buffer(name)
    dtype = buf.dtype
    fmt = FORMATS[dtype]
    lo, hi = domain
    room = int(np.prod(tuple(buf.shape), dtype=np.int64))
    low, high = max(_exponent(lo), _exponent(fmt.tiny)), _exponent(hi)
    if room >= BINADE_ROOM * (high - low + 1):
        exponents = range(low, high + 1)
    else:  # the domain's ends: the edge draw places its top and bottom first
        exponents = sorted({low, high}) if room >= SMALL_ROOM else []
    items = [CoverageItem(name, "binade", e) for e in exponents]
    if room >= EDGE_ROOM:
        if lo <= fmt.tiny:  # the edge trial draws subnormals where the domain reaches the smallest normal
            items.append(CoverageItem(name, "subnormal"))
        items += [CoverageItem(name, "zero"), CoverageItem(name, "neg_zero")]
    if hi >= top_binade_floor(dtype):
        items.append(CoverageItem(name, "top_binade"))
    items += [CoverageItem(name, s) for s in specials]
    return items


def integer_values(low: int, high: int) -> list:
    """The integers an integer buffer over [low, high) must take: 0 and +-1 where inside,
    both ends and the values next to them."""
    values = {low, high - 1, min(low + 1, high - 1), max(high - 2, low)}
    values |= {v for v in (-1, 0, 1) if low <= v < high}
    return sorted(values)


def integer_input_items(name: str, integer_range: tuple) -> list:
    low, high = (int(v) for v in integer_range)
    return [CoverageItem(name, "int", v) for v in integer_values(low, high)]


def small_integer_items(problem: Problem, name: str, saturating: bool = False) -> list:
    """An integer output's small results (-1, 0, 1 where its dtype holds them) and, for an
    output narrower than its accumulator (``saturating``), both saturated ends."""
    low, high = integer_dtype_range(problem.buffer(name).dtype)
    values = [v for v in (-1, 0, 1) if low <= v < high]
    if saturating:
        values += [low, high - 1]
    return [CoverageItem(name, "int", v) for v in sorted(set(values))]


def output_items(problem: Problem, name: str, subnormal: bool = True, top_fp8: bool = True,
                 small_integers: bool = True, saturating: bool = False) -> list:
    """An output's items, as an op declares them: subnormal results where a flush to zero
    is caught (float16 and FP8 outputs: their smallest normal is far above the floor of
    the bound, float32 flush-to-zero of intermediates), the top binade of an FP8 e4m3
    output, and an integer output's small (and saturated) results."""
    dtype = problem.buffer(name).dtype
    items = []
    if dtype in FORMATS:
        if subnormal and (dtype == "float16" or dtype.startswith("float8")):
            items.append(CoverageItem(name, "subnormal"))
        if top_fp8 and dtype == "float8_e4m3":
            items.append(CoverageItem(name, "top_binade"))
    elif small_integers and dtype_kind(dtype) in ("i", "u"):
        items += small_integer_items(problem, name, saturating)
    return items


