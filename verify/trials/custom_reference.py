"""Users' reference functions (op ``custom``) evaluated where they are fastest: in float64 on
the GPU when the function computes the same there as with numpy, and kept on disk per input
content (reference_cache.py).

A user's function is written for numpy arrays. Two routes run it on the GPU: torch tensors
handed to the function unchanged (``x @ w + b``, ``(x * y).sum(1)`` run as they are), and
CuPy, with the function's ``np`` bound to CuPy (array_namespace.py: ``np.exp``,
``np.arange``, ``np.take_along_axis`` as written). The first time a function is met, one
trial is evaluated with numpy and on each route in turn: the first route whose answer has
numpy's keys and shapes, its NaNs in the same places and every other element within
float64 reassociation of numpy's, on that trial and on the same trial with NaN, infinities,
zeros, subnormals and huge values written over some elements, is the function's from then on; with none (an error,
calls neither library has, another answer) it stays on the host. The verdict is kept with
the cache, keyed by the function's code and the libraries' versions, so it is found once
per function, not once per run. GPU work runs under the verifier's quiet lock (no reference
kernel beside a timed member) and is finished before the lock is let go.

A problem prepared on the device (its trials drawn on the host, then references, bounds
and coverage computed there: runner.prepare_device) calls ``evaluate_tensors``: the
function's route on the trial's tensors, or numpy on a copy brought back where it has none.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
import sys
import threading
import uuid
import weakref
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from dataset_spec.ops.custom import _load_custom, rounded_custom
from dataset_spec.ops.spec import is_tensor
from ptx_tools.ptx_cache import cache_folder

from . import reference_cache
from .array_namespace import cupy_namespace, import_cupy, rebound

CUSTOM_OP = "custom"
# Ways a numpy-written function runs on the GPU, tried in this order (see the module's text)
ROUTES = ("torch", "cupy")
# The GPU's float64 answer differs from numpy's by summation order only (about 1e-16 x the
# reduction length, relative to the largest magnitude); a different function differs by far more.
AGREEMENT_RTOL = 1e-9
# Written over every SPECIALS_EVERY-th input element when a route is checked: a function may
# agree with numpy on ordinary values and not on these (NaN ordering, inf - inf, underflow).
SPECIALS = (np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -1e300, 1e300)
SPECIALS_EVERY = 97
# The check a kept verdict passed ("specials": the trial and the trial with specials); a
# verdict kept by an older check is found again
VERDICT_FORM = "specials"
# Below this many input elements the copy to the GPU costs more than numpy's work.
MIN_GPU_ELEMENTS = 1 << 16

_VERDICTS: dict = {}
_VERDICT_LOCKS: dict = {}
_LOCKS_LOCK = threading.Lock()
_CUPY_COPIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # function -> its copy on CuPy


def function_identity(problem, attribute: str) -> Optional[str]:
    """The function's code as one string (the module text shipped in the problem, else the
    module file's text and every Python file beside it), or None when it has no readable
    source (then nothing about it is kept)."""
    target = str(problem.params.get("reference"))
    source = problem.params.get("reference_source")
    if not source:
        func = _load_custom(problem, attribute, required=False)
        module = sys.modules.get(getattr(func, "__module__", ""), None)
        try:
            path = Path(inspect.getsourcefile(module))
        except (TypeError, OSError):
            return None
        # helpers the module imports from its own folder change its answers too
        source = "".join(f"{p.name}\0{p.read_text(errors='replace')}\0" for p in sorted(path.parent.glob("*.py")))
    return hashlib.sha256(f"{target}\0{attribute}\0{source}".encode()).hexdigest()


def _cupy_version() -> str:
    cupy = import_cupy()
    return "none" if cupy is None else str(cupy.__version__)


def _verdict_path(identity: str, torch) -> Path:
    return (cache_folder(reference_cache.CACHE_NAME) / "verdicts"
            / f"{identity[:40]}-{VERDICT_FORM}-torch{torch.__version__}-cupy{_cupy_version()}.json")


def _kept_verdict(identity: str, torch) -> Optional[str]:
    """The kept route ('' for the host), or None when none is kept."""
    try:
        kept = json.loads(_verdict_path(identity, torch).read_text())
        return str(kept["route"]) if kept["route"] in ("",) + ROUTES else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep_verdict(identity: str, torch, route: str, reason: str) -> None:
    path = _verdict_path(identity, torch)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}.partial")
        partial.write_text(json.dumps({"on_gpu": bool(route), "route": route, "reason": reason}))
        os.replace(partial, path)
    except OSError:
        pass


def _lock_for(identity: str) -> threading.Lock:
    with _LOCKS_LOCK:
        return _VERDICT_LOCKS.setdefault(identity, threading.Lock())


def run_route(route: str, func: Callable, tensors: dict, problem, torch) -> Optional[dict]:
    """``func`` over ``tensors`` (float64, one device) on ``route``, as float64 tensors there;
    None when the route gives no arrays of its own (torch: host arrays or values torch cannot
    carry; CuPy: no CuPy on this machine, or host arrays). Raises whatever the function raises."""
    if route == "torch":
        out = func(tensors, problem)
        if out is None or not isinstance(out, dict) or not all(torch.is_tensor(v) for v in out.values()):
            return None
        return {k: v.detach().to(torch.float64) for k, v in out.items()}
    if route == "cupy":
        namespace = cupy_namespace()
        device = next(iter(tensors.values())).device if tensors else None
        if namespace is None or device is None or device.type != "cuda":
            return None
        cupy = import_cupy()
        with cupy.cuda.Device(device.index or 0):
            try:
                arrays = {k: cupy.from_dlpack(v.contiguous()) for k, v in tensors.items()}
                out = _on_cupy(func, namespace)(arrays, problem)
                if out is None or not isinstance(out, dict) or not all(isinstance(v, cupy.ndarray)
                                                                       for v in out.values()):
                    return None
                return {k: torch.from_dlpack(cupy.ascontiguousarray(v, dtype=cupy.float64)) for k, v in out.items()}
            finally:
                # CuPy's pool would keep the function's temporaries cached, out of torch's
                # reach; the answers (shared with torch through DLPack) stay in use
                cupy.get_default_memory_pool().free_all_blocks()
    raise ValueError(f"unknown route {route!r}")


def _on_cupy(func: Callable, namespace) -> Callable:
    """``func`` with its ``np`` bound to CuPy, made once per function (the user's modules are
    loaded once, so a function is the same object on every trial)."""
    copy = _CUPY_COPIES.get(func)
    if copy is None:
        copy = _CUPY_COPIES[func] = rebound(func, namespace)
    return copy


def on_device(func: Callable, values: dict, problem, torch, device, quiet=None, route: str = "torch") -> Optional[dict]:
    """``func`` over ``values`` as float64 tensors on ``device`` (through ``route``), as
    float64 numpy arrays; None when the route gives no arrays of its own. Raises whatever
    the function raises."""
    def run():
        tensors = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)).to(device)
                   for k, v in values.items()}
        out = run_route(route, func, tensors, problem, torch)
        if out is None:
            return None
        host = {k: v.cpu().numpy() for k, v in out.items()}
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return host
    if quiet is None:
        return run()
    with quiet:
        return run()


def with_specials(values: dict) -> dict:
    """``values`` with NaN, both infinities, both zeros, the smallest subnormal and huge
    magnitudes written over every SPECIALS_EVERY-th element of each array that holds
    non-integers (arrays of whole numbers, such as labels or indices, are left alone)."""
    out = {}
    for name, value in values.items():
        array = np.asarray(value, dtype=np.float64)
        if array.size < 2 * SPECIALS_EVERY or np.array_equal(array, np.round(array)):
            out[name] = value
            continue
        array = array.copy()
        flat = array.reshape(-1)
        count = len(flat[::SPECIALS_EVERY])
        flat[::SPECIALS_EVERY] = np.resize(np.array(SPECIALS, dtype=np.float64), count)
        out[name] = array
    return out


def _answer_on(func: Callable, values: dict, problem, torch, device, quiet, route: str) -> tuple:
    """(``route``'s answer on ``values`` or None, why it gave none or '')."""
    try:
        return on_device(func, values, problem, torch, device, quiet, route), ""
    except Exception as exc:  # numpy-only code fails on another library's arrays in many ways
        return None, f"{type(exc).__name__}: {exc}"


def _agrees_on(func: Callable, values: dict, problem, torch, device, quiet, route: str,
               want: Optional[dict]) -> str:
    """Why ``route``'s answer on ``values`` is not numpy's ``want`` ('' when it is)."""
    got, reason = _answer_on(func, values, problem, torch, device, quiet, route)
    return reason or disagreement(got, want)


def _find_route(func: Callable, values: dict, problem, torch, device, quiet=None) -> tuple:
    """(the first route whose answer is numpy's on ``values`` and on the same values with
    specials written over some elements, or ''; why the others are not; numpy's answer on
    ``values``). A function numpy itself cannot evaluate on the specials is judged on
    ``values`` alone."""
    reasons, want, specials = [], None, None
    for index, route in enumerate(ROUTES):
        got, reason = _answer_on(func, values, problem, torch, device, quiet, route)
        if index == 0:
            want = _host(func, values, problem)
        reason = reason or disagreement(got, want)
        if not reason and specials is None:  # numpy on the specials, once, when a route needs it
            special_values = with_specials(values)
            try:
                with np.errstate(all="ignore"):
                    specials = (special_values, _host(func, special_values, problem))
            except Exception:  # not defined there: the ordinary values decide alone
                specials = (special_values, None)
        if not reason and specials[1] is not None:
            reason = _agrees_on(func, specials[0], problem, torch, device, quiet, route, specials[1])
            reason = f"with specials: {reason}" if reason else ""
        if not reason:
            return route, "", want
        reasons.append(f"{route}: {reason}"[:300])
    return "", "; ".join(reasons), want


def disagreement(on_gpu: Optional[dict], on_host) -> str:
    """Why the GPU's answer is not numpy's ('' when it is, to float64 reassociation)."""
    if on_gpu is None:
        return "the function gave no tensors"
    if on_host is None:
        return "" if not on_gpu else "numpy gave no value"
    if set(on_gpu) != set(on_host):
        return f"outputs {sorted(on_gpu)} against numpy's {sorted(on_host)}"
    for name, want in on_host.items():
        want, got = np.asarray(want, dtype=np.float64), np.asarray(on_gpu[name], dtype=np.float64)
        if got.shape != want.shape:
            return f"output {name}: shape {got.shape} against numpy's {want.shape}"
        if not np.array_equal(np.isnan(got), np.isnan(want)):
            return f"output {name}: NaN in other places than numpy's"
        finite = np.isfinite(want)
        if not np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]):
            return f"output {name}: infinities differ from numpy's"
        scale = float(np.max(np.abs(want[finite]))) if finite.any() else 0.0
        worst = float(np.max(np.abs(got[finite] - want[finite]))) if finite.any() else 0.0
        if worst > AGREEMENT_RTOL * max(scale, np.finfo(np.float64).tiny):
            return f"output {name}: differs from numpy's by {worst:.3g} (largest |value| {scale:.3g})"
    return ""


