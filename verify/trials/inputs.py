"""Input drawing, storage-dtype conversion and output poisoning for the verifier.

Inputs are drawn in float64 from each Buffer's Distribution with a recorded seed, then
rounded to the buffer's storage dtype; the reference is computed from the *rounded* values
(``from_storage``), so storage rounding never counts as kernel error.

Which trials run, and how each buffer of each is drawn (its kind, float domain or integer
range), is ``dataset_spec.trials.trial_plan``'s answer; this module draws the values it
names (``make_trial_inputs``) and reports the ranges it drew from (``TrialInputs.ranges``).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Optional

import numpy as np

from dataset_spec.fp8 import NAN_CODE, fp8_bits, fp8_to_float, is_fp8
from dataset_spec.model import DTYPES, Buffer, Distribution, Problem
from dataset_spec.device_tables import table_storage
from dataset_spec.ops.spec import nonnegative_inputs
from dataset_spec.packed import PACKED_DTYPES, element_bytes, element_range, is_packed, pack, packed_nbytes, unpack
from dataset_spec.trials import (DERIVED, DRAW, FLOAT_DISTRIBUTIONS, INTEGERS, TABLE, derived_values, is_float,
                                 stress_values, trial_spec)

# numpy dtype holding each storage dtype's bits (bfloat16 has no numpy type: uint16 bits).
STORAGE_NUMPY = {
    "float16": np.dtype("<f2"), "bfloat16": np.dtype("<u2"), "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"), "int8": np.dtype("i1"), "uint8": np.dtype("u1"),
    "int16": np.dtype("<i2"), "uint16": np.dtype("<u2"), "int32": np.dtype("<i4"), "uint32": np.dtype("<u4"),
    "int64": np.dtype("<i8"), "uint64": np.dtype("<u8"),
    "float8_e4m3": np.dtype("u1"), "float8_e5m2": np.dtype("u1"),
    # packed sub-byte integers: the host holds their bytes, flat (storage_shape)
    **{name: np.dtype("u1") for name in PACKED_DTYPES},
}
BITS_NUMPY = {1: np.dtype("u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64", "float8_e4m3", "float8_e5m2")
FLOAT_KINDS = FLOAT_DISTRIBUTIONS
MAGNITUDE = {"small": 1e-2, "large": 1e2}
EDGE_FRACTION = 0.25  # share of elements an edge trial replaces with special values


# Poisons and guard fills are drawn per trial from its seed, so a failure reproduces. Run 1
# poisons floats with a quiet NaN of random payload, run 2 with a large finite value (a
# kernel that reads its output gets NaN once and a number once); integers get two random
# words. f64 and 8-byte ints repeat a 32-bit word (a 32-bit memset poisons them).
POISON_SALT = 0x9015
GUARD_SALT = 0x6A4D
FP8_POISONS = {"float8_e4m3": ((0x7F,), (0x7E, 0x7D)),   # NaN; 448, 416
               "float8_e5m2": ((0x7D, 0x7E, 0x7F), (0x7B, 0x7A))}


def storage_shape(dtype: str, shape) -> tuple:
    """Shape of the host array holding a buffer's storage: its own shape, or for a packed
    sub-byte dtype its bytes, flat (a byte may hold the end of one row and the next)."""
    if is_packed(dtype):
        return (packed_nbytes(dtype, int(np.prod(tuple(shape), dtype=np.int64))),)
    return tuple(shape)


def _numel(shape) -> int:
    if shape is None:
        raise ValueError("a packed sub-byte buffer needs its shape to be unpacked (how many elements it holds)")
    return int(np.prod(tuple(shape), dtype=np.int64))


def poison_words(dtype: str, seed: int) -> tuple:
    """((width, word) of poison 1, (width, word) of poison 2): memset patterns for an
    output of ``dtype`` in the trial of ``seed``. Poison 1 is a quiet NaN with a random
    payload (random bits for integers), poison 2 a large finite value (other random bits)."""
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, POISON_SALT])

    def bits(n: int) -> int:
        return int(rng.integers(0, 1 << n))
    sign = bits(1)
    if dtype in FP8_POISONS:
        nans, larges = FP8_POISONS[dtype]
        return ((1, nans[bits(8) % len(nans)] | sign << 7), (1, larges[bits(8) % len(larges)] | bits(1) << 7))
    if dtype == "float16":
        return (2, sign << 15 | 0x7E00 | bits(9)), (2, bits(1) << 15 | 0x7800 | bits(10))
    if dtype == "bfloat16":
        return (2, sign << 15 | 0x7FC0 | bits(6)), (2, bits(1) << 15 | 0x7F00 | bits(7))
    if dtype == "float32":
        return (4, sign << 31 | 0x7FC00000 | bits(22)), (4, bits(1) << 31 | 0x7F000000 | bits(23))
    if dtype == "float64":  # the 32-bit word repeats: high half sets sign and exponent
        return (4, sign << 31 | 0x7FF80000 | bits(19)), (4, bits(1) << 31 | 0x7FE00000 | bits(20))
    # Packed sub-byte outputs: any byte is some pair of int4s, so no single value marks
    # "unwritten"; two different random bytes do (an element is unwritten when its byte holds
    # poison 1 after run 1 and poison 2 after run 2, which no written byte can).
    width = 1 if is_packed(dtype) else min(DTYPES[dtype][0], 4)
    first = bits(8 * width)
    second = (first + 1 + bits(8 * width - 1)) % (1 << 8 * width)  # never equal to the first
    return (width, first), (width, second)


def poison_element(dtype: str, word: tuple) -> np.ndarray:
    """One element's bits (unsigned numpy scalar array of shape (1,)) filled with ``word``."""
    width, value = word
    size = 1 if is_packed(dtype) else DTYPES[dtype][0]
    words = np.full(size // width, value, dtype=BITS_NUMPY[width])
    return words.view(BITS_NUMPY[size])


def poison_array(dtype: str, shape, word: tuple) -> np.ndarray:
    """A host array of poison bits (``word`` from ``poison_words``) in the storage dtype
    (``shape`` is the buffer's; a packed one's bytes are ``storage_shape``)."""
    one = poison_element(dtype, word)
    return np.full(storage_shape(dtype, shape), one[0], dtype=one.dtype).view(STORAGE_NUMPY[dtype])


def unwritten_mask(first: np.ndarray, second: Optional[np.ndarray], dtype: str, words: tuple) -> np.ndarray:
    """Elements that hold poison 1 after run 1 and poison 2 after run 2: never written.
    Compared as bits (NaN != NaN). A value a kernel wrote is the same in both runs, so it
    cannot match both poisons, whatever it is (-1 and 255 included). ``second`` None means
    run 2 was bitwise equal to run 1: nothing can be unwritten. Torch tensors (outputs kept
    on the GPU, device_outputs.py) are compared on their device. A packed sub-byte output
    is judged per byte: the mask is over its storage bytes (``unwritten_count`` counts the
    elements in them)."""
    if hasattr(first, "detach"):
        from ..device.device_outputs import unwritten_mask as on_device
        return on_device(first, second, tuple(poison_element(dtype, w) for w in words))
    first = np.ascontiguousarray(first)
    if second is None:
        return np.zeros(first.shape, dtype=bool)
    size = 1 if is_packed(dtype) else DTYPES[dtype][0]
    one, two = (poison_element(dtype, w)[0] for w in words)
    return ((first.view(BITS_NUMPY[size]) == one)
            & (np.ascontiguousarray(second).view(BITS_NUMPY[size]) == two))


def unwritten_count(first: np.ndarray, second: Optional[np.ndarray], dtype: str, words: tuple,
                    shape=None) -> int:
    """Elements never written; a packed output (``shape``: the buffer's) counts every
    element that lives in an unwritten byte."""
    mask = unwritten_mask(first, second, dtype, words)
    if is_packed(dtype):
        return int(np.count_nonzero(mask.reshape(-1)[element_bytes(dtype, _numel(shape))]))
    return int(mask.sum()) if hasattr(mask, "detach") else int(np.count_nonzero(mask))


GUARD_FILL_BYTES = 1 << 16


def guard_fill(seed: int, run: int, nbytes: int = GUARD_FILL_BYTES, finite: bool = False) -> np.ndarray:
    """Random guard bytes for one run of a trial (uint8): 32-bit words, a quarter each of
    random bits, zeros, f32 NaNs with random payloads and huge finite values (their 16-bit
    halves are f16/bf16 specials of their own). Different for every ``run``.

    ``finite``: instead, 16-bit words in [0x3C00, 0x4C00), ordinary finite values as f16,
    bf16 and (in pairs) f32. The verifier's second fill is finite so that a kernel whose
    output turns NaN from reading the first fill gives a different output with the second:
    two NaN-producing fills would give the same canonical NaN and hide the read."""
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, GUARD_SALT, int(run)])
    if finite:
        halves = rng.integers(0x3C00, 0x4C00, (nbytes + 1) // 2, dtype=np.uint64).astype("<u2")
        return halves.view(np.uint8)[:nbytes].copy()
    n = (nbytes + 3) // 4
    words = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    kind = rng.integers(0, 4, n)
    payload = rng.integers(0, 1 << 22, n, dtype=np.uint64).astype(np.uint32)
    sign = (rng.integers(0, 2, n, dtype=np.uint64).astype(np.uint32) << np.uint32(31))
    words = np.where(kind == 1, np.uint32(0), words)
    words = np.where(kind == 2, sign | np.uint32(0x7FC00000) | payload, words)
    words = np.where(kind == 3, sign | np.uint32(0x7F000000) | (payload << np.uint32(1)), words)
    return words.astype(np.uint32).view(np.uint8)[:nbytes].copy()


def bf16_bits(values) -> np.ndarray:
    """float -> bfloat16 bits (uint16), round to nearest even from float32; NaN stays NaN.
    In 32-bit words: only a NaN's bits can carry past 2^32, and every NaN becomes 0x7FC0
    (15x faster than in 64-bit words on a 15M-element buffer; the same bits for every float32)."""
    with np.errstate(over="ignore"):
        f32 = np.ascontiguousarray(np.asarray(values, dtype=np.float64).astype(np.float32))
    bits = f32.view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    rounded[np.isnan(f32)] = 0x7FC0
    return rounded.astype("<u2", copy=False)


def bf16_to_float(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint32) << 16).astype(np.uint32).view(np.float32).astype(np.float64)


