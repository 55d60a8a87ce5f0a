"""Locate the pinned CUDA tools (from the ``nvidia`` pip wheels), report their versions, and
compile CUDA C++ to PTX with nvcc.

Tools are looked up only in one CUDA root: an explicit ``cuda_home`` argument, else the
``PTXDS_CUDA_HOME`` environment variable, else the ``nvidia/cu13`` folder of the installed
wheels. Never a system CUDA or PATH, so every PTX comes from the pinned release.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from .errors import CompileError, ToolchainError, first_lines

CUDA_HOME_ENV = "PTXDS_CUDA_HOME"
WHEEL_SUBDIR = "cu13"
INSTALL_HINT = "reinstall ptxds (it pins them)"
# Which pinned wheel provides each tool, for the "what to install" message.
TOOL_WHEELS = {
    "nvcc": "nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88",
    "ptxas": "nvidia-cuda-nvcc==13.0.88",
    "nvlink": "nvidia-cuda-nvcc==13.0.88",
    "fatbinary": "nvidia-cuda-nvcc==13.0.88",
    "nvdisasm": "nvidia-cuda-nvdisasm==13.2.51",
    "cuobjdump": "nvidia-cuda-cuobjdump==13.2.51",
}
ARCH_PATTERN = re.compile(r"sm_\d+[af]?")


def _install_message(what: str, tool: str = "nvcc") -> str:
    wheels = TOOL_WHEELS.get(tool, TOOL_WHEELS["nvcc"])
    return (f"{what}; install the pinned CUDA wheels: pip install {wheels} ({INSTALL_HINT}), "
            f"or point {CUDA_HOME_ENV} at a CUDA 13.0 toolkit")


def cuda_root(cuda_home: Optional[os.PathLike] = None) -> Path:
    """The CUDA root whose ``bin/`` holds the tools (see the module docstring for the order)."""
    chosen = cuda_home if cuda_home is not None else os.environ.get(CUDA_HOME_ENV) or None
    if chosen is not None:
        root = Path(chosen)
        if not root.is_dir():
            raise ToolchainError(_install_message(f"CUDA root {root} does not exist"))
        return root
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        root = Path(base) / WHEEL_SUBDIR
        if (root / "bin").is_dir():
            return root
    raise ToolchainError(_install_message("the CUDA 13 wheels (nvidia/cu13) are not installed"))


def find_tool(name: str, cuda_home: Optional[os.PathLike] = None) -> Path:
    """Path of a CUDA tool (nvcc, ptxas, nvdisasm, cuobjdump, ...) under the CUDA root."""
    root = cuda_root(cuda_home)
    path = root / "bin" / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ToolchainError(_install_message(f"{name} not found in {root / 'bin'}", name))
    return path


MEMORY_LIMIT_ENV = "PTXDS_COMPILER_MEMORY_GB"
DEFAULT_MEMORY_LIMIT_GB = 16


def die_with_parent(parent_pid: Optional[int] = None) -> None:
    """Have the kernel kill this process when its parent dies (Linux; elsewhere nothing),
    so a build killed with ``kill -9`` leaves no worker or compiler behind. ``parent_pid``:
    the parent expected; if it is already gone, exit now."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL))
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def _limit_memory() -> None:
    """Runs in the child before exec: a runaway compiler fails alone instead of taking
    the machine (and every other worker) down with it, and dies with its parent."""
    die_with_parent()
    import resource
    gigabytes = float(os.environ.get(MEMORY_LIMIT_ENV, DEFAULT_MEMORY_LIMIT_GB))
    if gigabytes > 0:
        limit = int(gigabytes * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_tool(args: Sequence, timeout: float, cwd=None) -> subprocess.CompletedProcess:
    """Run a tool with a time and address-space limit; stdout and stderr merged into
    ``.stdout``."""
    return subprocess.run([str(a) for a in args], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace", timeout=timeout,
                          preexec_fn=_limit_memory)


@functools.lru_cache(maxsize=8)
def _version_of(path: str) -> str:
    out = run_tool([path, "--version"], timeout=60).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


def toolchain_versions(cuda_home: Optional[os.PathLike] = None) -> dict:
    """Versions of nvcc and ptxas (and nvdisasm/cuobjdump when installed), e.g. '13.0.88'."""
    versions = {name: _version_of(str(find_tool(name, cuda_home))) for name in ("nvcc", "ptxas")}
    for optional in ("nvdisasm", "cuobjdump"):
        try:
            versions[optional] = _version_of(str(find_tool(optional, cuda_home)))
        except ToolchainError:
            pass
    return versions


def check_arch(arch: str) -> str:
    if not ARCH_PATTERN.fullmatch(arch or ""):
        raise ValueError(f"arch must look like sm_80 or sm_90a, got {arch!r}")
    return arch


def compile_cuda(source: str, arch: str, flags: Sequence[str] = (),
                 include_dirs: Sequence[os.PathLike] = (), timeout: float = 600,
                 cuda_home: Optional[os.PathLike] = None) -> str:
    """Compile CUDA C++ source to PTX for ``arch`` (``.target`` equals ``arch``) with the
    pinned nvcc. Raises CompileError with nvcc's log, ToolchainError if nvcc is missing."""
    nvcc = find_tool("nvcc", cuda_home)
    check_arch(arch)
    with tempfile.TemporaryDirectory(prefix="ptxds-nvcc-") as tmp:
        src = Path(tmp) / "kernel.cu"
        out = Path(tmp) / "kernel.ptx"
        src.write_text(source)
        args = [nvcc, "-ptx", f"-arch={arch}", "-o", out, src, *flags]
        args += [f"-I{d}" for d in include_dirs]
        try:
            result = run_tool(args, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired as exc:
            log = exc.output if isinstance(exc.output, str) else ""
            raise CompileError(f"nvcc timed out after {timeout} s", log) from None
        if result.returncode != 0 or not out.is_file():
            # Paths of the temporary directory mean nothing to the caller.
            log = result.stdout.replace(str(src), "kernel.cu")
            raise CompileError(f"nvcc failed (exit {result.returncode}):\n{first_lines(log)}", log)
        return out.read_text()
