"""A reference function written for numpy, run on another array library with numpy's API
(CuPy on the GPU): the function, and the functions of its own modules that it calls, see
that library wherever their code says ``np`` or ``numpy``.

Users write references for numpy (``np.exp``, ``np.arange``, ``np.take_along_axis``); CuPy
offers the same names for arrays on the GPU. Handing CuPy arrays to the unchanged function
is not enough: ``np.zeros`` or ``np.arange`` would still make host arrays, and mixing the two
fails. ``rebound`` copies the function with module globals in which numpy is replaced by a
``Namespace`` of the library. Whether the copy computes what numpy does is not assumed: the
caller compares one trial both ways first (custom_reference.py).
"""
from __future__ import annotations

import contextlib
import functools
import os
import types

import numpy as np

from ptx_tools.ptx_cache import cache_folder

# Modules whose functions are never copied: the array libraries themselves.
_LIBRARIES = ("numpy", "cupy", "cupyx", "torch", "scipy")


class Namespace:
    """numpy's names as ``library`` has them (``overrides`` first), else numpy's own (dtypes,
    constants and helpers such as ``finfo`` that take no arrays)."""

    def __init__(self, library, overrides: dict):
        self._library, self._overrides = library, dict(overrides)

    def __getattr__(self, name: str):
        if name in self._overrides:
            return self._overrides[name]
        found = getattr(self._library, name, None)
        return found if found is not None else getattr(np, name)


def _errstate(**_ignored):
    """numpy's errstate where the library raises no floating-point warnings."""
    return contextlib.nullcontext()


@functools.lru_cache(maxsize=1)
def cupy_namespace():
    """numpy's names on CuPy (the GPU), or None without CuPy (one per process: the CuPy
    copies of users' functions are kept per function against it)."""
    cupy = import_cupy()
    return None if cupy is None else Namespace(cupy, {"errstate": _errstate})


@functools.lru_cache(maxsize=1)
def import_cupy():
    """The cupy module (None without CuPy), its compiled kernels kept in ptxds's cache folder."""
    # CuPy compiles its kernels with NVRTC on first use (a minute or two for a set of users'
    # functions on a fresh machine) and fixes its cache folder when it is imported; kept
    # beside ptxds's own caches, a cluster's shared ``$PTXDS_CACHE`` carries them to every
    # node. A CUPY_CACHE_DIR the user set stays.
    os.environ.setdefault("CUPY_CACHE_DIR", str(cache_folder("cupy")))
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def _uses_numpy(func: types.FunctionType) -> bool:
    module = str(func.__globals__.get("__name__", ""))
    if module.split(".")[0] in _LIBRARIES:
        return False
    return any(value is np for value in func.__globals__.values())


def rebound(func, namespace):
    """``func`` seeing ``namespace`` where its module (and every module of the functions it
    reaches through module globals) has numpy; the originals are unchanged."""
    copies: dict = {}  # id(original globals) -> the copy's globals

    def globals_for(original: dict) -> dict:
        if id(original) in copies:
            return copies[id(original)]
        changed = dict(original)
        copies[id(original)] = changed
        for name, value in original.items():
            if value is np:
                changed[name] = namespace
            elif isinstance(value, types.FunctionType) and _uses_numpy(value):
                changed[name] = copy(value, globals_for(value.__globals__))
        return changed

    def copy(function: types.FunctionType, new_globals: dict) -> types.FunctionType:
        made = types.FunctionType(function.__code__, new_globals, function.__name__, function.__defaults__,
                                  function.__closure__)
        made.__kwdefaults__ = function.__kwdefaults__
        made.__dict__.update(function.__dict__)
        return made

    if not isinstance(func, types.FunctionType) or not _uses_numpy(func):
        return func
    return copy(func, globals_for(func.__globals__))
