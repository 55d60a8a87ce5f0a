"""Canonical problems: one statement of each function, whatever source built it.

Every source states its problem in its own terms: Triton's GEMM writes ``C``, CUTLASS's and
TVM's write ``D``; TVM's softmax writes ``T_softmax_norm``; Triton records sizes in
``params["shape"]``, CUTLASS in ``M``, ``N``, ``K``; TileLang's problems use the canonical
names already (its fp8 GEMM stores B as N x K: ``layout_b: col``). ``canonical_problem`` restates a
problem with canonical buffer names, roles and parameters, so two sources' problems are
the same function exactly when their canonical problems are equal (``Problem.digest``):

- ``gemm``: buffers ``A``, ``B``, (``C`` when beta != 0), ``D`` (the one output); params
  ``M``, ``N``, ``K``, ``layout_a``, ``layout_b``, ``layout_c`` (row/col: a transposed
  operand is a layout flag), ``alpha``, ``beta``, ``accumulator`` (float32 unless stated)
  and ``math_input`` when the tensor cores read a narrower type. A problem with a
  column-major output is the transposed problem (D^T = B^T A^T): A and B swap, M and N
  swap, every layout flips, so D is always row-major.
- ``softmax``, ``rmsnorm``, ``layernorm``: buffers ``x``, (``w``, ``b``), ``out``; params
  ``shape`` (``M`` rows of ``N``) and ``eps`` for the norms.
- ``attention`` (dataset_spec/attention.py): buffers ``Q``, ``K`` (stored [B, D, Skv]),
  ``V``, ``O``; params ``shape`` (``B``, ``Sq``, ``Skv``, ``D``) and the function's own input
  domain, so every source's problem at one size is one problem. A source states it as the
  registry's ``attention`` op, or as a muGraph (op ``mugraph``) whose float64 evaluation is
  this function on seeded inputs and whose own domain search allows the canonical domain;
  what the muGraph computes decides, never its shapes or a name.

- ``custom`` problems of functions of networks (Inductor kernels, TVM tasks: rows whose
  provenance names their model): the key of what the function computes on seeded inputs,
  buffers ``in<i>``, ``io<i>``, ``out<i>`` (dataset_spec/fused.py).

Any other op, or a problem with a parameter the rules do not know, has no canonical form
(None): its rows keep their source's group. ``canonical_record`` moves a row onto its
canonical problem: group id ``function/<op>/<dtypes>/<layouts>/<epilogue>/<size>``, every
launch argument and blob patch renamed with the buffers, the kernel id recomputed, the
verifier's columns cleared (the group is verified anew, all sources together), and the
source's own problem and group kept in ``provenance`` (``source_problem``,
``source_group_id``).
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Optional

from . import attention as attention_fn
from .ops import ops_where
from .model import (DEFAULT_TRIAL_KINDS, Buffer, Distribution, KernelRecord, Problem,
                    make_kernel_id, to_plain, unverified)

GROUP_PREFIX = "function"
TRANSPOSED = {"row": "col", "col": "row"}
GEMM_PARAMS = frozenset({"M", "N", "K", "shape", "layout_a", "layout_b", "layout_c", "alpha", "beta",
                         "accumulator", "math_input"})
# op -> (canonical input names in order, params other than the size), as each OpSpec states it
ROW_OPS = ops_where("canonical_rows")
DEFAULT_INIT = Distribution("normal", {"mean": 0.0, "std": 1.0})


@dataclass
class Canonical:
    """A canonical problem and how the source's buffer names map onto its names."""
    problem: Problem
    renames: dict  # source buffer name -> canonical name (every buffer of the source problem)


def canonical_problem(problem: Problem, networks: bool = True) -> Optional[Problem]:
    """The canonical statement of ``problem``, or None when its op has no canonical form;
    ``networks``: a ``custom`` problem is keyed as a function of networks (fused.py)."""
    found = canonicalize(problem, networks)
    return found.problem if found else None


