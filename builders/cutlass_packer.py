"""Run a CUTLASS Params packer and turn its output into a launch recipe.

The packer (``cutlass_host/packer.h``) is asked to pack the same problem several times with
different sentinel pointers per buffer. A little-endian u64 that always equals a buffer's
sentinel plus the same constant is a pointer field (``Patch(offset, buffer, addend)``);
every other byte must be identical across packs, or the Params cannot be patched and we
refuse the kernel.
"""
from __future__ import annotations

import json
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from dataset_spec.model import Patch

BUFFER_SLOTS = ("A", "B", "C", "D", "workspace")
SENTINEL_RUNS = 3
MAX_ADDEND = 1 << 32


class PackError(RuntimeError):
    """The packer failed, or its Params have pointer-derived bytes we cannot patch."""


@dataclass
class PackedLaunch:
    """Params bytes (packed with the first sentinel set), patches and launch shape."""
    blob: bytes
    patches: list
    grid: tuple
    block: tuple
    cluster: tuple
    dynamic_smem: int
    workspace_bytes: int
    check: dict = field(default_factory=dict)


def sentinel(slot: int, run: int) -> int:
    """A distinct, 4 KiB-aligned, canonical user-space address per buffer and run."""
    return 0x7A00_0000_0000 | ((slot + 1) << 36) | ((run + 1) << 28) | ((run * 7 + slot) << 16)


def run_packer(packer: Path, requests: list[str]) -> list[dict]:
    """One JSON result per request line."""
    proc = subprocess.run([str(packer)], input="\n".join(requests) + "\n", capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise PackError(f"packer exited with {proc.returncode}: {proc.stderr[-2000:]}")
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    if len(results) != len(requests):
        raise PackError(f"packer answered {len(results)} of {len(requests)} requests")
    for r in results:
        if "error" in r:
            raise PackError(f"packer: {r['error']} ({r.get('kernel')})")
    return results


def _request(kernel: str, m: int, n: int, k: int, alpha: float, beta: float, sm_count: int,
             pointers: dict) -> str:
    ptrs = " ".join(f"{pointers.get(s, 0):x}" for s in BUFFER_SLOTS)
    return f"{kernel} {m} {n} {k} {alpha!r} {beta!r} {sm_count} {ptrs}"


def find_patches(blobs: list[bytes], pointer_sets: list[dict]) -> list[Patch]:
    """Pointer fields shared by all packs; raises PackError if other bytes differ."""
    size = len(blobs[0])
    if any(len(b) != size for b in blobs):
        raise PackError("Params size changed between packs")
    patches, covered = [], set()
    for offset in range(0, size - 7, 4):
        words = [struct.unpack_from("<Q", b, offset)[0] for b in blobs]
        for slot, name in enumerate(BUFFER_SLOTS):
            ptrs = [ps.get(name) for ps in pointer_sets]
            if not ptrs[0]:
                continue
            addends = {(w - p) for w, p in zip(words, ptrs)}
            if len(addends) == 1:
                addend = addends.pop()
                addend = addend - (1 << 64) if addend >= (1 << 63) else addend
                if abs(addend) < MAX_ADDEND and not covered.intersection(range(offset, offset + 8)):
                    patches.append(Patch(offset=offset, buffer=name, addend=addend))
                    covered.update(range(offset, offset + 8))
                    break
    for i in range(size):
        if i not in covered and len({b[i] for b in blobs}) != 1:
            raise PackError(f"Params byte {i} depends on a pointer but is not a plain pointer field")
    return patches


def pack_launch(packer: Path, kernel: str, m: int, n: int, k: int, alpha: float, beta: float,
                sm_count: int, use_c: bool) -> PackedLaunch:
    """Params, patches and launch shape for one kernel and problem."""
    probe = run_packer(packer, [_request(kernel, m, n, k, alpha, beta, sm_count, {})])[0]
    slots = ["A", "B", "D"] + (["C"] if use_c else []) + (["workspace"] if probe["workspace_bytes"] else [])
    pointer_sets = [{name: sentinel(BUFFER_SLOTS.index(name), run) for name in slots}
                    for run in range(SENTINEL_RUNS)]
    results = run_packer(packer, [_request(kernel, m, n, k, alpha, beta, sm_count, ps)
                                  for ps in pointer_sets])
    blobs = [bytes.fromhex(r["params_hex"]) for r in results]
    patches = find_patches(blobs, pointer_sets)
    first = results[0]
    for r in results[1:]:
        if (r["grid"], r["block"], r["dynamic_smem"]) != (first["grid"], first["block"], first["dynamic_smem"]):
            raise PackError("launch shape depends on the pointers")
    if (tuple(first["check_grid"]), first["check_block"], first["check_smem"]) != (
            tuple(first["grid"]), first["block"][0], first["dynamic_smem"]):
        raise PackError(f"packer launch shape {first['grid']}/{first['block']}/{first['dynamic_smem']} "
                        f"differs from CUTLASS's device-level values {first['check_grid']}/"
                        f"{first['check_block']}/{first['check_smem']}")
    missing = {"A", "B", "D"} - {p.buffer for p in patches}
    if missing:
        raise PackError(f"no pointer field found for {sorted(missing)}")
    return PackedLaunch(
        blob=blobs[0], patches=patches, grid=tuple(first["grid"]), block=tuple(first["block"]),
        cluster=tuple(first["cluster"]), dynamic_smem=first["dynamic_smem"],
        workspace_bytes=first["workspace_bytes"],
        check={"grid": tuple(first["check_grid"]), "block": first["check_block"],
               "smem": first["check_smem"]})