def float_to_bits(values, dtype: str) -> np.ndarray:
    """float64 values -> storage array of ``dtype`` (ints round half to even and saturate)."""
    values = np.asarray(values, dtype=np.float64)
    if dtype == "bfloat16":
        return bf16_bits(values)
    if is_fp8(dtype):
        return fp8_bits(values, dtype)
    if is_packed(dtype):  # round half to even and saturate, then pack (flat bytes)
        low, high = element_range(dtype)
        return pack(np.clip(np.rint(values), low, high - 1), dtype)
    target = STORAGE_NUMPY[dtype]
    if is_float(dtype):
        with np.errstate(over="ignore"):
            return values.astype(target)
    info = np.iinfo(target)
    return np.clip(np.rint(values), info.min, info.max).astype(target)


to_storage = float_to_bits


def from_storage(array: np.ndarray, dtype: str, shape=None) -> np.ndarray:
    """Storage array -> float64 values (a packed sub-byte dtype needs the buffer's ``shape``:
    its storage is flat bytes)."""
    if is_packed(dtype):
        return unpack(array, dtype, _numel(shape)).astype(np.float64).reshape(tuple(shape))
    if dtype == "bfloat16":
        return bf16_to_float(array)
    if is_fp8(dtype):
        return fp8_to_float(array, dtype)
    return np.asarray(array).astype(np.float64)


