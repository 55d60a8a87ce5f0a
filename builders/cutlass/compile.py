"""Compile CUTLASS kernel batches to PTX and build Params packers, with a content cache.

nvcc, its version and its time/memory limits all come from ``ptx_tools`` (the pinned CUDA
wheels). Every output is cached under ``~/.cache/ptxds/cutlass`` (or
``$PTXDS_CUTLASS_CACHE``) by the hash of its source, flags and toolchain, so a rebuild costs
nothing; ``ptxds build --cache DIR`` points it at a folder that several machines share.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ptx_tools import CompileError, compile_cuda, find_tool, toolchain_versions
from ptx_tools.ptx_cache import cache_folder
from ptx_tools.toolchain import run_tool

COMPILE_TIMEOUT_S = 900
BASE_FLAGS = ["-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG", "-w",
              "-DCUTLASS_ENABLE_TENSOR_CORE_MMA=1"]
HOST_DIR = Path(__file__).with_name("host")


class CutlassCompileError(RuntimeError):
    """nvcc failed; ``log`` holds its message."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


def cache_dir() -> Path:
    return cache_folder("cutlass")


def cutlass_include_dirs() -> list[Path]:
    import cutlass_library
    root = Path(cutlass_library.__file__).parent / "source"
    return [root / "include", root / "tools" / "util" / "include"]


def cutlass_version() -> str:
    from importlib.metadata import version
    return version("nvidia-cutlass")


def nvcc_version() -> str:
    return toolchain_versions()["nvcc"]


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


@dataclass
class CompileResult:
    """PTX text of one translation unit, the seconds nvcc took (0 on a cache hit)."""
    ptx: str
    seconds: float
    cached: bool


def compile_to_ptx(source: str, arch: str, use_cache: bool = True) -> CompileResult:
    """PTX for ``source`` compiled for ``arch`` (``sm_80``, ``sm_90a``)."""
    key = _digest("ptx", source, BASE_FLAGS, arch, nvcc_version(), cutlass_version())
    target = cache_dir() / "ptx" / f"{key}.ptx"
    if use_cache and target.exists():
        return CompileResult(target.read_text(), 0.0, True)
    with _made_once(target, use_cache):
        if use_cache and target.exists():  # another process compiled it while this one waited
            return CompileResult(target.read_text(), 0.0, True)
        start = time.perf_counter()
        try:
            ptx = compile_cuda(source, arch, flags=BASE_FLAGS, include_dirs=cutlass_include_dirs(),
                               timeout=COMPILE_TIMEOUT_S)
        except CompileError as exc:
            raise CutlassCompileError(str(exc).splitlines()[0], exc.log[-20000:]) from None
        seconds = time.perf_counter() - start
        if use_cache:
            _atomic_write(target, ptx)
    return CompileResult(ptx, seconds, False)


@contextlib.contextmanager
def _made_once(target: Path, use_cache: bool = True):
    """Held while ``target`` is made: another process asking for the same artifact (a
    parallel test worker, a build worker) waits, then reads it instead of running nvcc for
    minutes again. Where the folder takes no lock (some network file systems), both compile."""
    if not use_cache:
        yield
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            pass
        yield  # closing the file lets the lock go


def packer_flags(arch: str) -> list[str]:
    flags = BASE_FLAGS + [f"-arch={arch}", "-O1", "-I", str(HOST_DIR)]
    if arch.startswith("sm_9"):
        # Call cuTensorMapEncodeTiled by name, so the packer's own recording definition
        # (host/tensormap_recorder.h) answers instead of the driver.
        flags += ["-DCUTLASS_PACK_3X", "-DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL"]
    return flags


def build_packer(source: str, arch: str, use_cache: bool = True) -> Path:
    """A host executable from ``source`` (see host/packer.h); no device code."""
    headers = [(p.name, p.read_text()) for p in sorted(HOST_DIR.glob("*.h"))]
    flags = packer_flags(arch)
    key = _digest("packer", source, headers, flags, nvcc_version(), cutlass_version())
    target = cache_dir() / "packers" / key
    if use_cache and target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _made_once(target, use_cache):
        if not (use_cache and target.exists()):  # else another process built it while this one waited
            _compile_packer(source, flags, target)
    return target


def _compile_packer(source: str, flags: list, target: Path) -> None:
    nvcc = find_tool("nvcc")
    with tempfile.TemporaryDirectory(prefix="ptxds_cutlass_") as tmp:
        tmp = Path(tmp)
        (tmp / "packer.cu").write_text(source)
        include = [a for d in cutlass_include_dirs() for a in ("-I", str(d))]
        # Host code only: the packer never launches, so no kernel is instantiated and the
        # device pass has nothing heavy to compile. The wheel's cudart lives beside bin/.
        args = [nvcc, *flags, *include, "packer.cu", "-o", "packer",
                "-L", nvcc.parent.parent / "lib", "-cudart", "static"]
        try:
            proc = run_tool(args, timeout=COMPILE_TIMEOUT_S, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise CutlassCompileError(f"nvcc timed out after {COMPILE_TIMEOUT_S}s") from None
        if proc.returncode != 0:
            raise CutlassCompileError(f"nvcc exited with {proc.returncode}", proc.stdout[-20000:])
        partial = target.with_suffix(f".{uuid.uuid4().hex}.partial")
        shutil.copy2(tmp / "packer", partial)
        os.replace(partial, target)


def _atomic_write(path: Path, text: str) -> None:
    # A unique temp name: machines sharing a cache folder (--cache) can have equal pids.
    partial = path.with_suffix(path.suffix + f".{uuid.uuid4().hex}.partial")
    partial.write_text(text)
    os.replace(partial, path)
