"""Functions of networks, one key across sources: an Inductor kernel and a TVM task that
compute the same fused function land in one group (docs/crossource.md, "Functions of
networks").

Inductor states a kernel's function as its post-grad FX subgraph, TVM a task's as its fused
TIR PrimFunc: two programs of different ops (``var_mean`` and ``rsqrt`` beside TIR's
``x_sum``/``x_var_sum`` blocks) for one function. So the key is what the function computes,
as ``canonical.py`` decides for muGraph attention: each problem's own float64 reference is
run on inputs drawn from the key's seed for each input slot, and the outputs are
fingerprinted. A slot is an input or output buffer described by its role, dtype, element
count and input distribution (not its name or shape: a kernel sees storage, and
``[2, 64, 4, 64]`` and ``[128, 256]`` hold the same elements); inputs of one description
are ordered by trying each order and keeping the one whose fingerprints sort first, outputs
by their fingerprints, so both sources name their buffers alike (``in0``, ``io0``,
``out0``). The key hashes the slots and the fingerprints (each output's norm and three
seeded random projections of it, relative to the norm, to 2^-20, plus where it is not
finite): equal functions give equal keys up to float64 rounding, unequal ones differ.

``network_function(problem)`` is the canonical statement of one source's problem: group
``function/fused/<dtypes>/i<inputs>o<outputs>/N<largest>/<key>``, the canonical buffers,
and a reference module that runs the source's own reference under the canonical names.
``unify(problems)`` makes the one problem of a group that several sources state: the first
source's values (they agree to float64 rounding), and per output the largest error scale
any source's own reference gives, so each source's members are judged with the roundings
its own arithmetic declares; the input domain is the intersection of theirs.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
from typing import Optional

import numpy as np

from .model import DEFAULT_TRIAL_KINDS, Buffer, Distribution, Problem

GROUP_PREFIX = "function/fused"
SEED = 38
MAX_ORDERS = 24              # input orders tried at most (ties of more inputs: no key)
MAX_ELEMENTS = 1 << 23       # elements of all buffers together, above which no key is computed
QUANTUM = 2.0 ** 20          # fingerprint resolution, relative to the output's norm
PROJECTIONS = 3
ROLE_PREFIX = {"in": "in", "inout": "io", "out": "out"}

_KEYS: dict = {}             # source problem digest -> (canonical problem, renames) or None


def _init_text(init: Optional[Distribution]) -> str:
    if init is None:
        return "normal(0,1)"
    return f"{init.kind}({','.join(f'{k}={init.params[k]}' for k in sorted(init.params))})"


def _slot(buffer: Buffer) -> tuple:
    return (buffer.role, buffer.dtype, int(np.prod(buffer.shape)), _init_text(buffer.init) if buffer.role != "out" else "")


def _draw(slot: tuple, position: int) -> np.ndarray:
    role, dtype, numel, init = slot
    digest = hashlib.sha256(f"{SEED}/{position}/{slot}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    if init.startswith("randint"):
        params = dict(part.split("=") for part in init[len("randint("):-1].split(","))
        return rng.integers(int(params["low"]), int(params["high"]), numel).astype(np.float64)
    return rng.standard_normal(numel)


def fingerprint(values) -> str:
    """Where the output is not finite, and its norm and three seeded projections of it,
    quantised relative to the norm: one text per output that equal functions share."""
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = np.isfinite(flat)
    special = hashlib.sha256(np.packbits(np.stack([np.isnan(flat), flat == np.inf, flat == -np.inf])).tobytes())
    x = np.where(finite, flat, 0.0)
    norm = float(np.sqrt(np.dot(x, x)))
    if norm == 0.0:
        return f"zero/{special.hexdigest()[:12]}"
    rng = np.random.default_rng(SEED + flat.size)
    projections = [int(np.rint(np.dot(rng.standard_normal(flat.size), x) / norm * QUANTUM))
                   for _ in range(PROJECTIONS)]
    return f"{int(np.rint(math.log2(norm) * QUANTUM))}/{'/'.join(map(str, projections))}/{special.hexdigest()[:12]}"


def _eligible(problem: Problem) -> bool:
    if problem.op != "custom" or not problem.params.get("reference_source") or problem.tolerance:
        return False
    if list(problem.trial_kinds) != list(DEFAULT_TRIAL_KINDS):
        return False
    if any(b.role not in ROLE_PREFIX for b in problem.buffers):
        return False
    if any(b.role != "out" and b.init is not None and b.init.kind not in ("normal", "randint") for b in problem.buffers):
        return False
    return sum(int(np.prod(b.shape)) for b in problem.buffers) <= MAX_ELEMENTS


def _orders(inputs: list) -> Optional[list]:
    """Every order of the inputs that keeps slots sorted (ties permuted), or None when there
    are more than MAX_ORDERS."""
    groups = {}
    for b in inputs:
        groups.setdefault(_slot(b), []).append(b)
    slots = sorted(groups)
    count = math.prod(math.factorial(len(groups[s])) for s in slots)
    if count > MAX_ORDERS:
        return None
    return [[b for part in parts for b in part]
            for parts in itertools.product(*(itertools.permutations(groups[s]) for s in slots))]


def _outputs_of(problem: Problem, inputs: dict) -> dict:
    from .ops import get_op
    return get_op("custom").reference(inputs, problem)


def network_function(problem: Problem) -> Optional[tuple]:
    """(canonical Problem, {source buffer: canonical name}) of a problem whose float64
    reference is a function of networks (an op ``custom`` problem with its reference module
    inside), or None when it has no key (see module docstring)."""
    if not _eligible(problem):
        return None
    digest = problem.digest()
    if digest not in _KEYS:
        try:
            _KEYS[digest] = _canonical(problem)
        except Exception:  # a reference that does not run here has no key; its rows keep their group
            _KEYS[digest] = None
    return _KEYS[digest]


def _canonical(problem: Problem) -> Optional[tuple]:
    inputs = [b for b in problem.buffers if b.role in ("in", "inout")]
    outputs = [b for b in problem.buffers if b.role in ("out", "inout")]
    orders = _orders(inputs)
    if orders is None or not outputs:
        return None
    best = None
    for order in orders:
        draws = {b.name: _draw(_slot(b), i).reshape(b.shape) for i, b in enumerate(order)}
        values = _outputs_of(problem, draws)
        if set(values) != {b.name for b in outputs}:
            return None
        prints = {b.name: (_slot(b), fingerprint(values[b.name])) for b in outputs}
        key = sorted((slot, text) for slot, text in prints.values())
        if best is None or key < best[0]:
            best = (key, order, prints)
    key, order, prints = best
    renames, counts = {}, {}
    for b in order:
        prefix = ROLE_PREFIX[b.role]
        renames[b.name] = f"{prefix}{counts.setdefault(prefix, 0)}"
        counts[prefix] += 1
    for b in sorted((b for b in outputs if b.role == "out"), key=lambda b: prints[b.name]):
        renames[b.name] = f"out{counts.setdefault('out', 0)}"
        counts["out"] += 1
    slots = [list(_slot(b)) for b in order]
    function_key = hashlib.sha256(json.dumps([slots, key]).encode()).hexdigest()[:16]
    dtypes = "_".join(dict.fromkeys(b.dtype for b in problem.buffers))
    largest = max(int(np.prod(b.shape)) for b in problem.buffers)
    label = "/".join([GROUP_PREFIX, dtypes, f"i{len(inputs)}o{len(outputs)}", f"N{largest}", function_key])
    source = _source_entry(problem, renames)
    canonical = _problem(label, [_renamed(b, renames[b.name]) for b in problem.buffers], [source], function_key)
    return canonical, renames


def _renamed(buffer: Buffer, name: str) -> Buffer:
    return Buffer(name, buffer.dtype, tuple(buffer.shape), buffer.role, buffer.init)


def _source_entry(problem: Problem, renames: dict) -> dict:
    params = {k: v for k, v in problem.params.items() if k != "reference_source"}
    return {"problem_id": problem.problem_id, "reference": problem.params["reference"],
            "text": problem.params["reference_source"], "names": {renames[b.name]: b.name for b in problem.buffers},
            "shapes": {b.name: list(b.shape) for b in problem.buffers},
            "buffers": {b.name: {"dtype": b.dtype, "role": b.role} for b in problem.buffers}, "params": params}


def _canonical_name(source: dict, name: str) -> str:
    """The canonical name of the source's own buffer ``name``."""
    return next(c for c, own in source["names"].items() if own == name)


