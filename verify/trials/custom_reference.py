"""Users' reference functions (op ``custom``) evaluated where they are fastest: in float64 on
the GPU through torch when the function computes the same there as with numpy, and kept on
disk per input content (reference_cache.py).

A user's function is written for numpy arrays; many (``x @ w + b``, ``(x * y).sum(1)``) run
unchanged on torch tensors. The first time a function is met, one trial is evaluated both
ways: when the GPU's answer has numpy's keys and shapes, its NaNs in the same places and
every other element within float64 reassociation of numpy's, the function runs on the GPU
from then on; otherwise (an error, numpy-only calls, another answer) it stays on the host.
The verdict is kept with the cache, keyed by the function's code and torch's version, so
it is found once per function, not once per run. GPU work runs under the verifier's quiet
lock (no reference kernel beside a timed member) and is finished before the lock is let go.
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
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from dataset_spec.ops.custom import _load_custom
from ptx_tools.ptx_cache import cache_folder

from . import reference_cache

CUSTOM_OP = "custom"
# The GPU's float64 answer differs from numpy's by summation order only (about 1e-16 x the
# reduction length, relative to the largest magnitude); a different function differs by far more.
AGREEMENT_RTOL = 1e-9
# Below this many input elements the copy to the GPU costs more than numpy's work.
MIN_GPU_ELEMENTS = 1 << 16

_VERDICTS: dict = {}
_VERDICT_LOCKS: dict = {}
_LOCKS_LOCK = threading.Lock()


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


def _verdict_path(identity: str, torch) -> Path:
    return cache_folder(reference_cache.CACHE_NAME) / "verdicts" / f"{identity[:40]}-torch{torch.__version__}.json"


def _kept_verdict(identity: str, torch) -> Optional[bool]:
    try:
        return bool(json.loads(_verdict_path(identity, torch).read_text())["on_gpu"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep_verdict(identity: str, torch, on_gpu: bool, reason: str) -> None:
    path = _verdict_path(identity, torch)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}.partial")
        partial.write_text(json.dumps({"on_gpu": on_gpu, "reason": reason}))
        os.replace(partial, path)
    except OSError:
        pass


def _lock_for(identity: str) -> threading.Lock:
    with _LOCKS_LOCK:
        return _VERDICT_LOCKS.setdefault(identity, threading.Lock())


def on_device(func: Callable, values: dict, problem, torch, device, quiet=None) -> Optional[dict]:
    """``func`` over ``values`` as float64 tensors on ``device``, as float64 numpy arrays;
    None when it does not give tensors (it returned host arrays, or a value torch cannot
    carry). Raises whatever the function raises."""
    def run():
        tensors = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)).to(device)
                   for k, v in values.items()}
        out = func(tensors, problem)
        if out is None:
            return None
        if not isinstance(out, dict) or not all(torch.is_tensor(v) for v in out.values()):
            return None
        host = {k: v.detach().to(torch.float64).cpu().numpy() for k, v in out.items()}
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return host
    if quiet is None:
        return run()
    with quiet:
        return run()


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


def _on_gpu_if_it_agrees(func, values, problem, identity, torch, device, quiet) -> tuple:
    """(True, answer) when the GPU gave it, or when this trial found the function's verdict
    (it then holds numpy's answer: the trial is not computed twice); (False, None) when the
    function runs on the host."""
    verdict = _VERDICTS.get(identity)
    if verdict is None:
        with _lock_for(identity):  # one thread finds the verdict; the others wait for it
            verdict = _VERDICTS.get(identity)
            if verdict is None:
                verdict = _kept_verdict(identity, torch)
            if verdict is None:
                try:
                    got, reason = on_device(func, values, problem, torch, device, quiet), ""
                except Exception as exc:  # numpy-only code fails on tensors in many ways
                    got, reason = None, f"{type(exc).__name__}: {exc}"
                want = _host(func, values, problem)
                reason = reason or disagreement(got, want)
                _keep_verdict(identity, torch, not reason, reason)
                _VERDICTS[identity] = not reason
                return True, want
            _VERDICTS[identity] = verdict
    if not verdict:
        return False, None
    try:
        got = on_device(func, values, problem, torch, device, quiet)
    except Exception:  # a path of the function this trial's values take that torch lacks
        return False, None
    return got is not None, got


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
        return evaluate(func, values, problem, identity(problem, "reference"), torch, device, quiet)

    def error_scale(values, problem):
        func = _load_custom(problem, "error_scale", required=False)
        if func is None:
            return None
        return evaluate(func, values, problem, identity(problem, "error_scale"), torch, device, quiet)

    return dataclasses.replace(op, reference=reference, error_scale=error_scale)