def exact_values(array: np.ndarray, dtype: str, shape=None) -> np.ndarray:
    """Storage array -> an array whose values are exact: the storage itself where numpy
    holds the dtype (float16/32/64, integers), float64 otherwise (bfloat16, fp8). The
    checks widen it chunk by chunk, so no full-size float64 copy is made. A torch tensor
    (device_outputs.py) already holds exact values in its torch dtype. A packed sub-byte
    array is unpacked to int8/uint8 of the buffer's ``shape``."""
    if hasattr(array, "detach"):
        return array
    if is_packed(dtype):
        return unpack(array, dtype, _numel(shape)).reshape(tuple(shape))
    if dtype == "bfloat16" or is_fp8(dtype):
        return from_storage(array, dtype)
    return np.asarray(array)


def trial_seed(group_id: str, problem_digest: str, trial: int, salt: str = "") -> int:
    """A stable 63-bit seed for one trial of one group (the same on every machine). A
    ``salt`` (``ptxds verify`` draws one per run and records it with the rows) makes the
    seeds, and so the inputs a member is checked and timed on, unknown before the run: a
    kernel cannot carry the outputs of inputs it could otherwise compute in advance."""
    text = f"{group_id}\0{problem_digest}\0{trial}".encode() + (f"\0{salt}".encode() if salt else b"")
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1


