"""Assemble rows' PTX to cubin for the verifying GPU in a process pool, ahead of the GPU.

The driver's JIT runs on the GPU worker's thread and would serialise the GPU behind the
CPU (0.4 s for a large CUTLASS PTX), so PTX is assembled across CPU cores while the GPU
runs earlier rows. Path per row: ptxas (ptx_tools.assemble), else none and the worker
falls back to the driver's JIT.

nvJitLink is not on that path: the 13.0 library assembles PTX as relocatable code and links
it, which places an ``.extern .shared .align 1024`` array at a 16-byte offset after static
shared memory (TileLang's TMA/wgmma kernels then fault with a misaligned address) and
allocates registers differently from ptxas and the driver (154 against 240 for one
warp-specialised GEMM), so neither results nor times would be those of the PTX as the
driver runs it. ``nvjitlink_assemble`` stays for diagnosis (benchmarks/launch_probe.py).
"""
from __future__ import annotations

import multiprocessing as mp
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Optional

_ARCH_RE = re.compile(r"^sm_(\d+)(\d)([af]?)$")


@dataclass
class Assembled:
    cubin: Optional[bytes]
    path: str          # "ptxas" or "driver_jit" (nothing assembled here)
    message: str = ""  # why the earlier paths were not used


def parse_arch(arch: str) -> tuple:
    """'sm_90a' -> (9, 0, 'a'); raises ValueError for anything else."""
    m = _ARCH_RE.match(arch.strip())
    if not m:
        raise ValueError(f"arch {arch!r} is not of the form sm_XY, sm_XYa or sm_XYf")
    return int(m.group(1)), int(m.group(2)), m.group(3)


def runnable_reason(row_arch: str, cc: tuple) -> str:
    """'' when PTX built for ``row_arch`` runs on a GPU of compute capability ``cc``,
    otherwise why not. Plain PTX runs on the same or a newer GPU (JIT); 'a' PTX only on
    exactly its GPU; 'f' PTX on its family (same major, same or newer minor)."""
    try:
        major, minor, suffix = parse_arch(row_arch)
    except ValueError as exc:
        return str(exc)
    gpu = (int(cc[0]), int(cc[1]))
    if suffix == "a" and gpu != (major, minor):
        return f"{row_arch} code runs only on compute capability {major}.{minor}; this GPU is {gpu[0]}.{gpu[1]}"
    if suffix == "f" and (gpu[0] != major or gpu[1] < minor):
        return f"{row_arch} code runs only on the {major}.x family from {major}.{minor}; this GPU is {gpu[0]}.{gpu[1]}"
    if gpu < (major, minor):
        return f"{row_arch} code needs compute capability {major}.{minor} or newer; this GPU is {gpu[0]}.{gpu[1]}"
    return ""


def target_arch(row_arch: str, cc: tuple) -> str:
    """The arch to assemble for on this GPU: the GPU's own, keeping an a/f suffix."""
    _, _, suffix = parse_arch(row_arch)
    return f"sm_{cc[0]}{cc[1]}{suffix}"


_nvjitlink = None


def _load_nvjitlink():
    """The nvjitlink module if its library loads, else None (checked once per process)."""
    global _nvjitlink
    if _nvjitlink is None:
        try:
            from cuda.bindings import nvjitlink
            nvjitlink.version()  # raises when libnvJitLink cannot be loaded
            _nvjitlink = nvjitlink
        except Exception:
            _nvjitlink = False
    return _nvjitlink or None


def nvjitlink_assemble(ptx: str, arch: str) -> bytes:
    nvjitlink = _load_nvjitlink()
    if nvjitlink is None:
        raise RuntimeError("nvJitLink is not available")
    handle = nvjitlink.create(1, [f"-arch={arch}"])
    try:
        data = ptx.encode() + b"\0"
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "row.ptx")
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            size = nvjitlink.get_error_log_size(handle)
            log = bytearray(size)
            if size:
                nvjitlink.get_error_log(handle, log)
            text = bytes(log).rstrip(b"\0").decode(errors="replace")
            raise RuntimeError(f"nvJitLink: {exc}: {text}") from None
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(handle)


def assemble_for_gpu(ptx: str, arch: str) -> Assembled:
    """Assemble ``ptx`` for ``arch`` with ptxas; never raises (a failure means the driver
    JIT decides)."""
    try:
        import ptx_tools
        return Assembled(ptx_tools.assemble(ptx, arch).cubin, "ptxas")
    except Exception as exc:
        return Assembled(None, "driver_jit", f"ptxas: {type(exc).__name__}: {str(exc)[:500]}")


class AssemblyPool:
    """Submits rows for assembly and hands back cubins. ``jobs=0`` assembles nothing (every
    row goes to the driver JIT); ``jobs=None`` uses every CPU core. Subclasses run the
    same bookkeeping on other executors by overriding ``_start``, ``_wait`` and
    ``_cancel`` (the Ray executor's tasks, for one)."""

    failure_label = "assembly pool"

    def __init__(self, cc: tuple, jobs: Optional[int] = None):
        self.cc = tuple(cc)
        self.jobs = jobs
        self._pending: dict = {}  # build_key -> handle of the running assembly
        self._executor = None
        if jobs != 0:
            # spawn: the parent may hold threads (progress bar, worker watchdogs); fork would copy them.
            self._executor = ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"))

    # ---- where assembly runs (overridden by other executors) -------------------------
    @property
    def accepting(self) -> bool:
        return self._executor is not None

    def _start(self, ptx: str, arch: str):
        return self._executor.submit(assemble_for_gpu, ptx, arch)

    def _wait(self, handle, timeout: float) -> Assembled:
        return handle.result(timeout=timeout)

    def _cancel(self, handle) -> None:
        handle.cancel()

    def _shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    # ---- the interface the verifier uses ---------------------------------------------
    def submit(self, record) -> None:
        self.submit_ptx(record.build_key, record.ptx, record.arch)

    def submit_ptx(self, key: str, ptx: str, row_arch: str) -> None:
        """Assembly of ``ptx`` (a row's, or a copy the verifier made of it) under ``key``."""
        if not self.accepting or key in self._pending:
            return
        if runnable_reason(row_arch, self.cc):
            return
        self._pending[key] = self._start(ptx, target_arch(row_arch, self.cc))

    def result(self, record, timeout: float = 600.0) -> Assembled:
        return self.result_of(record.build_key, timeout)

    def result_of(self, key: str, timeout: float = 600.0) -> Assembled:
        handle = self._pending.pop(key, None)
        if handle is None:
            return Assembled(None, "driver_jit", "not assembled ahead")
        try:
            return self._wait(handle, timeout)
        except Exception as exc:  # a lost process or task costs this row's cubin (the driver JIT loads it), not the run
            message = str(exc).splitlines()[0] if str(exc) else ""
            return Assembled(None, "driver_jit", f"{self.failure_label}: {type(exc).__name__}: {message}")

    def discard(self, key: str) -> None:
        """Forget the assembly under ``key`` (cancelled where it has not started)."""
        handle = self._pending.pop(key, None)
        if handle is not None:
            self._cancel(handle)

    def close(self) -> None:
        for handle in self._pending.values():
            self._cancel(handle)
        self._pending = {}
        self._shutdown()