def _host(func: Callable, values: dict, problem) -> Optional[dict]:
    out = func(values, problem)
    return None if out is None else {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def evaluate(func: Callable, values: dict, problem, identity: Optional[str], torch=None, device=None,
             quiet=None):
    """``func(values, problem)`` in float64: from the cache, else on ``device`` (torch) once
    the function is known to agree there, else with numpy; kept in the cache when large.
    ``torch``/``device`` None: the host only."""
    key = None
    if identity is not None and reference_cache.worth_keeping(values):
        key = reference_cache.entry_key(identity, problem.to_json(), values)
        kept = reference_cache.load(key)
        if kept is not None:
            return kept
    done, out = False, None
    if torch is not None and identity is not None and sum(np.size(v) for v in values.values()) >= MIN_GPU_ELEMENTS:
        done, out = _on_gpu_if_it_agrees(func, values, problem, identity, torch, device, quiet)
    if not done:
        out = _host(func, values, problem)
    if key is not None and out is not None:
        reference_cache.store(key, out)
    return out


def _route_of(func, values, problem, identity, torch, device, quiet) -> tuple:
    """(the function's route, numpy's answer on ``values`` when this call found the route,
    else None): the route is found once, by one thread, and kept."""
    route = _VERDICTS.get(identity)
    if route is not None:
        return route, None
    with _lock_for(identity):  # one thread finds the verdict; the others wait for it
        route = _VERDICTS.get(identity)
        if route is None:
            route = _kept_verdict(identity, torch)
        if route is not None:
            _VERDICTS[identity] = route
            return route, None
        route, reason, want = _find_route(func, values, problem, torch, device, quiet)
        _keep_verdict(identity, torch, route, reason)
        _VERDICTS[identity] = route
        return route, want


def _on_gpu_if_it_agrees(func, values, problem, identity, torch, device, quiet) -> tuple:
    """(True, answer) when the GPU gave it, or when this trial found the function's verdict
    (it then holds numpy's answer: the trial is not computed twice); (False, None) when the
    function runs on the host."""
    route, want = _route_of(func, values, problem, identity, torch, device, quiet)
    if want is not None:
        return True, want
    if not route:
        return False, None
    try:
        got = on_device(func, values, problem, torch, device, quiet, route)
    except Exception:  # a path of the function this trial's values take that the route lacks
        return False, None
    return got is not None, got


def _tensors(values: dict) -> bool:
    return bool(values) and all(is_tensor(v) for v in values.values())


def evaluate_tensors(func: Callable, tensors: dict, problem, identity: Optional[str]) -> Optional[dict]:
    """``func(tensors, problem)`` in float64 where ``tensors`` are (a trial prepared on the
    device): on the function's route, else with numpy on a copy brought to the host (numpy's
    answer is then taken back to the device). The caller holds the device's quiet lock."""
    import torch
    device = next(iter(tensors.values())).device
    host = None

    def on_host() -> dict:
        nonlocal host
        if host is None:
            host = {k: v.detach().cpu().numpy() for k, v in tensors.items()}
        return host

    route, want = "", None
    if identity is not None:
        route = _VERDICTS.get(identity)
        if route is None:
            route, want = _route_of(func, on_host(), problem, identity, torch, device, None)
    if want is None and route:
        try:
            out = run_route(route, func, tensors, problem, torch)
        except Exception:  # a path of the function these values take that the route lacks
            out = None
        if out is not None:
            return out
    if want is None:
        want = _host(func, on_host(), problem)
    if want is None:
        return None
    return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)).to(device) for k, v in want.items()}


