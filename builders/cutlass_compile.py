"""Compile CUTLASS kernel batches to PTX and build Params packers, with a content cache.

nvcc comes from the pinned CUDA pip wheels (``ptx_tools.find_tool`` when available). Every
output is cached under ``~/.cache/ptxds/cutlass`` (or ``$PTXDS_CUTLASS_CACHE``) by the hash
of its source, flags and toolchain, so a rebuild costs nothing.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

COMPILE_TIMEOUT_S = 900


class CutlassCompileError(RuntimeError):
    """nvcc failed; ``log`` holds its message."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


def cache_dir() -> Path:
    root = Path(os.environ.get("PTXDS_CUTLASS_CACHE", Path.home() / ".cache" / "ptxds" / "cutlass"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def find_nvcc() -> Path:
    try:
        from ptx_tools import find_tool  # the project's toolchain locator, when present
        return Path(find_tool("nvcc"))
    except Exception:
        pass
    for base in [Path(p) for p in sys.path if p.endswith("site-packages")]:
        candidate = base / "nvidia" / "cu13" / "bin" / "nvcc"
        if candidate.exists():
            return candidate
    found = shutil.which("nvcc")
    if not found:
        raise CutlassCompileError("nvcc not found; install the pinned nvidia-cuda-nvcc wheel")
    return Path(found)


def cutlass_include_dirs() -> list[Path]:
    import cutlass_library
    root = Path(cutlass_library.__file__).parent / "source"
    return [root / "include", root / "tools" / "util" / "include"]


def cutlass_version() -> str:
    from importlib.metadata import version
    return version("nvidia-cutlass")


def nvcc_version() -> str:
    out = subprocess.run([str(find_nvcc()), "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release [\d.]+, V([\d.]+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


BASE_FLAGS = ["-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG", "-w",
              "-DCUTLASS_ENABLE_TENSOR_CORE_MMA=1"]


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _run_nvcc(args: list[str], cwd: Path) -> None:
    env = dict(os.environ)
    nvcc = find_nvcc()
    env["PATH"] = f"{nvcc.parent}:{env.get('PATH', '')}"
    try:
        proc = subprocess.run([str(nvcc), *args], cwd=cwd, capture_output=True, text=True,
                              timeout=COMPILE_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        raise CutlassCompileError(f"nvcc timed out after {COMPILE_TIMEOUT_S}s") from None
    if proc.returncode != 0:
        log = (proc.stderr + proc.stdout)[-20000:]
        raise CutlassCompileError(f"nvcc exited with {proc.returncode}", log)


def _include_flags() -> list[str]:
    flags = []
    for d in cutlass_include_dirs():
        flags += ["-I", str(d)]
    return flags


@dataclass
class CompileResult:
    """PTX text of one translation unit, the seconds nvcc took (0 on a cache hit)."""
    ptx: str
    seconds: float
    cached: bool


def compile_to_ptx(source: str, arch: str, use_cache: bool = True) -> CompileResult:
    """PTX for ``source`` compiled for ``arch`` (``sm_80``, ``sm_90a``)."""
    import time
    flags = BASE_FLAGS + [f"-arch={arch}", "-ptx"]
    key = _digest("ptx", source, flags, nvcc_version_cached(), cutlass_version())
    target = cache_dir() / "ptx" / f"{key}.ptx"
    if use_cache and target.exists():
        return CompileResult(target.read_text(), 0.0, True)
    with tempfile.TemporaryDirectory(prefix="ptxds_cutlass_") as tmp:
        tmp = Path(tmp)
        (tmp / "kernels.cu").write_text(source)
        start = time.perf_counter()
        _run_nvcc([*flags, *_include_flags(), "kernels.cu", "-o", "kernels.ptx"], tmp)
        seconds = time.perf_counter() - start
        ptx = (tmp / "kernels.ptx").read_text()
    if use_cache:
        target.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(target, ptx)
    return CompileResult(ptx, seconds, False)


def build_packer(source: str, arch: str, use_cache: bool = True) -> Path:
    """A host executable from ``source`` (see cutlass_host/packer.h); no device code."""
    host_dir = Path(__file__).with_name("cutlass_host")
    header = (host_dir / "packer.h").read_text()
    flags = BASE_FLAGS + [f"-arch={arch}", "-O1", "-I", str(host_dir)]
    if arch.startswith("sm_9"):
        flags.append("-DCUTLASS_PACK_3X")
    key = _digest("packer", source, header, flags, nvcc_version_cached(), cutlass_version())
    target = cache_dir() / "packers" / key
    if use_cache and target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ptxds_cutlass_") as tmp:
        tmp = Path(tmp)
        (tmp / "packer.cu").write_text(source)
        # Host code only: the packer never launches, so no kernel is instantiated and
        # the device pass has nothing heavy to compile.
        libdir = find_nvcc().parent.parent / "lib"  # the wheel's cudart (nvcc.profile misses it)
        _run_nvcc([*flags, *_include_flags(), "packer.cu", "-o", "packer", "-L", str(libdir),
                   "-cudart", "static"], tmp)
        partial = target.with_suffix(".partial")
        shutil.copy2(tmp / "packer", partial)
        os.replace(partial, target)
    return target


def _atomic_write(path: Path, text: str) -> None:
    partial = path.with_suffix(path.suffix + f".{os.getpid()}.partial")
    partial.write_text(text)
    os.replace(partial, path)


_NVCC_VERSION = None


def nvcc_version_cached() -> str:
    global _NVCC_VERSION
    if _NVCC_VERSION is None:
        _NVCC_VERSION = nvcc_version()
    return _NVCC_VERSION