def _moments(dist: Distribution) -> tuple:
    p = dist.params
    if dist.kind == "uniform":
        low, high = float(p.get("low", -1.0)), float(p.get("high", 1.0))
        return (low + high) / 2, (high - low) / np.sqrt(12)
    return float(p.get("mean", 0.0)), float(p.get("std", 1.0))


def draw_wide(shape, rng: np.random.Generator, domain: tuple) -> np.ndarray:
    """Random sign, magnitude log-uniform over [lo, hi], stratified so that every binade
    of the domain is drawn once the buffer has twice as many elements
    (dataset_spec.stress.log_uniform)."""
    from dataset_spec.stress import log_uniform
    lo, hi = domain
    return log_uniform(rng, lo, hi, tuple(shape))


def edge_values(dtype: str, domain: tuple) -> np.ndarray:
    """Special values of ``dtype`` inside ``domain`` (lo, hi): +-0, the largest
    representable magnitude <= hi and the one below it,
    +-lo, subnormals when the domain reaches down to them, 1 and its neighbours, and half
    an ulp of 1 (+-1/4 of it), which puts a sum just either side of a rounding tie."""
    from dataset_spec.numerics import FORMATS
    fmt = FORMATS[dtype]
    lo, hi = domain
    u = fmt.unit_roundoff
    top_bits = float_to_bits([hi], dtype).view(BITS_NUMPY[DTYPES[dtype][0]])
    if from_storage(top_bits.view(STORAGE_NUMPY[dtype]), dtype)[0] > hi:
        top_bits = top_bits - 1  # rounded up past hi: the representable value below it
    below_top_bits = top_bits - 1  # positive floats: one less in the bits is one ulp down
    top, below_top = (float(from_storage(b.view(STORAGE_NUMPY[dtype]), dtype)[0]) for b in (top_bits, below_top_bits))
    candidates = [top, below_top, lo, 1.0, 1.0 + 2 * u, 1.0 - u, u * 1.25, u * 0.75, 2.0 ** -3 * (1 + 2 * u)]
    values = [v for v in candidates if lo <= v <= hi]
    if lo <= fmt.tiny:  # smallest subnormal, one in the middle, and the largest
        values += [fmt.subnormal_min, fmt.tiny / 2, fmt.tiny - fmt.subnormal_min]
    values = from_storage(float_to_bits(values, dtype), dtype)
    values = np.unique(values[(values >= lo * (1 - 2 * u)) | (values < fmt.tiny)])
    # +-0 and the domain's ends first: a small buffer that holds only a few specials (the edge draw
    # places the first ones, edge_every_special) then still reaches its top and bottom binades
    normal = values[values >= fmt.tiny]
    ends = [float(values.max())] + ([float(normal.min())] if normal.size and normal.min() != values.max() else [])
    rest = [v for v in values.tolist() if v not in ends]
    return np.array([0.0, -0.0] + ends + [-v for v in ends] + rest + [-v for v in rest])


def draw_edge(dist: Distribution, shape, rng: np.random.Generator, dtype: str, domain: tuple) -> np.ndarray:
    """Normal data (the buffer's mean and spread, clipped to the domain) with EDGE_FRACTION
    of the elements replaced by ``edge_values`` at random positions, every special value
    at least once where the buffer has room (``edge_every_special``)."""
    mean, std = _moments(dist)
    base = np.clip(rng.normal(mean, std, shape), -domain[1], domain[1])
    specials = edge_values(dtype, domain)
    replace = rng.random(shape) < EDGE_FRACTION
    picks = specials[rng.integers(0, specials.size, shape)]
    picks, replace = edge_every_special(picks, replace, specials, rng.permutation(int(np.prod(shape, dtype=np.int64))))
    return np.where(replace, picks, base)