def evaluating_op(op, torch=None, device=None, quiet=None):
    """``op`` with its reference and error scale evaluated through ``evaluate`` (the cache,
    and the GPU when ``torch`` and ``device`` are given); other ops are returned unchanged."""
    if op.name != CUSTOM_OP:
        return op
    # (problem digest, attribute) -> function_identity: the module's folder is read once per
    # op, not once per trial
    identities: dict = {}

    def identity(problem, attribute: str) -> Optional[str]:
        key = (problem.digest(), attribute)
        if key not in identities:
            identities[key] = function_identity(problem, attribute)
        return identities[key]

    def reference(values, problem):
        func = _load_custom(problem, "reference")
        if _tensors(values):
            return evaluate_tensors(func, values, problem, identity(problem, "reference"))
        return evaluate(func, values, problem, identity(problem, "reference"), torch, device, quiet)

    def error_scale(values, problem):
        func = _load_custom(problem, "error_scale", required=False)
        if func is None:
            return None
        if _tensors(values):
            return evaluate_tensors(func, values, problem, identity(problem, "error_scale"))
        return evaluate(func, values, problem, identity(problem, "error_scale"), torch, device, quiet)

    def pointwise_scale(values, problem, reference):
        if not _tensors(values):
            return op.pointwise_scale(values, problem, reference)
        return rounded_custom(values, problem, reference,
                              call=lambda func: evaluate_tensors(func, values, problem, identity(problem, "rounded")))

    return dataclasses.replace(op, reference=reference, error_scale=error_scale, pointwise_scale=pointwise_scale)
