"""CUDA C -> PTX with the pinned nvcc, cached on disk by content: sources that generate
CUDA C (Mirage's lowering, TVM's codegen) compile each translation unit once per
arch, flags and nvcc version, and a rebuild runs no nvcc."""
from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from typing import Sequence

from .toolchain import compile_cuda, toolchain_versions

DEFAULT_FLAGS = ("-std=c++17", "-O3", "-w")


CACHE_ROOT_ENV = "PTXDS_CACHE"  # one folder for every source's cache (``ptxds build --cache``)


def cache_folder(name: str) -> Path:
    """A source's compile cache: ``$PTXDS_<NAME>_CACHE`` where set, else
    ``$PTXDS_CACHE/NAME``, else ``~/.cache/ptxds/NAME``."""
    default_root = Path(os.environ.get(CACHE_ROOT_ENV, Path.home() / ".cache" / "ptxds"))
    root = Path(os.environ.get(f"PTXDS_{name.upper()}_CACHE", default_root / name))
    root.mkdir(parents=True, exist_ok=True)
    return root


def cached_ptx(source: str, arch: str, cache: str, flags: Sequence[str] = DEFAULT_FLAGS,
               timeout: float = 300, use_cache: bool = True) -> str:
    """PTX of ``source`` for ``arch``; raises ptx_tools.CompileError when nvcc rejects it."""
    key_text = "\0".join([source, " ".join(flags), arch, toolchain_versions()["nvcc"]])
    target = cache_folder(cache) / f"{hashlib.sha256(key_text.encode()).hexdigest()[:32]}.ptx"
    if use_cache and target.exists():
        return target.read_text()
    ptx = compile_cuda(source, arch, flags=list(flags), timeout=timeout)
    if use_cache:
        partial = target.with_suffix(f".{uuid.uuid4().hex}.partial")  # readers never see half a file; unique on a shared folder
        partial.write_text(ptx)
        os.replace(partial, target)
    return ptx