def _problem(label: str, buffers: list, sources: list, function_key: str) -> Problem:
    ranges = {}
    for source in sources:
        for name, (lo, hi) in (source["params"].get("input_range") or {}).items():
            canonical = _canonical_name(source, name)
            old = ranges.get(canonical, (lo, hi))
            ranges[canonical] = [max(float(old[0]), float(lo)), min(float(old[1]), float(hi))]
    params = {"reference": "reference:reference", "reference_source": wrapper_source(sources),
              "reduction_length": max(int(s["params"].get("reduction_length", 1)) for s in sources),
              "function_key": function_key}
    if ranges:
        params["input_range"] = {k: ranges[k] for k in sorted(ranges)}
    # a draw any source's function asks for holds for the function: its specials, its signs
    if any(s["params"].get("stress_specials") for s in sources):
        params["stress_specials"] = True
    magnitudes = sorted({_canonical_name(s, name)
                         for s in sources for name in s["params"].get("nonnegative_inputs") or ()})
    if magnitudes:
        params["nonnegative_inputs"] = magnitudes
    return Problem(label, "custom", buffers, params)


def sources_of(problem: Problem) -> list:
    """The source statements a canonical function problem's reference module holds."""
    text = problem.params.get("reference_source", "")
    marker = "SOURCES = json.loads("
    start = text.index(marker) + len(marker)
    return json.loads(json.loads(text[start:text.index(")\n", start)]))