def edge_every_special(picks, replace, specials, order):
    """``picks`` and ``replace`` with special j also placed at element ``order[j]`` (a
    random permutation): every special value is drawn once the buffer has
    1 / EDGE_FRACTION times as many elements as there are specials, where independent
    picks of that size miss a few (the coverage record counts them). numpy or torch."""
    n = min(int(specials.shape[0]), max(0, int(order.shape[0] * EDGE_FRACTION)))
    if n == 0:
        return picks, replace
    shape = picks.shape
    picks, replace = picks.reshape(-1).clone() if hasattr(picks, "clone") else picks.reshape(-1).copy(), \
        replace.reshape(-1).clone() if hasattr(replace, "clone") else replace.reshape(-1).copy()
    picks[order[:n]] = specials[:n]
    replace[order[:n]] = True
    return picks.reshape(shape), replace.reshape(shape)


def draw(dist: Distribution, shape, rng: np.random.Generator, kind: str = "", dtype: str = "float32",
         domain: Optional[tuple] = None) -> np.ndarray:
    """Draw float64 values of ``shape``. ``kind`` (a trial kind) swaps a float distribution
    for another with the same mean and spread, scales it (small/large magnitude), or draws
    wide or edge values over ``domain`` (lo, hi, which those two kinds need) for storage
    ``dtype``."""
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    p = dist.params
    base = dist.kind
    if kind == "wide" and base in FLOAT_KINDS:
        return draw_wide(shape, rng, domain)
    if kind == "edge" and base in FLOAT_KINDS:
        return draw_edge(dist, shape, rng, dtype, domain)
    if kind and base in FLOAT_KINDS:
        mean, std = _moments(dist)
        if kind in ("normal", "uniform") and kind != base:
            base = kind
            p = {"mean": mean, "std": std} if kind == "normal" else {
                "low": mean - std * np.sqrt(3), "high": mean + std * np.sqrt(3)}
    if base == "normal":
        out = rng.normal(float(p.get("mean", 0.0)), float(p.get("std", 1.0)), shape)
    elif base == "uniform":
        out = rng.uniform(float(p.get("low", -1.0)), float(p.get("high", 1.0)), shape)
    elif base == "randint":
        out = rng.integers(int(p.get("low", 0)), int(p.get("high", 2)), shape).astype(np.float64)
    elif base == "zeros":
        out = np.zeros(shape)
    elif base == "ones":
        out = np.ones(shape)
    elif base == "arange":
        start, step = float(p.get("start", 0.0)), float(p.get("step", 1.0))
        out = (start + step * np.arange(n, dtype=np.float64)).reshape(shape)
    elif base == "constant":
        out = np.full(shape, float(p.get("value", 0.0)))
    else:
        raise ValueError(f"unknown distribution kind {base!r}")
    if kind in MAGNITUDE and dist.kind in FLOAT_KINDS:
        out = out * MAGNITUDE[kind]
    return out


def integer_extremes(low: int, high: int) -> np.ndarray:
    """The edge values of [low, high): both ends, the values next to them, 0, -1 and 1
    where inside."""
    values = {low, high - 1, min(low + 1, high - 1), max(high - 2, low)} | {v for v in (0, -1, 1) if low <= v < high}
    return np.array(sorted(values), dtype=np.int64)


def draw_integers(shape, rng: np.random.Generator, low: int, high: int, kind: str = "",
                  axis: Optional[int] = None) -> np.ndarray:
    """Integers in [low, high) following the trial kind: ``wide``, random sign and
    magnitude log-uniform up to the range's ends; ``edge``, runs of one value (run lengths
    geometric, mean EDGE_RUN, along the last axis), half of them extremes (both ends, 0,
    -1, 1); ``stress``, rows (along ``axis``, the reduction axis) at the top, at the
    bottom, alternating, one-hot, small values, then extremes half the time
    (dataset_spec/stress.py); any other kind (normal, uniform), uniform."""
    shape = tuple(shape)
    if kind == "stress":
        from dataset_spec.stress import integer_stress
        return integer_stress(shape, rng, low, high, -1 if axis is None else axis)
    if kind == "wide":
        if low >= 0:  # offsets from low, log-uniform from 0 up to the top
            offset = np.floor(np.exp(rng.uniform(0.0, np.log(high - low + 1.0), shape))) - 1
            return np.clip(low + offset, low, high - 1)
        top = max(abs(low), abs(high - 1), 1)
        magnitude = np.floor(np.exp(rng.uniform(0.0, np.log(top + 2.0), shape))) - 1
        return np.clip(np.where(rng.random(shape) < 0.5, -magnitude - 1, magnitude), low, high - 1)
    if kind != "edge":
        return rng.integers(low, high, shape).astype(np.float64)
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    length = shape[-1] if shape else 1
    starts = rng.random((rows, length)) < 1.0 / EDGE_RUN
    starts[:, 0] = True
    run_ids = np.cumsum(starts, axis=1) - 1
    extremes = integer_extremes(low, high)
    values = np.where(rng.random((rows, length)) < 0.5, extremes[rng.integers(0, extremes.size, (rows, length))],
                      rng.integers(low, high, (rows, length)))
    return np.take_along_axis(values, run_ids, axis=1).astype(np.float64).reshape(shape)


