"""Run a CUTLASS Params packer and turn its output into a launch recipe.

The packer (``host/packer.h``) is asked to pack the same problem several times with
different sentinel pointers per buffer. A little-endian u64 that always equals a buffer's
sentinel plus the same constant is a pointer field (``Patch(offset, buffer, addend)``);
every other byte must be identical across packs, or the Params cannot be patched and we
refuse the kernel.

CUtensorMap descriptors (3.x TMA kernels) are encoded by the packer's stand-ins for
``cuTensorMapEncodeTiled`` and ``cuTensorMapEncodeIm2col`` as a marker plus a record of the
encode arguments (an im2col record says ``"encode": "im2col"``; tiled ones carry no
``encode`` key). Each marker found in the Params becomes a ``Patch(kind="tensormap")``
whose buffer and addend come from the recorded global address, matched against the
sentinels like any pointer field; its ``tensormap`` is the record less the address.

3.x mixed-input ConvertOnly kernels take the same Arguments: their scale and zero-point
fields stay zero (read only in the scale modes), and when the narrow operand is B the
collective swaps A and B inside ``to_underlying_arguments``; since every patch is found by
its sentinel address, a swapped descriptor still names the right buffer.

Kernel kinds with more operands than A, B, C, D and a workspace (scale tensors, zero points,
sparse metadata, device arrays of problems) name them as ``extra_slots``: each gets its own
sentinel and reaches the packer as ``@NAME=HEX``; integer or real problem parameters the
Arguments need beyond M, N, K (a group size, a problem count) travel as ``NAME=VALUE``
(``PackRequest::ptr`` / ``PackRequest::param`` in host/packer.h).
"""
from __future__ import annotations

import json
import re
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from dataset_spec.model import TENSORMAP_ALIGN, TENSORMAP_BYTES, Patch

BUFFER_SLOTS = ("A", "B", "C", "D", "workspace")
SENTINEL_RUNS = 3
MAX_ADDEND = 1 << 32
MAX_SLOTS = 16  # the host packer holds at most 16 - 5 extra slots; sentinels stay distinct
TENSORMAP_MAGIC = b"PTXDSTMA"  # written by host/tensormap_recorder.h


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
             pointers: dict, extra_slots=(), params=None) -> str:
    ptrs = " ".join(f"{pointers.get(s, 0):x}" for s in BUFFER_SLOTS)
    extras = "".join(f" @{s}={pointers.get(s, 0):x}" for s in extra_slots)
    values = "".join(f" {key}={value!r}" for key, value in (params or {}).items())
    return f"{kernel} {m} {n} {k} {alpha!r} {beta!r} {sm_count} {ptrs}{extras}{values}"


def slot_names(extra_slots=()) -> tuple:
    """Every buffer slot of a kernel kind, in sentinel order."""
    for name in extra_slots:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,30}", name) or name in BUFFER_SLOTS:
            raise ValueError(f"bad extra buffer slot name {name!r}")
    if len(BUFFER_SLOTS) + len(extra_slots) > MAX_SLOTS:
        raise ValueError(f"at most {MAX_SLOTS - len(BUFFER_SLOTS)} extra buffer slots")
    return BUFFER_SLOTS + tuple(extra_slots)


def find_patches(blobs: list[bytes], pointer_sets: list[dict]) -> list[Patch]:
    """Pointer fields shared by all packs; raises PackError if other bytes differ."""
    size = len(blobs[0])
    if any(len(b) != size for b in blobs):
        raise PackError("Params size changed between packs")
    patches, covered = [], set()
    for offset in range(0, size - 7, 4):
        words = [struct.unpack_from("<Q", b, offset)[0] for b in blobs]
        for name in pointer_sets[0]:
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


def _buffer_of(addresses: list[int], pointer_sets: list[dict]):
    """(buffer, addend) when ``addresses`` (one per pack) is one buffer's sentinel plus a
    constant, else None."""
    for name in pointer_sets[0]:
        ptrs = [ps.get(name) for ps in pointer_sets]
        if not ptrs[0]:
            continue
        addends = {a - p for a, p in zip(addresses, ptrs)}
        if len(addends) == 1 and abs(next(iter(addends))) < MAX_ADDEND:
            return name, addends.pop()
    return None


def _marker_offsets(blob: bytes) -> list[int]:
    offsets, start = [], blob.find(TENSORMAP_MAGIC)
    while start >= 0:
        offsets.append(start)
        start = blob.find(TENSORMAP_MAGIC, start + 1)
    return offsets