def unify(problems: list) -> Problem:
    """The one problem of a function group several sources state (canonical problems of one
    id): their sources in a fixed order, the first one's buffers."""
    ids = {p.problem_id for p in problems}
    if len(ids) != 1:
        raise ValueError(f"unify: problems of several functions {sorted(ids)}")
    sources = {}
    for p in problems:
        for s in sources_of(p):
            sources.setdefault(hashlib.sha256(json.dumps(s, sort_keys=True).encode()).hexdigest(), s)
    ordered = [sources[k] for k in sorted(sources)]
    first = min(problems, key=lambda p: hashlib.sha256(json.dumps(sources_of(p)[0], sort_keys=True)
                                                        .encode()).hexdigest())
    return _problem(first.problem_id, list(first.buffers), ordered, first.params["function_key"])


WRAPPER = '''"""Reference of one function of networks as {count} source(s) state it (dataset_spec/fused.py):
the first source's float64 values; per output, the largest error scale any source's own
reference gives."""
import json
import types

import numpy as np

SOURCES = json.loads({sources})


class _Buffer:
    def __init__(self, name, shape, dtype, role):
        self.name, self.shape, self.dtype, self.role = name, tuple(shape), dtype, role


class _Problem:
    """The source's own problem as its reference module reads it."""

    def __init__(self, source):
        self.problem_id, self.params = source["problem_id"], dict(source["params"])
        self._buffers = {{name: _Buffer(name, shape, source["buffers"][name]["dtype"], source["buffers"][name]["role"])
                         for name, shape in source["shapes"].items()}}
        self.buffers = list(self._buffers.values())

    def buffer(self, name):
        return self._buffers[name]


_MODULES = {{}}


def _function(index, attribute):
    source = SOURCES[index]
    if index not in _MODULES:
        module = types.ModuleType("source_reference")
        exec(compile(source["text"], "<source reference %d>" % index, "exec"), module.__dict__)
        _MODULES[index] = module
    module_name, name = source["reference"].split(":", 1)
    return getattr(_MODULES[index], name if attribute == "reference" else name + "_" + attribute, None)


def _call(index, attribute, inputs, problem):
    source = SOURCES[index]
    function = _function(index, attribute)
    if function is None:
        return None
    own = {{source["names"][c]: np.asarray(v).reshape(source["shapes"][source["names"][c]])
           for c, v in inputs.items() if c in source["names"]}}
    out = function(own, _Problem(source))
    back = {{s: c for c, s in source["names"].items()}}
    return {{back[s]: np.asarray(v, dtype=np.float64).reshape(problem.buffer(back[s]).shape) for s, v in out.items()}}


def reference(inputs, problem):
    return _call(0, "reference", inputs, problem)


def reference_error_scale(inputs, problem):
    scales = None
    for index in range(len(SOURCES)):
        scale = _call(index, "error_scale", inputs, problem)
        if scale is None:
            scale = {{k: np.abs(v) for k, v in _call(index, "reference", inputs, problem).items()}}
        scales = scale if scales is None else {{k: np.maximum(scales[k], np.abs(v)) for k, v in scale.items()}}
    return scales
'''


def wrapper_source(sources: list) -> str:
    """The reference module of a function of networks stated by ``sources``."""
    return WRAPPER.format(count=len(sources), sources=json.dumps(json.dumps(sources, sort_keys=True)))