def canonicalize(problem: Problem, networks: bool = True) -> Optional[Canonical]:
    """``canonical_problem`` together with the buffer renames that take the source there."""
    if problem.op == "custom":
        if not networks:
            return None
        from .fused import network_function
        found = network_function(problem)
        return Canonical(*found) if found else None
    if problem.op == "gemm":
        return _gemm(problem)
    if problem.op in ROW_OPS:
        return _rows(problem)
    if problem.op in ("attention", "mugraph"):
        return _attention(problem)
    return None


ATTENTION_PARAMS = frozenset({"shape", "input_range", "math_input", "input_choice"})
_MUGRAPH_IS_ATTENTION: dict = {}  # problem digest -> whether its muGraph computes attention


def _attention(problem: Problem) -> Optional[Canonical]:
    outputs = _outputs(problem)
    inputs = [b for b in problem.buffers if b.role == "in"]
    if len(outputs) != 1 or outputs[0].role != "out" or len(inputs) != 3:
        return None
    if any(b.dtype != "float16" for b in problem.buffers):
        return None
    size = attention_fn.size_of([b.shape for b in inputs])
    if size is None or outputs[0].shape != (size[0], size[1], size[3]):
        return None
    canonical_params = attention_fn.params(*size)
    hi = canonical_params["input_range"]["Q"][1]
    if problem.op == "attention":
        if set(problem.params) - ATTENTION_PARAMS or sorted(b.name for b in inputs) != sorted(attention_fn.INPUTS):
            return None
        if problem.params.get("input_range") != canonical_params["input_range"]:
            return None  # another domain is another statement of the function
        inputs = [problem.buffer(name) for name in attention_fn.INPUTS]
    else:
        ranges = problem.params.get("input_range") or {}
        if any(float((ranges.get(b.name) or (0.0, 0.0))[1]) < hi for b in inputs):
            return None  # the muGraph's own search does not allow the function's domain
        digest = problem.digest()
        if digest not in _MUGRAPH_IS_ATTENTION:  # every row of a group shares its problem
            _MUGRAPH_IS_ATTENTION[digest] = attention_fn.computes_attention(problem.params.get("mugraph") or [])
        if not _MUGRAPH_IS_ATTENTION[digest]:
            return None
    renames = {b.name: name for b, name in zip(inputs, attention_fn.INPUTS)}
    renames[outputs[0].name] = attention_fn.OUTPUT
    b, sq, skv, d = size
    label = "/".join([GROUP_PREFIX, "attention", "float16", f"B{b}xSq{sq}xSkv{skv}xD{d}"])
    canonical = Problem(label, "attention", attention_fn.buffers(*size), canonical_params, {},
                        list(DEFAULT_TRIAL_KINDS))
    return Canonical(canonical, renames)


def _outputs(problem: Problem) -> list:
    return [b for b in problem.buffers if b.role in ("out", "inout")]


def _buffer(source: Buffer, name: str, shape=None) -> Buffer:
    return Buffer(name, source.dtype, tuple(shape if shape is not None else source.shape), source.role,
                  copy.deepcopy(source.init))


