"""The ``mugraph`` op: a Mirage muGraph (its JSON, carried in ``params["mugraph"]``) is its
own float64 reference, error scale and input domain.

``evaluate`` runs the muGraph's kernel and thread-block operators over whole tensors in
float64 (every block of the grid at once, iteration by iteration over the for-loop): no
float16 rounding, float64 accumulation, numpy broadcasting for every element-wise op.
With ``track_error`` the same walk carries, per tensor, the error scale E (first-order
magnitude of the roundings that reached it, in units of the float16 unit roundoff), counted
per float16 store: each store adds one rounding of the stored |value|, independent of the
others (root sum of squares); element-wise ops carry E by their derivatives (|b| E_a +
|a| E_b for mul, e^x for exp, silu', div, rms_norm); sums run in float32 (the lowering's
accumulators and tensor-core products), so a reduction adds its terms' E in root sum of
squares and a float32 term, and only its store rounds to float16. A reduction's partial
sums are stored by the members of a group at different chunk lengths (a tile of the
for-loop, the whole reduction): the walk takes the largest over the dyadic chunk lengths
16, 32, ... of one rounding per chunk (docs/mirage.md).
``find_domain`` searches the largest input magnitude that keeps every intermediate finite
in float16 on adversarial inputs. Semantics follow docs/mirage.md (maps, redtox, rms).
"""
from __future__ import annotations

import copy
import math

import numpy as np

from .errors import PtxdsError

AXES = ("x", "y", "z")
FP16_SAFE = 65504.0 / 2  # largest intermediate magnitude the domain search accepts
MIN_CHUNK = 16
FP16_TINY = 2.0 ** -14  # smallest normal float16: u * FP16_TINY is half a subnormal step


class MuGraphSemanticsError(PtxdsError, ValueError):
    """A muGraph the float64 evaluator cannot read; names the op."""


# Newer Mirage (include/mirage/type.h) writes the for-loop accumulators' JSON names as
# "tb_forloop_accum_*_op" instead of "tb_accum_*_op"; the enum entries and their meaning
# are the same, so both spellings read as the older one.
RENAMED_OPS = {f"tb_forloop_accum_{k}_op": f"tb_accum_{k}_op"
               for k in ("nored", "red_ld_sum", "red_ld_rms", "redtox_ld_sum")}


def op_type(op: dict) -> str:
    """The operator's type in the older spelling (see RENAMED_OPS)."""
    name = op["op_type"]
    return RENAMED_OPS.get(name, name)


def _shape(t: dict) -> tuple:
    return tuple(int(d) for d in t["dim"][:int(t["num_dims"])])


def io_tensors(graph: list) -> tuple:
    """(input shapes in file order, output shape) of a raw muGraph."""
    ins = [_shape(op["output_tensors"][0]) for op in graph if op_type(op) == "kn_input_op"]
    outs = [_shape(op["input_tensors"][0]) for op in graph if op_type(op) == "kn_output_op"]
    return ins, outs[0]


# ----------------------------------------------------------------------------- values with error scales

U32_IN_U16 = 2.0 ** -13  # float32's unit roundoff in units of float16's


class _V:
    """A float64 value and its error scale E (None when not tracked). A matmul's product
    also keeps ``reduction``: its terms' error squared without the store (``e0_sq``) and
    {chunk length: sum over chunks of the chunk's partial sum squared}, so an accumulation
    over the for-loop can count the store of each member's chunk once."""
    __slots__ = ("v", "e", "reduction")

    def __init__(self, v, e=None, reduction=None):
        self.v, self.e, self.reduction = v, e, reduction


def _rounded(x: _V, seen: list) -> _V:
    """Storing to float16 adds one rounding of size |value|; ``seen`` collects each
    tensor's largest magnitude (inf when not finite) for the domain search."""
    with np.errstate(invalid="ignore"):
        seen.append(float(np.max(np.abs(x.v))) if np.all(np.isfinite(x.v)) else np.inf)
    if x.e is None or x.reduction is not None:  # a product's store is counted by its chunks
        return x
    return _V(x.v, np.sqrt(x.e ** 2 + _store_sq(x.v)))