def find_tensormap_patches(blobs: list[bytes], records: list[list], pointer_sets: list[dict]) -> list[Patch]:
    """One tensormap patch per descriptor marker in the Params; every pack must place the
    same markers, and each must encode a sentinel buffer address with the same arguments."""
    offsets = _marker_offsets(blobs[0])
    if any(_marker_offsets(b) != offsets for b in blobs[1:]):
        raise PackError("tensor map descriptors moved between packs")
    patches = []
    for offset in offsets:
        if offset % TENSORMAP_ALIGN or offset + TENSORMAP_BYTES > len(blobs[0]):
            raise PackError(f"tensor map descriptor at Params byte {offset} is not a 64-byte aligned CUtensorMap")
        index = struct.unpack_from("<Q", blobs[0], offset + 8)[0]
        if index >= len(records[0]):
            raise PackError(f"tensor map marker {index} at byte {offset} has no recorded encode call")
        per_pack = [r[index] for r in records]
        params = [{key: value for key, value in rec.items() if key != "global_address"} for rec in per_pack]
        if any(p != params[0] for p in params[1:]):
            raise PackError(f"tensor map at byte {offset}: encode arguments depend on the pointers")
        found = _buffer_of([int(rec["global_address"], 16) for rec in per_pack], pointer_sets)
        if found is None:
            raise PackError(f"tensor map at byte {offset} does not address a known buffer")
        buffer, addend = found
        patches.append(Patch(offset=offset, buffer=buffer, addend=addend, kind="tensormap", tensormap=params[0]))
    return patches


def _without_ranges(blob: bytes, patches: list[Patch]) -> bytes:
    data = bytearray(blob)
    for p in patches:
        data[p.offset:p.offset + p.size] = bytes(p.size)
    return bytes(data)


def pack_launch(packer: Path, kernel: str, m: int, n: int, k: int, alpha: float, beta: float,
                sm_count: int, use_c: bool, alias_c_to_d: bool = False, extra_slots=(),
                params=None, operand_slots=("A", "B", "D")) -> PackedLaunch:
    """Params, patches and launch shape for one kernel and problem. With ``alias_c_to_d``
    and no C, C is given D's address: 3.x TMA epilogues encode a descriptor for C even
    when beta = 0 (C is then never read), and a driver may refuse to encode a null one.
    ``extra_slots`` name the kind's further buffers (every one gets a sentinel and must be
    found in the Params); ``params`` are the kind's further problem values.
    ``operand_slots``: the operands whose pointers the Params must hold (none for grouped
    kernels, whose Params point at device arrays of operand pointers instead)."""
    names = slot_names(extra_slots)
    ask = lambda pointers: _request(kernel, m, n, k, alpha, beta, sm_count, pointers, extra_slots, params)
    probe = run_packer(packer, [ask({})])[0]
    slots = (list(operand_slots) + (["C"] if use_c else []) + (["workspace"] if probe["workspace_bytes"] else [])
             + list(extra_slots))
    pointer_sets = [{name: sentinel(names.index(name), run) for name in slots}
                    for run in range(SENTINEL_RUNS)]
    requests = []
    for ps in pointer_sets:
        given = dict(ps, C=ps["D"]) if alias_c_to_d and not use_c and "D" in ps else ps
        requests.append(ask(given))
    results = run_packer(packer, requests)
    blobs = [bytes.fromhex(r["params_hex"]) for r in results]
    tensormap_patches = find_tensormap_patches(blobs, [r.get("tensormaps", []) for r in results], pointer_sets)
    # Markers are constant across packs; blank them so pointer fields are searched elsewhere.
    patches = tensormap_patches + find_patches([_without_ranges(b, tensormap_patches) for b in blobs],
                                               pointer_sets)
    first = results[0]
    for r in results[1:]:
        if (r["grid"], r["block"], r["dynamic_smem"]) != (first["grid"], first["block"], first["dynamic_smem"]):
            raise PackError("launch shape depends on the pointers")
    if (tuple(first["check_grid"]), first["check_block"], first["check_smem"]) != (
            tuple(first["grid"]), first["block"][0], first["dynamic_smem"]):
        raise PackError(f"packer launch shape {first['grid']}/{first['block']}/{first['dynamic_smem']} "
                        f"differs from CUTLASS's device-level values {first['check_grid']}/"
                        f"{first['check_block']}/{first['check_smem']}")
    patches.sort(key=lambda p: p.offset)
    missing = (set(operand_slots) | set(extra_slots)) - {p.buffer for p in patches}
    if missing:
        raise PackError(f"no pointer field found for {sorted(missing)}")
    return PackedLaunch(
        blob=blobs[0], patches=patches, grid=tuple(first["grid"]), block=tuple(first["block"]),
        cluster=tuple(first["cluster"]), dynamic_smem=first["dynamic_smem"],
        workspace_bytes=first["workspace_bytes"],
        check={"grid": tuple(first["check_grid"]), "block": first["check_block"],
               "smem": first["check_smem"]})