def _gemm(problem: Problem) -> Optional[Canonical]:
    p = problem.params
    outputs = _outputs(problem)
    names = {b.name for b in problem.buffers}
    if set(p) - GEMM_PARAMS or len(outputs) != 1 or outputs[0].role != "out" or not {"A", "B"} <= names:
        return None
    out = outputs[0]
    inputs = [b for b in problem.buffers if b.role == "in"]
    if {b.name for b in inputs} - {"A", "B", "C"} or any(len(b.shape) != 2 for b in problem.buffers):
        return None
    layouts = {k: p.get(f"layout_{k}", "row") for k in ("a", "b", "c")}
    if set(layouts.values()) - {"row", "col"}:
        return None
    a, b = problem.buffer("A"), problem.buffer("B")
    m, k = a.shape if layouts["a"] == "row" else a.shape[::-1]
    k_b, n = b.shape if layouts["b"] == "row" else b.shape[::-1]
    stated = {d: p.get(d, (p.get("shape") or {}).get(d)) for d in ("M", "N", "K")}
    if k != k_b or any(v is not None and int(v) != actual for v, actual in zip(stated.values(), (m, n, k))):
        return None
    alpha, beta = float(p.get("alpha", 1.0)), float(p.get("beta", 0.0))
    c = problem.buffer("C") if "C" in {x.name for x in inputs} else None
    renames = {"A": "A", "B": "B", out.name: "D"}
    if c is not None:
        renames["C"] = "C"
    if layouts["c"] == "col":  # D^T = B^T A^T: the same arrays as a row-major-output GEMM
        m, n = n, m
        renames.update({"A": "B", "B": "A"})
        layouts = {"a": TRANSPOSED[layouts["b"]], "b": TRANSPOSED[layouts["a"]], "c": "row"}
        a, b = b, a
    if beta == 0.0 and c is not None:
        return None  # a C the launches pass but the function never reads: no canonical statement
    buffers = [_buffer(a, "A"), _buffer(b, "B")] + ([_buffer(c, "C")] if c is not None else []) + [_buffer(out, "D")]
    params = {"M": m, "N": n, "K": k, "layout_a": layouts["a"], "layout_b": layouts["b"],
              "layout_c": layouts["c"], "alpha": alpha, "beta": beta,
              "accumulator": str(p.get("accumulator") or "float32")}
    if p.get("math_input"):
        params["math_input"] = str(p["math_input"])
    dtypes = [a.dtype, b.dtype, params["accumulator"]] + ([f"c{c.dtype}"] if c is not None else []) + [out.dtype]
    if params.get("math_input"):
        dtypes.append(f"{params['math_input']}math")
    label = "/".join([GROUP_PREFIX, "gemm", "_".join(dtypes), "".join(x[0] for x in layouts.values()),
                      f"a{alpha:g}b{beta:g}", f"M{m}xN{n}xK{k}"])
    return _finish(problem, label, buffers, params, renames)


def _rows(problem: Problem) -> Optional[Canonical]:
    input_names, allowed = ROW_OPS[problem.op]
    p = problem.params
    outputs = _outputs(problem)
    inputs = [b for b in problem.buffers if b.role == "in"]
    if set(p) - allowed - {"shape"} or len(outputs) != 1 or outputs[0].role != "out":
        return None
    if len(inputs) == 1 == len(input_names):
        renames = {inputs[0].name: input_names[0]}
    elif sorted(b.name for b in inputs) == sorted(input_names):
        renames = {b.name: b.name for b in inputs}  # several inputs: only their names say which is which
    else:
        return None
    out = outputs[0]
    by_name = {renames[b.name]: b for b in inputs}
    if len(out.shape) != 2 or by_name["x"].shape != out.shape:
        return None
    m, n = out.shape
    shape = p.get("shape")
    if shape is not None and (int(shape.get("M", m)), int(shape.get("N", n))) != (m, n):
        return None
    renames[out.name] = "out"
    buffers = [_buffer(by_name[name], name) for name in input_names] + [_buffer(out, "out")]
    params = {"shape": {"M": m, "N": n}}
    params.update({k: p[k] for k in allowed if k in p})
    dtypes = "_".join(dict.fromkeys(b.dtype for b in buffers))
    extra = [f"eps{params['eps']:g}"] if "eps" in params else []
    label = "/".join([GROUP_PREFIX, problem.op, dtypes, *extra, f"M{m}xN{n}"])
    return _finish(problem, label, buffers, params, renames)


