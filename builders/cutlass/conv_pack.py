"""Run the conv Params packer (host/conv_packer.h) and turn its output into patches.

The same sentinel technique as the GEMM packer (builders/cutlass/packer.py): the conv is
packed several times with different sentinel addresses per operand slot (A, B, C, D,
workspace), and every u64 that follows a slot's sentinel becomes a ``Patch``, renamed to
the problem's buffer in that slot (fprop x, w -> y; dgrad dy, w -> dx; wgrad dy, x -> dw).
When CUTLASS's ``can_implement`` refuses the problem, the packer says why and the row is
``not_applicable``.

SM90 3.x kernels hold TMA descriptors instead of most pointers: im2col ones
(``cuTensorMapEncodeIm2col``) for the activation-shaped operands and tiled ones for the
filter, recorded by the packer and found as ``Patch(kind="tensormap")`` the same way as for
GEMMs (``packer.find_tensormap_patches``). Their epilogue encodes a descriptor for C even
when beta = 0, so C is then given D's address (never read; ``alias_c_to_d``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from builders.cutlass.packer import (BUFFER_SLOTS, SENTINEL_RUNS, PackedLaunch, PackError, _without_ranges,
                                     find_patches, find_tensormap_patches, run_packer, sentinel)


@dataclass(frozen=True)
class ConvSize:
    """One conv problem in the packer's terms (2-D convs have D = T = Z = 1)."""
    n: int
    d: int
    h: int
    w: int
    c: int
    k: int
    t: int
    r: int
    s: int
    z: int
    p: int
    q: int
    pad: tuple
    stride: tuple
    dilation: tuple
    groups: int


class ConvNotApplicable(Exception):
    """CUTLASS's can_implement refuses this kernel at this size (the message says how)."""


def _request(kernel: str, size: ConvSize, alpha: float, beta: float, pointers: dict) -> str:
    dims = [size.n, size.d, size.h, size.w, size.c, size.k, size.t, size.r, size.s, size.z, size.p, size.q,
            *size.pad, *size.stride, *size.dilation, size.groups]
    ptrs = " ".join(f"{pointers.get(s, 0):x}" for s in BUFFER_SLOTS)
    return f"{kernel} {alpha!r} {beta!r} {' '.join(str(int(v)) for v in dims)} {ptrs}"


def pack_conv_launch(packer, kernel: str, size: ConvSize, alpha: float, beta: float, use_c: bool,
                     slot_buffers: dict, alias_c_to_d: bool = False) -> PackedLaunch:
    """Params, patches (named by ``slot_buffers``: slot -> buffer) and launch shape; with
    ``alias_c_to_d`` and no C, C is given D's address (3.x TMA epilogues)."""
    probe = run_packer(packer, [_request(kernel, size, alpha, beta, {})])[0]
    if "not_applicable" in probe:
        raise ConvNotApplicable(f"{kernel}: {probe['not_applicable']}")
    slots = ["A", "B", "D"] + (["C"] if use_c else []) + (["workspace"] if probe["workspace_bytes"] else [])
    pointer_sets = [{name: sentinel(BUFFER_SLOTS.index(name), run) for name in slots}
                    for run in range(SENTINEL_RUNS)]
    given = [dict(ps, C=ps["D"]) if alias_c_to_d and not use_c else ps for ps in pointer_sets]
    results = run_packer(packer, [_request(kernel, size, alpha, beta, ps) for ps in given])
    blobs = [bytes.fromhex(r["params_hex"]) for r in results]
    tensormaps = find_tensormap_patches(blobs, [r.get("tensormaps", []) for r in results], pointer_sets)
    # Markers are constant across packs; blank them so pointer fields are searched elsewhere.
    patches = tensormaps + find_patches([_without_ranges(b, tensormaps) for b in blobs], pointer_sets)
    first = results[0]
    if any((r["grid"], r["block"], r["dynamic_smem"]) != (first["grid"], first["block"], first["dynamic_smem"])
           for r in results[1:]):
        raise PackError("launch shape depends on the pointers")
    if (tuple(first["check_grid"]), first["check_block"], first["check_smem"]) != (
            tuple(first["grid"]), first["block"][0], first["dynamic_smem"]):
        raise PackError(f"packer launch shape {first['grid']}/{first['block']}/{first['dynamic_smem']} differs "
                        f"from CUTLASS's device-level values {first['check_grid']}/{first['check_block']}/"
                        f"{first['check_smem']}")
    missing = {"A", "B", "D"} - {p.buffer for p in patches}
    if missing:
        raise PackError(f"no pointer field found for {sorted(missing)}")
    named = sorted((replace(p, buffer=slot_buffers.get(p.buffer, p.buffer)) for p in patches), key=lambda p: p.offset)
    return PackedLaunch(blob=blobs[0], patches=named, grid=tuple(first["grid"]), block=tuple(first["block"]),
                        cluster=tuple(first.get("cluster", (1, 1, 1))), dynamic_smem=first["dynamic_smem"],
                        workspace_bytes=first["workspace_bytes"],
                        check={"grid": tuple(first["check_grid"]), "block": first["check_block"],
                               "smem": first["check_smem"]})