def _store_sq(v: np.ndarray) -> np.ndarray:
    """One float16 rounding of ``v``, squared; below the smallest normal it is absolute
    (half a subnormal step)."""
    m = np.maximum(np.abs(v), FP16_TINY)
    return m * m


def _dyadic_lengths(n: int) -> list:
    """Chunk lengths 16, 32, ... that divide n, and n itself."""
    lengths, c = [], MIN_CHUNK
    while c < n:
        if n % c == 0:
            lengths.append(c)
        c *= 2
    return lengths + [n]


def _chunk_max(chunks: dict) -> np.ndarray:
    return np.maximum.reduce([np.maximum(q, FP16_TINY ** 2) for q in chunks.values()])


def _sum_chunks_sq(terms: np.ndarray) -> dict:
    """{c: sum over chunks of the last axis of length c of the chunk's sum squared}."""
    n = terms.shape[-1]
    out = {}
    for c in _dyadic_lengths(n):
        s = terms.reshape(terms.shape[:-1] + (n // c, c)).sum(-1)
        out[c] = (s * s).sum(-1)
    return out


def _matmul(a: _V, b: _V) -> _V:
    """A product stored to float16 once; float32 sums inside. Its store is a partial sum of
    the full reduction in other members: ``reduction`` keeps every dyadic chunk length."""
    v = np.matmul(a.v, b.v)
    if a.e is None:
        return _V(v)
    k = a.v.shape[-1]
    float32 = U32_IN_U16 * np.sqrt(k) * np.matmul(np.abs(a.v), np.abs(b.v))
    e0_sq = np.matmul(a.e ** 2, b.v ** 2) + np.matmul(a.v ** 2, b.e ** 2) + float32 ** 2
    chunks = {}
    for c in _dyadic_lengths(k):
        if c == k:
            chunks[c] = v * v
            continue
        aj = a.v.reshape(a.v.shape[:-1] + (k // c, c))
        bj = b.v.reshape(b.v.shape[:-2] + (k // c, c, b.v.shape[-1]))
        partial = np.einsum("...mjc,...jcn->...jmn", aj, bj)
        chunks[c] = (partial * partial).sum(-3)
    return _V(v, np.sqrt(e0_sq + _chunk_max(chunks)), (e0_sq, chunks))


def _unary(kind: str, x: _V) -> _V:
    with np.errstate(over="ignore", invalid="ignore"):
        if kind == "exp":
            v = np.exp(x.v)
            d = v
        elif kind == "silu":
            s = 1.0 / (1.0 + np.exp(-x.v))
            v, d = x.v * s, np.abs(s * (1.0 + x.v * (1.0 - s)))
        else:
            raise MuGraphSemanticsError(f"op {kind}: no float64 semantics")
    return _V(v, None if x.e is None else d * x.e)


def _binary(kind: str, a: _V, b: _V) -> _V:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if kind == "add":
            return _V(a.v + b.v, None if a.e is None else a.e + b.e)
        if kind == "mul":
            return _V(a.v * b.v, None if a.e is None else np.abs(b.v) * a.e + np.abs(a.v) * b.e)
        if kind == "div":
            v = a.v / b.v
            return _V(v, None if a.e is None else (a.e + np.abs(v) * b.e) / np.abs(b.v))
    raise MuGraphSemanticsError(f"op {kind}: no float64 semantics")


def _rms_norm(x: _V) -> _V:
    n = x.v.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.sqrt(np.mean(x.v * x.v, axis=-1, keepdims=True))
        y = x.v / r
        if x.e is None:
            return _V(y)
        e_r = np.sqrt(((x.v * x.e) ** 2).sum(-1, keepdims=True)) / (n * r)
        return _V(y, x.e / r + np.abs(y) * e_r / r)


def _sum_last(x: _V, groups: int = 1) -> _V:
    """Sum the last axis into ``groups`` strided groups (element j sums k * groups + j)."""
    shape = x.v.shape[:-1] + (x.v.shape[-1] // groups, groups)
    v = x.v.reshape(shape).sum(-2)
    if x.e is None:
        return _V(v)
    terms = np.moveaxis(x.v.reshape(shape), -1, -2)
    float32 = U32_IN_U16 * np.sqrt(shape[-2]) * np.abs(terms).sum(-1)
    e0_sq = (x.e.reshape(shape) ** 2).sum(-2) + float32 ** 2
    chunks = _sum_chunks_sq(terms)
    return _V(v, np.sqrt(e0_sq + _chunk_max(chunks)), (e0_sq, chunks))


# ----------------------------------------------------------------------------- tiles of all blocks at once

def _split(dshape, tile, dim_map, forloop_dim):
    """Per tensor dim: (grid axis or None, whether the loop walks it, tile size)."""
    axis_of = {int(dim_map.get(a, -1)): a for a in AXES if int(dim_map.get(a, -1)) >= 0}
    return [(axis_of.get(d), d == forloop_dim, tile[d]) for d in range(len(dshape))]


def _load(tensor: np.ndarray, layout, grid, forloop_range) -> np.ndarray:
    """(gx, gy, gz, F, *tile) view of every block's tile of every iteration."""
    shape, names = [], []
    for d, (axis, looped, size) in enumerate(layout):
        if axis is not None:
            shape.append(grid[AXES.index(axis)])
            names.append(axis)
        if looped:
            shape.append(forloop_range)
            names.append("F")
        shape.append(size)
        names.append(d)
    t = tensor.reshape(shape)
    order = [names.index(k) if k in names else None for k in (*AXES, "F")]
    lead = [i for i in order if i is not None]
    t = np.transpose(t, lead + [i for i in range(len(names)) if i not in lead])
    full = []
    it = iter(t.shape)
    for k in order:
        full.append(next(it) if k is not None else 1)
    t = t.reshape(full + list(t.shape[len(lead):]))
    return t


def _store(tile: np.ndarray, layout, grid, dshape) -> np.ndarray:
    """Inverse of _load for a (gx, gy, gz, *tile) array (no loop dim)."""
    names = list(AXES) + list(range(len(layout)))
    t = np.broadcast_to(tile, tuple(grid) + tile.shape[3:])
    used = [a for a, _, _ in layout if a is not None]
    t = t[tuple(slice(None) if a in used else 0 for a in AXES)]
    names = [a for a in AXES if a in used] + list(range(len(layout)))
    order = []
    for d, (axis, _, _) in enumerate(layout):
        if axis is not None:
            order.append(names.index(axis))
        order.append(names.index(d))
    return np.transpose(t, order).reshape(dshape)


def _customized(op: dict, tensors: dict, seen: list) -> None:
    g = op["bgraph"]
    grid = tuple(int(g["grid_dim"][a]) for a in AXES)
    F = int(g["forloop_range"])
    dimx = int(g.get("reduction_dimx", 64))
    tb_ops = g["operators"]
    tiles: dict = {}
    loaded = {}
    post_guids = set()
    acc: dict = {}
    for it in range(F):
        for tb in tb_ops:
            kind = op_type(tb)[3:-3]
            ins = [t["guid"] for t in tb.get("input_tensors", [])]
            outs = [t["guid"] for t in tb.get("output_tensors", [])]
            if kind == "input":
                if outs[0] not in loaded:
                    d = tb["dtensor"]
                    layout = _split(_shape(d), _shape(tb["output_tensors"][0]), tb["input_map"],
                                    int(tb["forloop_dim"]))
                    src = tensors[d["guid"]]
                    loaded[outs[0]] = (_load(src.v, layout, grid, F),
                                       None if src.e is None else _load(src.e, layout, grid, F))
                v, e = loaded[outs[0]]
                tiles[outs[0]] = _V(v[:, :, :, it if v.shape[3] > 1 else 0],
                                    None if e is None else e[:, :, :, it if e.shape[3] > 1 else 0])
            elif kind == "output" or any(i in post_guids for i in ins):
                post_guids.update(outs)  # runs once, after the loop
                continue
            elif kind.startswith("accum"):
                x = tiles[ins[0]]
                if kind == "accum_red_ld_rms":
                    x = _sum_last(_V(x.v * x.v, None if x.e is None else 2 * np.abs(x.v) * x.e))
                elif kind == "accum_red_ld_sum":
                    x = _sum_last(x)
                elif kind == "accum_redtox_ld_sum":
                    x = _sum_last(x, dimx)
                elif kind != "accum_nored":
                    raise MuGraphSemanticsError(f"op {op_type(tb)}: no float64 semantics")
                acc.setdefault(outs[0], []).append(x)
                post_guids.add(outs[0])
            else:
                tiles[outs[0]] = _rounded(_tb_compute(kind, [tiles[i] for i in ins], tb), seen)
    for guid, terms in acc.items():
        x = _accumulated(terms)
        tb = next(t for t in tb_ops if t.get("output_tensors") and t["output_tensors"][0]["guid"] == guid)
        if op_type(tb) == "tb_accum_red_ld_rms_op":
            n = _shape(tb["input_tensors"][0])[-1] * F
            r = np.sqrt(x.v / n)
            with np.errstate(divide="ignore", invalid="ignore"):
                x = _V(r, None if x.e is None else np.where(r > 0, x.e / (2 * n * r), 0.0))
        tiles[guid] = _rounded(x, seen)
    for tb in tb_ops:  # after the loop: ops on accumulated tensors, then stores
        kind = op_type(tb)[3:-3]
        ins = [t["guid"] for t in tb.get("input_tensors", [])]
        if kind in ("input", "output") or kind.startswith("accum") or not any(i in post_guids for i in ins):
            continue
        out = tb["output_tensors"][0]["guid"]
        tiles[out] = _rounded(_tb_compute(kind, [tiles[i] for i in ins], tb), seen)
        post_guids.add(out)
    for tb in tb_ops:
        if op_type(tb) != "tb_output_op":
            continue
        d = tb["dtensor"]
        layout = _split(_shape(d), _shape(tb["input_tensors"][0]), tb["output_map"], -1)
        x = tiles[tb["input_tensors"][0]["guid"]]
        tensors[d["guid"]] = _V(_store(x.v, layout, grid, _shape(d)),
                                None if x.e is None else _store(x.e, layout, grid, _shape(d)))


def _accumulated(terms: list) -> _V:
    """The float32 sum over the for-loop of ``terms`` (one per iteration). Its error: the
    terms' own (root sum of squares) and the largest over chunk lengths of one float16
    rounding per chunk: chunks inside an iteration's term (a product's tile) and runs of
    2, 4, ... iterations (members with longer tiles)."""
    v = np.sum([t.v for t in terms], axis=0)
    if terms[0].e is None:
        return _V(v)
    e0_sq = 0.0
    chunks: dict = {}
    for t in terms:
        if t.reduction is None:  # an element-wise tile: its store is already in t.e
            e0_sq = e0_sq + t.e ** 2
            continue
        e0_sq = e0_sq + t.reduction[0]
        for c, q in t.reduction[1].items():
            chunks[("in", c)] = chunks.get(("in", c), 0.0) + q
    values = np.stack([t.v for t in terms])
    n = len(terms)
    runs = sorted({2 ** j for j in range(1, n.bit_length()) if n % 2 ** j == 0} | ({n} if n > 1 else set()))
    for run in runs:
        sums = values.reshape((n // run, run) + values.shape[1:]).sum(1)
        chunks[("runs", run)] = (sums * sums).sum(0)
    if not chunks:
        return _V(v, np.sqrt(e0_sq))
    return _V(v, np.sqrt(e0_sq + _chunk_max(chunks)))


def _tb_compute(kind: str, xs: list, tb: dict) -> _V:
    if kind == "matmul":
        return _matmul(*xs)
    if kind == "rms_norm":
        return _rms_norm(xs[0])
    if len(xs) == 1:
        return _unary(kind, xs[0])
    return _binary(kind, *xs)


def evaluate(graph: list, inputs: list, track_error: bool = False, seen: list | None = None):
    """The muGraph's output in float64 for ``inputs`` (arrays in kn_input_op order); with
    ``track_error``, (output, error scale E) instead. ``seen`` (a list) receives the
    largest magnitude of every tensor made."""
    seen = [] if seen is None else seen
    tensors = {}
    arrays = iter(inputs)
    out_guid = None
    for op in graph:
        kind = op_type(op)
        if kind == "kn_input_op":
            t = op["output_tensors"][0]
            v = np.asarray(next(arrays), dtype=np.float64).reshape(_shape(t))
            tensors[t["guid"]] = _V(v, np.zeros_like(v) if track_error else None)
        elif kind == "kn_output_op":
            out_guid = op["input_tensors"][0]["guid"]
        elif kind == "kn_customized_op":
            _customized(op, tensors, seen)
        else:
            name = kind[3:-3]
            xs = [tensors[t["guid"]] for t in op["input_tensors"]]
            y = _matmul(*xs) if name == "matmul" else (_unary(name, xs[0]) if len(xs) == 1 else _binary(name, *xs))
            tensors[op["output_tensors"][0]["guid"]] = _rounded(y, seen)
    out = tensors[out_guid]
    return (out.v, out.e) if track_error else out.v


class _Reached(Exception):
    """A tensor's magnitude reached the caller's limit: the rest of the walk cannot make
    the largest magnitude smaller, so it stops there."""


class _Magnitudes(list):
    """``seen`` for ``evaluate`` that stops the walk at the first magnitude >= ``limit``."""

    def __init__(self, limit: float):
        super().__init__()
        self.limit = limit

    def append(self, value: float) -> None:
        super().append(value)
        if value >= self.limit:
            raise _Reached(value)


def intermediate_max(graph: list, inputs: list, limit: float = np.inf) -> float:
    """The largest magnitude (inf if any is not finite) over every tensor the muGraph makes;
    the walk stops at the first tensor whose magnitude reaches ``limit`` and returns that
    magnitude (a search that only asks whether the largest is below ``limit`` gets the same
    answer sooner)."""
    seen = _Magnitudes(limit)
    with np.errstate(all="ignore"):
        try:
            evaluate(graph, inputs, seen=seen)
        except _Reached as stop:
            return stop.args[0]
    return max(seen)


def _alternating(shape: tuple) -> np.ndarray:
    """+1/-1 by the parity of the element's index sum (a checkerboard over every axis):
    the signs of all but the last axis times the last axis's, one pass over the array."""
    if not shape:
        return np.ascontiguousarray(np.ones(()))  # as before: a 1-element array
    signs = [np.where(np.arange(n) % 2, -1.0, 1.0) for n in shape]
    lead = np.ones(())
    for axis, sign in enumerate(signs[:-1]):
        lead = np.multiply.outer(lead, sign)
    return np.multiply.outer(lead, signs[-1])


def _pattern_makers(hi: float, rng: np.random.Generator) -> list:
    """(make(shape), periodic) per adversarial pattern of magnitude <= hi, in search order:
    all +hi (no cancellation, largest exp arguments), alternating signs, uniform, and one
    +hi per row over tiny values (the largest rms_norm outputs). ``periodic``: every slice
    along the first axis is the first or the second slice (so two slices show them all)."""
    return [(lambda s: np.full(s, hi), True),
            (lambda s: hi * _alternating(s), True),
            (lambda s: rng.uniform(-hi, hi, s), False),
            (lambda s: np.ascontiguousarray(np.broadcast_to(np.where(np.arange(s[-1]) == 0, hi, hi * 2.0 ** -12), s)),
             True)]


def _patterns(shapes: list, hi: float, rng: np.random.Generator):
    """The adversarial inputs of ``_pattern_makers``, made one pattern at a time, as the
    search asks: a search that stops at the first unsafe pattern never draws the others,
    and at most one pattern's tensors are alive (at 4096x4096 inputs, eager patterns held
    gigabytes)."""
    for make, _ in _pattern_makers(hi, rng):
        yield [make(tuple(sh)) for sh in shapes]


def find_domain(graph: list, start: float = 256.0, floor: float = 2.0 ** -8) -> float:
    """The largest magnitude hi (a power of sqrt 2, at most ``start``) such that every
    input in [-hi, hi] in the adversarial patterns keeps every tensor of the muGraph below
    FP16_SAFE; raises when even ``floor`` does not. A muGraph whose batch slices are
    independent (``batch_tiles``) meets its periodic patterns on two slices, which make
    the same tensors as the whole batch does; the uniform draw is met whole."""
    shapes = io_tensors(graph)[0]
    probe = periodic_probe(graph)
    if probe is None:
        return search_domain(lambda xs: intermediate_max(graph, xs, FP16_SAFE), shapes, start, floor)
    cut = cut_batch(graph, probe)
    cut_shapes = [(probe,) + tuple(s[1:]) for s in shapes]

    def safe(hi):
        rng = np.random.default_rng(0)
        for make, periodic in _pattern_makers(hi, rng):
            walked, sizes = (cut, cut_shapes) if periodic else (graph, shapes)
            if intermediate_max(walked, [make(tuple(s)) for s in sizes], FP16_SAFE) >= FP16_SAFE:
                return False
        return True

    return _search(safe, start, floor)


def search_domain(largest, shapes: list, start: float = 256.0, floor: float = 2.0 ** -8) -> float:
    """``find_domain`` for any computation: ``largest(inputs)`` is the largest magnitude of
    every float16 tensor it makes (inf when one is not finite)."""
    def safe(hi):
        rng = np.random.default_rng(0)
        return all(largest(xs) < FP16_SAFE for xs in _patterns(shapes, hi, rng))

    return _search(safe, start, floor)


def _search(safe, start: float, floor: float) -> float:
    hi = start
    while hi >= floor:  # coarse steps of 4x down, then up by sqrt 2 while still safe
        if safe(hi):
            for _ in range(3):
                if hi * np.sqrt(2.0) > start or not safe(hi * np.sqrt(2.0)):
                    break
                hi *= np.sqrt(2.0)
            return float(hi)
        hi /= 4.0
    raise MuGraphSemanticsError(f"no input magnitude >= {floor} keeps the muGraph finite in float16")


# ----------------------------------------------------------------------------- batch slices

def _kn_tensors(graph: list):
    """Every kernel-level tensor record of a raw muGraph (as kernels name them, and as
    their thread-block inputs and outputs read and write them)."""
    for op in graph:
        yield from op.get("input_tensors", []) + op.get("output_tensors", [])
        for tb in (op.get("bgraph") or {}).get("operators", []):
            if "dtensor" in tb:
                yield tb["dtensor"]


def _batch_walk(bgraph: dict, batch: int):
    """(grid axis, tile) by which every tile of a kernel walks the batch dimension, or None
    when some tile walks it otherwise, the for-loop walks it, or a thread-block op could
    mix slices (a matmul of 2-D tiles, operands of unequal rank)."""
    walks = set()
    for tb in bgraph["operators"]:
        kind = op_type(tb)
        if kind in ("tb_input_op", "tb_output_op"):
            mapping, tile = ((tb["input_map"], tb["output_tensors"][0]) if kind == "tb_input_op"
                             else (tb["output_map"], tb["input_tensors"][0]))
            axes = [a for a in AXES if int(mapping.get(a, -1)) == 0]
            if len(axes) != 1 or (kind == "tb_input_op" and int(tb["forloop_dim"]) == 0):
                return None
            walks.add((axes[0], _shape(tile)[0]))
            continue
        ranks = {int(t["num_dims"]) for t in tb.get("input_tensors", []) + tb.get("output_tensors", [])}
        if len(ranks) > 1 or (kind == "tb_matmul_op" and min(ranks, default=0) < 3):
            return None
    if len(walks) != 1:
        return None
    axis, tile = walks.pop()
    return (axis, tile) if int(bgraph["grid_dim"][axis]) * tile == batch else None


def batch_tiles(graph: list) -> "tuple | None":
    """(B, t) when the first dimension of every kernel-level tensor is a batch of B slices
    that every kernel computes alike and apart: pre-defined kernels are element-wise or
    batched matmuls over tensors of one rank, and every customized kernel's tiles walk the
    batch with one grid axis, never the for-loop, t slices per block at most (t: the least
    common multiple over kernels). The muGraph's output on the first k slices (t divides k)
    is then the output of ``cut_batch(graph, k)`` on the inputs' first k slices. None
    otherwise."""
    inputs, _ = io_tensors(graph)
    if not inputs or len(inputs[0]) < 2:
        return None
    batch = inputs[0][0]
    if any(int(t["num_dims"]) < 2 or int(t["dim"][0]) != batch for t in _kn_tensors(graph)):
        return None
    tile = 1
    for op in graph:
        kind = op_type(op)
        if kind in ("kn_input_op", "kn_output_op"):
            continue
        if kind == "kn_customized_op":
            walk = _batch_walk(op["bgraph"], batch)
            if walk is None:
                return None
            tile = tile * walk[1] // math.gcd(tile, walk[1])
            continue
        ranks = {int(t["num_dims"]) for t in op["input_tensors"] + op["output_tensors"]}
        if len(ranks) != 1 or (kind == "kn_matmul_op" and ranks.pop() < 3):
            return None
    return batch, tile


def cut_batch(graph: list, keep: int) -> list:
    """A copy of ``graph`` (``batch_tiles`` gives it) over the first ``keep`` slices of its
    batch: every kernel-level tensor ``keep`` long in dimension 0, each kernel's batch axis
    ``keep / t`` blocks long."""
    batch, _ = batch_tiles(graph)
    graph = copy.deepcopy(graph)
    for op in graph:
        if op_type(op) == "kn_customized_op":
            axis, tile = _batch_walk(op["bgraph"], batch)
            op["bgraph"]["grid_dim"][axis] = keep // tile
    for t in _kn_tensors(graph):
        t["dim"][0] = keep
    return graph


def periodic_probe(graph: list) -> "int | None":
    """How many batch slices show every tensor a periodic adversarial pattern makes (an
    even number, fewer than the batch), or None."""
    found = batch_tiles(graph)
    if found is None:
        return None
    batch, tile = found
    keep = tile * 2 // math.gcd(tile, 2)
    return keep if keep < batch and batch % keep == 0 else None


def find_typical_std(graph: list, hi: float, seeds: int = 3) -> float:
    """The largest standard deviation (a power of 2, at most 1) of normal inputs whose
    draws, clipped to [-hi, hi] by nothing, keep every tensor below FP16_SAFE / 4."""
    return search_typical_std(lambda xs: intermediate_max(graph, xs, FP16_SAFE / 4), io_tensors(graph)[0], hi, seeds)


def search_typical_std(largest, shapes: list, hi: float, seeds: int = 3) -> float:
    """``find_typical_std`` for any computation (``largest`` as in ``search_domain``)."""
    std = 1.0
    while std > hi * 2.0 ** -12:
        rngs = [np.random.default_rng(seed) for seed in range(seeds)]
        if all(largest([r.normal(0.0, std, sh) for sh in shapes]) < FP16_SAFE / 4 for r in rngs):
            return std
        std /= 2.0
    return std


# ----------------------------------------------------------------------------- the op

def _inputs(inputs: dict, problem) -> list:
    return [inputs[b.name] for b in problem.buffers if b.role == "in"]


def _out(problem) -> str:
    return next(b.name for b in problem.buffers if b.role == "out")


def ref_mugraph(inputs, problem):
    return {_out(problem): evaluate(problem.params["mugraph"], _inputs(inputs, problem))}


def scale_mugraph(inputs, problem):
    _, error = evaluate(problem.params["mugraph"], _inputs(inputs, problem), track_error=True)
    # the bound allows 2 * 2^-10 * S (math_input float16) = 4u * S; E is in units of u
    return {_out(problem): error}


def reduction_length(problem) -> int:
    """The longest reduction of the muGraph (the bound's float32 accumulation term)."""
    longest = 1
    for op in problem.params["mugraph"]:
        if op_type(op) == "kn_matmul_op":
            longest = max(longest, _shape(op["input_tensors"][0])[-1])
        for tb in (op.get("bgraph") or {}).get("operators", []):
            if op_type(tb) == "tb_matmul_op":
                longest = max(longest, _shape(tb["input_tensors"][0])[-1] * int(op["bgraph"]["forloop_range"]))
    return longest


def _declared(problem, buffer):
    return 2.0 ** -10, 1.0


def op_spec(op_spec_class):
    """The registry entry (problems.py passes its OpSpec class: this module imports no
    registry, so either may be imported first)."""
    return op_spec_class(
        "mugraph", ref_mugraph, reduction_length,
        "the muGraph in params.mugraph evaluated in float64 (Mirage semantics, docs/mirage.md)",
        scale_mugraph, _declared,
        "walk over the muGraph: root sum of squares of one rounding per float16 store, carried by "
        "the element-wise ops' derivatives; float32 sums; a reduction's partial sums at the largest "
        "dyadic chunk length")