def _finish(problem: Problem, label: str, buffers: list, params: dict, renames: dict) -> Canonical:
    """The canonical Problem; a problem that narrows trials, overrides tolerances or draws
    an input other than the standard normal gets its digest in the id, so one group id
    never names two problems."""
    plain = (not problem.tolerance and list(problem.trial_kinds) == list(DEFAULT_TRIAL_KINDS)
             and all(b.init == DEFAULT_INIT for b in buffers if b.role == "in")
             and all(b.init is None for b in buffers if b.role == "out"))
    canonical = Problem(label, problem.op, buffers, params, dict(problem.tolerance), list(problem.trial_kinds))
    if not plain:
        canonical.problem_id = f"{label}/p{canonical.digest()[:8]}"
    missing = {b.name for b in problem.buffers} - set(renames)
    if missing:
        raise ValueError(f"canonical {problem.op}: buffers {sorted(missing)} of {problem.problem_id} have no "
                         "canonical name")
    return Canonical(canonical, renames)


def rename_launches(launches: list, renames: dict) -> list:
    """The launches with every buffer argument and blob patch renamed (names not in
    ``renames``, e.g. a row's scratch buffers, are kept)."""
    launches = copy.deepcopy(launches)
    for launch in launches:
        for arg in launch.args:
            if arg.kind == "buffer":
                arg.buffer = renames.get(arg.buffer, arg.buffer)
            for patch in arg.patches:
                patch.buffer = renames.get(patch.buffer, patch.buffer)
    return launches


def canonical_record(record: KernelRecord) -> KernelRecord:
    """``record`` moved onto its canonical problem and group (a copy), or ``record`` itself
    when its problem has no canonical form or already is canonical."""
    found = canonicalize(record.problem, networks=bool(record.provenance.get("model")))
    if found is None or (found.problem.digest() == record.problem.digest()
                         and record.group_id == found.problem.problem_id):
        return record
    clash = {b.name for b in record.scratch} & {b.name for b in found.problem.buffers}
    if clash:
        raise ValueError(f"{record.name}: scratch buffer {sorted(clash)[0]!r} has a canonical buffer's name; "
                         "rename the scratch buffer in its builder")
    # a row moved into a canonical group is unverified
    row = unverified(copy.deepcopy(record))
    row.provenance.setdefault("source_problem", to_plain(record.problem))
    row.provenance.setdefault("source_group_id", record.group_id)
    row.problem, row.group_id = found.problem, found.problem.problem_id
    row.launches = rename_launches(record.launches, found.renames)
    if row.ptx_hash and not row.kernel_id.startswith("unbuilt-"):
        row.kernel_id = make_kernel_id(row.ptx_hash, row.launches, row.problem, row.arch)
    return row


def unify_network_groups(rows: list, present: list = ()) -> dict:
    """Gives every function-of-networks group that several sources state (rows moved by
    ``canonical_record``) one problem, ``fused.unify`` of theirs, and recomputes the moved
    rows' kernel ids; returns {old kernel id: new}. Raises ValueError when ``present`` (rows
    already in the target) states such a group with a problem these rows would change."""
    from .fused import GROUP_PREFIX, unify
    groups: dict = {}
    for row in rows:
        if row.group_id.startswith(GROUP_PREFIX + "/"):
            groups.setdefault(row.group_id, []).append(row)
    stated = {}
    for row in present:
        if row.group_id in groups:
            stated.setdefault(row.group_id, row.problem)
    changed = {}
    for group, members in groups.items():
        problems = {r.problem.digest(): r.problem for r in members}
        if group in stated:
            problems[stated[group].digest()] = stated[group]
        if len(problems) < 2:
            continue
        problem = unify(list(problems.values()))
        if group in stated and stated[group].digest() != problem.digest():
            raise ValueError(f"{group} is already in the target with the statement of fewer sources; "
                             "merge every source of these functions into a new folder at once")
        for row in members:
            row.problem = problem
            if row.ptx_hash and not row.kernel_id.startswith("unbuilt-"):
                new = make_kernel_id(row.ptx_hash, row.launches, row.problem, row.arch)
                changed[row.kernel_id], row.kernel_id = new, new
    return changed


def source_problem(record: KernelRecord) -> Problem:
    """The problem as the row's source stated it (its own problem when never moved)."""
    stored = record.provenance.get("source_problem")
    if isinstance(stored, str):
        stored = json.loads(stored)
    return Problem(**stored) if stored else record.problem