EDGE_RUN = 16


# The host generator: numpy's default_rng (PCG64) seeded with [trial seed, buffer index]
HOST_GENERATOR = "numpy-pcg64/1"


@dataclass
class TrialInputs:
    """One trial's inputs: storage arrays (what the GPU gets) and their float64 values.
    Made on the device (verify/trials/device_prepare.py) they are torch tensors there."""
    trial: int
    seed: int
    kind: str
    storage: dict  # name -> storage ndarray (or tensor)
    values: dict   # name -> float64 ndarray (or tensor) of the rounded values
    ranges: dict = None  # name -> [lo, hi] drawn over: integers inclusive, floats magnitudes
    generator: str = HOST_GENERATOR  # which generator drew the values (recorded per row)

    def host_storage(self) -> dict:
        """The storage arrays on the host (tensors downloaded; bfloat16 as its uint16 bits)."""
        return {name: _host_array(array) for name, array in self.storage.items()}


def _host_array(array) -> np.ndarray:
    if not hasattr(array, "detach"):
        return array
    import torch
    if array.dtype == torch.bfloat16:
        return array.detach().contiguous().view(torch.int16).cpu().numpy().view("<u2")
    return array.detach().cpu().numpy()


def make_trial_inputs(problem: Problem, group_id: str, trial: int, salt: str = "") -> TrialInputs:
    """Draw every in/inout buffer of ``problem`` for ``trial`` (seeded, reproducible given
    the run's ``salt``), as ``trial_spec`` plans it."""
    seed = trial_seed(group_id, problem.digest(), trial, salt)
    spec = trial_spec(problem, trial)
    magnitudes = nonnegative_inputs(problem)
    storage, values, ranges = {}, {}, {}
    for plan in spec.buffers:
        buf = problem.buffer(plan.name)
        # One stream per buffer index so adding a buffer does not reshuffle the others.
        rng = np.random.default_rng([seed, plan.index])
        if plan.how == TABLE:
            storage[buf.name] = table_storage(buf)
            values[buf.name] = from_storage(storage[buf.name], buf.dtype)
            continue
        if plan.how == INTEGERS:
            low, high = plan.integer_range
            drawn = draw_integers(buf.shape, rng, low, high, plan.kind, plan.axis)
            ranges[buf.name] = [low, high - 1]
        elif plan.how == DRAW:
            drawn = draw(buf.init, buf.shape, rng, plan.kind, buf.dtype, plan.domain)
            if plan.domain is not None:
                ranges[buf.name] = list(plan.domain)
        elif plan.how == DERIVED:
            drawn = derived_values(problem, plan, rng, values)
        else:
            drawn = stress_values(problem, plan, rng, values)
            ranges[buf.name] = list(plan.domain)
        if buf.name in magnitudes:
            drawn = np.abs(drawn)
        bits = float_to_bits(drawn, buf.dtype)
        storage[buf.name] = bits
        values[buf.name] = from_storage(bits, buf.dtype, buf.shape)
    return TrialInputs(trial, seed, spec.kind, storage, values, ranges)


def init_array(buf: Buffer, seed: int = 0) -> np.ndarray:
    """Storage contents for a scratch/out buffer with an ``init`` distribution (e.g. zeros)."""
    rng = np.random.default_rng([seed, 0x5C])
    return float_to_bits(draw(buf.init, buf.shape, rng), buf.dtype)
