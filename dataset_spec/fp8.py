"""8-bit float storage formats (OCP FP8: E4M3 and E5M2) as bit tables, without a numpy type.

Every one of the 256 codes is decoded once; encoding rounds to nearest (ties to an even
code). E4M3 has no infinities: magnitudes past its largest finite value round to NaN, as a
non-saturating conversion does; E5M2 overflows to infinity like IEEE formats.
"""
from __future__ import annotations

import functools

import numpy as np

# dtype name -> (exponent bits, mantissa bits, whether the format has infinities)
FP8_LAYOUTS = {"float8_e4m3": (4, 3, False), "float8_e5m2": (5, 2, True)}
NAN_CODE = 0x7F  # a NaN in both formats


def is_fp8(dtype: str) -> bool:
    return dtype in FP8_LAYOUTS


def _decode(code: int, exp_bits: int, man_bits: int, has_inf: bool) -> float:
    sign = -1.0 if code & 0x80 else 1.0
    exponent = (code >> man_bits) & ((1 << exp_bits) - 1)
    mantissa = code & ((1 << man_bits) - 1)
    bias = (1 << (exp_bits - 1)) - 1
    top = (1 << exp_bits) - 1
    if has_inf and exponent == top:
        return sign * float("inf") if mantissa == 0 else float("nan")
    if not has_inf and exponent == top and mantissa == (1 << man_bits) - 1:
        return float("nan")
    if exponent == 0:
        return sign * mantissa * 2.0 ** (1 - bias - man_bits)
    return sign * (1 + mantissa / (1 << man_bits)) * 2.0 ** (exponent - bias)


@functools.lru_cache(maxsize=None)
def decode_table(dtype: str) -> np.ndarray:
    """float64 value of every code 0..255."""
    return np.array([_decode(c, *FP8_LAYOUTS[dtype]) for c in range(256)], dtype=np.float64)


@functools.lru_cache(maxsize=None)
def _positive_codes(dtype: str) -> tuple:
    """(magnitudes, codes) of the finite non-negative values, ascending."""
    table = decode_table(dtype)[:128]
    codes = np.flatnonzero(np.isfinite(table))
    return table[codes], codes.astype(np.uint8)


def max_finite(dtype: str) -> float:
    return float(_positive_codes(dtype)[0][-1])


def unit_roundoff(dtype: str) -> float:
    """Half an ulp of 1: 2^-(mantissa bits + 1)."""
    return 2.0 ** -(FP8_LAYOUTS[dtype][1] + 1)


def smallest_normal(dtype: str) -> float:
    exp_bits = FP8_LAYOUTS[dtype][0]
    return 2.0 ** (2 - (1 << (exp_bits - 1)))  # 2^(1 - bias)


def smallest_subnormal(dtype: str) -> float:
    return smallest_normal(dtype) * 2.0 ** -FP8_LAYOUTS[dtype][1]


def fp8_bits(values, dtype: str) -> np.ndarray:
    """float64 values -> uint8 codes of ``dtype``, round to nearest, ties to an even code."""
    values = np.asarray(values, dtype=np.float64)
    mags, codes = _positive_codes(dtype)
    magnitude = np.abs(values)
    hi = np.clip(np.searchsorted(mags, magnitude, side="left"), 0, len(mags) - 1)
    lo = np.clip(hi - 1, 0, len(mags) - 1)
    below, above = magnitude - mags[lo], mags[hi] - magnitude
    pick_hi = (above < below) | ((above == below) & (codes[hi] % 2 == 0))
    pick_hi |= magnitude <= mags[0]
    out = np.where(pick_hi, codes[hi], codes[lo]).astype(np.uint8)
    top_ulp = mags[-1] - mags[-2]
    overflow = magnitude >= mags[-1] + top_ulp / 2  # past the last tie: no finite neighbour
    has_inf = FP8_LAYOUTS[dtype][2]
    out = np.where(overflow, np.uint8(0x7C if has_inf else NAN_CODE), out)
    out = np.where(np.signbit(values), out | np.uint8(0x80), out)
    return np.where(np.isnan(values), np.uint8(NAN_CODE), out).astype(np.uint8)


def fp8_to_float(bits, dtype: str) -> np.ndarray:
    return decode_table(dtype)[np.asarray(bits).view(np.uint8).astype(np.intp)]
