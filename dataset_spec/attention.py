"""The canonical attention function and its float16-safe inputs.

O = softmax(Q @ K, last dim) @ V, with Q [B, Sq, D], K stored [B, D, Skv] (keys along the
last dim, as Mirage's muGraphs read it), V [B, Skv, D] and O [B, Sq, D]; no scale (a source
that scales folds it into Q). Sources state it as the registry's ``attention`` op (Triton)
or as a muGraph (Mirage); ``canonical.py`` moves both onto one problem.

The inputs' domain belongs to the function, not to a source, so that every source's problem
at one size is the same problem: the largest magnitude (and typical spread) at which the
computation with every intermediate stored in float16 and no max subtraction (X = Q@K,
E = exp(X), sum(E), E@V: the least forgiving form a source may take) stays finite, found
with the muGraph domain search (``mugraph.search_domain``). A muGraph joins the canonical
problem only where its own search allows at least this domain.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import uuid
from pathlib import Path

import numpy as np

from . import mugraph
from .model import Buffer, Distribution

SHAPE_NAMES = ("B", "Sq", "Skv", "D")
INPUTS = ("Q", "K", "V")
OUTPUT = "O"
DOMAIN_BINADES = 12  # as Mirage's problems: wide/edge magnitudes span [hi * 2^-12, hi]
# float64 agreement that says a muGraph computes this function (evaluations on seeded inputs),
# relative to softmax(Q@K) @ |V|: summation order moves a float64 result by ~1e-13 of that
SAME_FUNCTION_RTOL = 1e-9


def shapes_of(b: int, sq: int, skv: int, d: int) -> list:
    """[Q, K, V] shapes."""
    return [(b, sq, d), (b, d, skv), (b, skv, d)]


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The function in float64 (max-subtracted, so any finite input stays finite)."""
    x = np.matmul(q, k)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return np.matmul(e / e.sum(axis=-1, keepdims=True), v)


def _naive_largest(inputs: list) -> float:
    """The largest magnitude of X, E, sum(E), E@V and O, each stored in float16 with no
    max subtraction (inf when one is not finite)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in inputs)
    with np.errstate(all="ignore"):
        x = np.matmul(q, k)
        if not np.max(x) < np.log(mugraph.FP16_SAFE):  # exp(X) alone leaves the range
            return np.inf
        e = np.exp(x)
        s = e.sum(axis=-1, keepdims=True)
        n = np.matmul(e, v)
        tensors = (x, e, s, n, n / s)
        if not all(np.all(np.isfinite(t)) for t in tensors):
            return np.inf
        return float(max(np.max(np.abs(t)) for t in tensors))


# The search takes 15-40 s a size (a shape set's three sizes: a minute before a build says
# anything), so its answers are kept on disk beside the compile caches (ptx_tools'
# ``cache_folder``, whose variables these are: dataset_spec may not import ptx_tools).
CACHE_ROOT_ENV = "PTXDS_CACHE"
CACHE_ENV = "PTXDS_DOMAINS_CACHE"
# A search is announced before it starts: a command shows these lines unless --silent.
PROGRESS = logging.getLogger("ptxds.progress")


def _cache_file(size: tuple) -> Path:
    """Where ``domain(*size)`` is kept: keyed by the size and by everything else its answer
    depends on, the search's code (this module and mugraph's) and numpy's version."""
    root = Path(os.environ.get(CACHE_ROOT_ENV, Path.home() / ".cache" / "ptxds"))
    folder = Path(os.environ.get(CACHE_ENV, root / "domains"))
    code = Path(mugraph.__file__).read_bytes() + Path(__file__).read_bytes()
    key = hashlib.sha256(code + repr((tuple(size), np.__version__)).encode()).hexdigest()[:32]
    return folder / f"attention-{key}.json"


@functools.lru_cache(maxsize=64)
def domain(b: int, sq: int, skv: int, d: int) -> tuple:
    """(hi, std): inputs in [-hi, hi] keep the float16 naive form finite; N(0, std^2)
    draws keep it below a quarter of float16's range."""
    cached = _cache_file((b, sq, skv, d))
    try:
        kept = json.loads(cached.read_text())
        return float(kept["hi"]), float(kept["std"])
    except (OSError, ValueError, KeyError, TypeError):  # not kept yet, or unreadable: search again
        pass
    shapes = shapes_of(b, sq, skv, d)
    PROGRESS.info("attention B=%d Sq=%d Skv=%d D=%d: searching its float16-safe input domain (15-40 s, "
                  "once per size; the answer is kept in %s)", b, sq, skv, d, cached.parent)
    hi = mugraph.search_domain(_naive_largest, shapes)
    found = hi, mugraph.search_typical_std(_naive_largest, shapes, hi)
    try:  # readers never see half a file; a unique name on a shared folder
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{uuid.uuid4().hex}.partial")
        partial.write_text(json.dumps({"hi": found[0], "std": found[1]}))
        os.replace(partial, cached)
    except OSError:  # a read-only or full cache costs the next run the search, nothing more
        pass
    return found


def size_of(shapes: list):
    """(B, Sq, Skv, D) when ``shapes`` are [Q, K, V] of attention, else None."""
    if len(shapes) != 3 or any(len(s) != 3 for s in shapes):
        return None
    (b, sq, d), (b2, d2, skv), (b3, skv2, d3) = shapes
    if not (b == b2 == b3 and d == d2 == d3 and skv == skv2):
        return None
    return b, sq, skv, d


def buffers(b: int, sq: int, skv: int, d: int, dtype: str = "float16") -> list:
    """The canonical buffers, inputs drawn from the function's typical spread."""
    _, std = domain(b, sq, skv, d)
    init = Distribution("normal", {"mean": 0.0, "std": std})
    ins = [Buffer(name, dtype, shape, "in", init) for name, shape in zip(INPUTS, shapes_of(b, sq, skv, d))]
    return ins + [Buffer(OUTPUT, dtype, (b, sq, d), "out")]


def params(b: int, sq: int, skv: int, d: int) -> dict:
    """The canonical params: the size, and the domain every trial kind draws within."""
    hi, std = domain(b, sq, skv, d)
    return {"shape": dict(zip(SHAPE_NAMES, (b, sq, skv, d))),
            "input_range": {name: [hi * 2.0 ** -DOMAIN_BINADES, hi] for name in INPUTS},
            "math_input": "float16",
            "input_choice": (f"largest |x| <= {hi:.4g} keeping Q@K, exp(Q@K), its row sums and exp(Q@K)@V "
                             f"below {mugraph.FP16_SAFE:g} in float16 on adversarial inputs; typical "
                             f"N(0, {std:g}^2)")}


def computes_attention(graph: list, seed: int = 0) -> bool:
    """Whether the muGraph's float64 evaluation is this function on seeded inputs (two
    draws, inside the function's domain): the muGraph says what it computes, not its shapes."""
    shapes, out_shape = mugraph.io_tensors(graph)
    size = size_of([tuple(s) for s in shapes])
    if size is None or tuple(out_shape) != (size[0], size[1], size[3]):
        return False
    hi, std = domain(*size)
    rng = np.random.default_rng(seed)
    for scale in (std, hi / 2):
        xs = [rng.uniform(-scale, scale, s) for s in shapes]
        try:
            with np.errstate(all="ignore"):
                got = mugraph.evaluate(graph, xs)
        except mugraph.MuGraphSemanticsError:
            return False
        want = attention(*xs)
        magnitude = attention(xs[0], xs[1], np.abs(xs[2]))
        if got.shape != want.shape or not np.all(np.abs(got - want) <= SAME_FUNCTION_RTOL * magnitude):
            return False
    return True
