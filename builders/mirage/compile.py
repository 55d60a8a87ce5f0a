"""Compile a muGraph's CUDA translation unit to PTX with the pinned nvcc, cached by content.

Outputs are cached under ``~/.cache/ptxds/mirage`` (or ``$PTXDS_MIRAGE_CACHE``) by the hash
of the source, flags, arch and nvcc version, so a rebuild costs nothing.
"""
from __future__ import annotations

from ptx_tools import CompileError, toolchain_versions
from ptx_tools.ptx_cache import DEFAULT_FLAGS, cached_ptx

FLAGS = list(DEFAULT_FLAGS)
COMPILE_TIMEOUT_S = 300


class MirageCompileError(RuntimeError):
    """nvcc rejected a lowered muGraph; ``log`` holds its message."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


def nvcc_version() -> str:
    return toolchain_versions()["nvcc"]


def compile_to_ptx(source: str, arch: str, use_cache: bool = True) -> str:
    try:
        return cached_ptx(source, arch, "mirage", FLAGS, COMPILE_TIMEOUT_S, use_cache)
    except CompileError as exc:
        raise MirageCompileError(str(exc).splitlines()[0], exc.log[-20000:]) from None
