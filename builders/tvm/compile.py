"""Compile TVM's CUDA C to PTX with the pinned nvcc, cached by content.

Outputs are cached under ``~/.cache/ptxds/tvm`` (or ``$PTXDS_TVM_CACHE``) by the hash of
the source, flags, arch and nvcc version, so a rebuild costs no nvcc run.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ptx_tools import CompileError, compile_cuda, toolchain_versions

CACHE_ENV = "PTXDS_TVM_CACHE"
FLAGS = ["-std=c++17", "-O3", "-w"]
COMPILE_TIMEOUT_S = 300


class TvmCompileError(RuntimeError):
    """nvcc rejected TVM's CUDA C; ``log`` holds its message."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


def cache_dir() -> Path:
    root = Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "ptxds" / "tvm"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def nvcc_version() -> str:
    return toolchain_versions()["nvcc"]


def compile_to_ptx(source: str, arch: str, use_cache: bool = True) -> str:
    key = hashlib.sha256("\0".join([source, " ".join(FLAGS), arch, nvcc_version()]).encode()).hexdigest()[:32]
    target = cache_dir() / f"{key}.ptx"
    if use_cache and target.exists():
        return target.read_text()
    try:
        ptx = compile_cuda(source, arch, flags=FLAGS, timeout=COMPILE_TIMEOUT_S)
    except CompileError as exc:
        raise TvmCompileError(str(exc).splitlines()[0], exc.log[-20000:]) from None
    if use_cache:
        partial = target.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(ptx)
        os.replace(partial, target)
    return ptx
