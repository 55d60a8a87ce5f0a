"""Assemble PTX with the pinned ptxas: cubin, per-entry resources from ``ptxas -v``, and
optionally SASS text; and pin a module's PTX ISA version."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from dataset_spec.model import Resources

from .errors import AssemblyError, PtxError, ToolchainError, first_lines
from .toolchain import check_arch, find_tool, run_tool

_VERSION_LINE = re.compile(r"^([ \t]*\.version[ \t]+)(\d+\.\d+)", re.M)
_COMPILING = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_ENTRY_DECL = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)")


@dataclass
class Assembly:
    cubin: bytes
    resources: list = field(default_factory=list)  # Resources, one per entry, in PTX order
    log: str = ""
    sass: str = ""

    def resource(self, entry: str) -> Resources:
        for r in self.resources:
            if r.entry == entry:
                return r
        raise KeyError(entry)


def pin_ptx_version(ptx: str, version: str = "8.7") -> str:
    """Rewrite the ``.version`` directive (e.g. Triton's newest ISA) to ``version``."""
    if not re.fullmatch(r"\d+\.\d+", version):
        raise ValueError(f"PTX version must look like 8.7, got {version!r}")
    pinned, count = _VERSION_LINE.subn(lambda m: m.group(1) + version, ptx, count=1)
    if not count:
        raise PtxError(1, "missing .version directive")
    return pinned


def assemble(ptx: str, arch: str, sass: bool = False, timeout: float = 300,
             flags: Sequence[str] = (), cuda_home: Optional[os.PathLike] = None) -> Assembly:
    """Assemble ``ptx`` for ``arch`` (e.g. sm_90a) with ptxas -v.

    Raises AssemblyError with ptxas's log if it rejects the PTX or runs past ``timeout``,
    ToolchainError if ptxas (or, with ``sass=True``, nvdisasm) is not installed.
    """
    ptxas = find_tool("ptxas", cuda_home)
    disassembler = find_tool("nvdisasm", cuda_home) if sass else None
    check_arch(arch)
    with tempfile.TemporaryDirectory(prefix="ptxds-ptxas-") as tmp:
        src = Path(tmp) / "kernel.ptx"
        cubin_path = Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        try:
            result = run_tool([ptxas, f"-arch={arch}", "-v", *flags, src, "-o", cubin_path],
                              timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise AssemblyError(f"ptxas timed out after {timeout} s") from None
        log = result.stdout.replace(str(src), "kernel.ptx")
        if result.returncode != 0 or not cubin_path.is_file():
            raise AssemblyError(f"ptxas failed (exit {result.returncode}):\n{first_lines(log)}", log)
        cubin = cubin_path.read_bytes()
        sass_text = _disassemble(disassembler, cubin_path, timeout) if sass else ""
    return Assembly(cubin=cubin, resources=parse_resources(log, _entry_order(ptx)),
                    log=log, sass=sass_text)


def _disassemble(nvdisasm: Path, cubin_path: Path, timeout: float) -> str:
    try:
        result = run_tool([nvdisasm, "-c", cubin_path], timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssemblyError(f"nvdisasm timed out after {timeout} s") from None
    if result.returncode != 0:
        raise AssemblyError(f"nvdisasm failed:\n{first_lines(result.stdout)}", result.stdout)
    return result.stdout


def _entry_order(ptx: str) -> list:
    names = []
    for name in _ENTRY_DECL.findall(ptx):
        if name not in names:
            names.append(name)
    return names


def parse_resources(log: str, entry_order: Sequence[str] = ()) -> list:
    """Resources per entry from a ``ptxas -v`` log.

    ptxas prints "Function properties for X" (stack, spills) for entries and for called
    functions; only blocks that follow "Compiling entry function" and name that entry are
    the entry's. ``constant`` sums all reported constant banks.
    """
    found: dict = {}
    current = None      # entry being compiled
    properties = None   # function whose properties block we are in
    for line in log.splitlines():
        m = _COMPILING.search(line)
        if m:
            current = m.group(1)
            found.setdefault(current, Resources(entry=current))
            properties = None
            continue
        m = _PROPERTIES.search(line)
        if m:
            properties = m.group(1)
            continue
        m = _FRAME.search(line)
        if m and properties is not None and properties in found:
            r = found[properties]
            r.stack, r.spill_stores, r.spill_loads = (int(v) for v in m.groups())
            continue
        m = _USED.search(line)
        if m and current is not None:
            r = found[current]
            r.registers = int(m.group(1))
            smem = _SMEM.search(line)
            r.shared_static = int(smem.group(1)) if smem else 0
            r.constant = sum(int(size) for size, _bank in _CMEM.findall(line))
    rank = {name: i for i, name in enumerate(entry_order)}
    return sorted(found.values(), key=lambda r: rank.get(r.entry, len(rank)))


__all__ = ["Assembly", "AssemblyError", "ToolchainError", "assemble", "parse_resources",
           "pin_ptx_version"]
