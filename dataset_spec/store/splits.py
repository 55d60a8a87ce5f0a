"""Which split each row belongs to, in the two configs of a dataset.

``kernels`` (default config): split by *function*, not by group. A function is one
computation at any size: the op, the buffers' names, dtypes, roles and ranks, and the
problem's parameters other than sizes (layouts, alpha, beta, eps, accumulator, ...). Every
size, arch and source of a function hashes to one split (80/10/10). Where one normalised
PTX text still serves rows of two functions that hashed apart (CUTLASS compiles one PTX
for every epilogue alpha/beta), every row with that ``ptx_hash`` moves to the split of
the hash's first row, rows ordered by (group_id, build_key): no PTX text is on two sides.

``kernels_by_shape``: held-out sizes. For a function with at least three sizes, its
largest size (most output elements, then most elements over all buffers, then the
size's text, largest last) is ``test``; of the rest, one size (the smallest
sha256 of seed, function and size) is ``validation`` and the others are ``train``. A
function with fewer than three sizes has no size to hold out: its rows are all ``train``.
The same PTX may sit on both sides of this config by design: its question is whether a
model generalises to an unseen size of functions it has seen.
"""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict

SPLITS = ("train", "validation", "test")
_SPLIT_EDGES = ((80, "train"), (90, "validation"), (100, "test"))
SHAPE_SEED = 0
# Problem parameters that state a size, not the function (docs/shapes.md: CUTLASS rows hold
# M, N, K; Triton rows of a non-default shape set hold ``shape``; grouped GEMMs their
# ``problems`` and the operands' ``offsets`` in the concatenated buffers).
SIZE_PARAMS = frozenset({"M", "N", "K", "shape", "n", "rows", "cols", "batch", "reduction_length",
                         "seq_len", "num_tokens", "problems", "offsets"})


def bucket_split(key: str) -> str:
    """80/10/10 train/validation/test by a stable hash of ``key``."""
    bucket = int(hashlib.sha256(key.encode()).hexdigest(), 16) % 100
    return next(name for edge, name in _SPLIT_EDGES if bucket < edge)


def _problem(problem) -> dict:
    return json.loads(problem) if isinstance(problem, str) else problem


def function_key(problem) -> str:
    """The size-free identity of a problem (its JSON text or dict)."""
    p = _problem(problem)
    buffers = sorted((b["name"], b["dtype"], b.get("role", "in"), len(b["shape"])) for b in p["buffers"])
    params = {k: v for k, v in (p.get("params") or {}).items() if k not in SIZE_PARAMS}
    return json.dumps([p["op"], buffers, params], sort_keys=True)


def size_key(problem) -> str:
    """The size of a problem: its buffers' shapes and its size parameters."""
    p = _problem(problem)
    shapes = sorted((b["name"], list(b["shape"])) for b in p["buffers"])
    sizes = {k: v for k, v in (p.get("params") or {}).items() if k in SIZE_PARAMS}
    return json.dumps([shapes, sizes], sort_keys=True)


def _size_order(problem) -> tuple:
    """Ascending size: output elements, all elements, then the size's text."""
    p = _problem(problem)

    def numel(b):
        n = 1
        for s in b["shape"]:
            n *= int(s)
        return n
    out = sum(numel(b) for b in p["buffers"] if b.get("role") in ("out", "inout"))
    return out, sum(numel(b) for b in p["buffers"]), size_key(p)


def default_splits(rows: list) -> list:
    """Split of each row (dicts with problem, group_id, build_key, ptx_hash) in the
    ``kernels`` config, in the rows' order."""
    by_function = [bucket_split(function_key(r["problem"])) for r in rows]
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["group_id"], rows[i]["build_key"]))
    first_split_of_hash: dict = {}
    for i in order:
        if rows[i].get("ptx_hash"):
            first_split_of_hash.setdefault(rows[i]["ptx_hash"], by_function[i])
    return [first_split_of_hash.get(r.get("ptx_hash") or "", by_function[i]) for i, r in enumerate(rows)]


def moved_by_hash(rows: list, splits: list) -> int:
    """Rows whose split is not their function's (moved to keep a PTX text on one side)."""
    return sum(split != bucket_split(function_key(r["problem"])) for r, split in zip(rows, splits))


def _seeded(function: str, size: str) -> str:
    return hashlib.sha256(f"{SHAPE_SEED}\0{function}\0{size}".encode()).hexdigest()


def shape_splits(rows: list) -> list:
    """Split of each row (dicts with problem) in the ``kernels_by_shape`` config."""
    sizes = defaultdict(dict)  # function -> size key -> order
    keys = []
    for r in rows:
        function, order = function_key(r["problem"]), _size_order(r["problem"])
        sizes[function][order[2]] = order
        keys.append((function, order[2]))
    split_of_size = {}
    for function, by_size in sizes.items():
        ordered = sorted(by_size.values())
        if len(ordered) < 3:
            split_of_size.update({(function, o[2]): "train" for o in ordered})
            continue
        rest = [o[2] for o in ordered[:-1]]
        held = min(rest, key=lambda s: _seeded(function, s))
        split_of_size[(function, ordered[-1][2])] = "test"
        split_of_size.update({(function, s): "validation" if s == held else "train" for s in rest})
    return [split_of_size[k] for k in keys]


def crossing_hashes(rows: list, splits: list) -> dict:
    """ptx_hash -> sorted splits, for every hash found in more than one split."""
    seen = defaultdict(set)
    for r, split in zip(rows, splits):
        if r.get("ptx_hash"):
            seen[r["ptx_hash"]].add(split)
    return {h: sorted(s, key=SPLITS.index) for h, s in seen.items() if len(s) > 1}
