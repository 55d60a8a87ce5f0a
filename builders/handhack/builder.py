"""The ``handhack`` source: the Smith-Waterman PTX-hack experiment as built-in groups.

One group per sequence-pair size (``handhack/smith_waterman/int32/P1024xM128xN128``, ...).
Per arch, one work item compiles ``kernels.sw_kernel`` with Triton (ring buffers in
global memory: the ``global`` member) and applies the hand edit of ``ptx_edit.py`` to the
compiler's PTX for the other members:

- ``shared``: H, E and F rings in dynamic shared memory, ``.maxnreg 128`` (the experiment);
- ``shared_h``: only the H ring in shared memory, E and F stay in global memory (another
  ring-buffer placement);
- ``shared_keep_regs``: all three rings in shared memory, register budget left to ptxas.

An edited member passes a null pointer for each ring it moved, has no scratch buffer for
it, and launches with the shared bytes the rings need. Its ``variant`` names the base
member and its ``provenance`` holds the base's kernel_id and the unified diff of the PTX.
"""
from __future__ import annotations

import difflib

from builders.base import Builder, WorkItem
from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem, make_kernel_id
from ptx_tools import normalize_ptx, ptx_hash

from .ptx_edit import Ring, rings_to_shared

ENTRY = "sw_kernel"
NUM_WARPS = 4
NEG_INF = -(1 << 20)
SCORING = {"match": 2, "mismatch": -3, "gap_open": 5, "gap_extend": 2}  # BLASTN-like DNA scores
ALPHABET = 4
# (pairs, query length M, target length N): long enough that a kernel runs for well over
# 50 us on a current GPU, so the members' times differ by more than the timing noise.
SIZES = ((1024, 128, 128), (512, 256, 256), (512, 128, 512))
# ring name -> (kernel parameter index, diagonals it keeps)
RINGS = {"h_ring": (3, 3), "e_ring": (4, 2), "f_ring": (5, 2)}
# member -> (rings moved to shared memory, .maxnreg or None to leave it to ptxas)
MEMBERS = {
    "shared": (("h_ring", "e_ring", "f_ring"), 128),
    "shared_h": (("h_ring",), 128),
    "shared_keep_regs": (("h_ring", "e_ring", "f_ring"), None),
}
BASE_MEMBER = "global"


def next_pow2(n: int) -> int:
    return 1 << (int(n) - 1).bit_length()


def group_id(pairs: int, m: int, n: int) -> str:
    return f"handhack/smith_waterman/int32/P{pairs}xM{m}xN{n}"


def sw_problem(pairs: int, m: int, n: int) -> Problem:
    letters = {"kind": "randint", "params": {"low": 0, "high": ALPHABET}}
    return Problem(group_id(pairs, m, n), "smith_waterman", [
        {"name": "query", "dtype": "int32", "shape": [pairs, m], "init": letters},
        {"name": "target", "dtype": "int32", "shape": [pairs, n], "init": letters},
        {"name": "row_best", "dtype": "int32", "shape": [pairs, m], "role": "out"},
    ], params=dict(SCORING, alphabet=ALPHABET))


def ring_width(m: int) -> int:
    """Ints per ring slot: one lane per query row plus DP row 0."""
    return next_pow2(m) + 1


def compile_sw(arch: str, m: int):
    """triton.compile of sw_kernel for ``arch`` with BLOCK = next_pow2(m)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from builders.triton.compile import ARCH_CC, PTX_ISA

    from .kernels import sw_kernel
    signature = {name: ("*i32" if name.endswith("_ptr") else "i32") for name in sw_kernel.arg_names
                 if name not in ("BLOCK", "NEG_INF")}
    signature.update(BLOCK="constexpr", NEG_INF="constexpr")
    source = ASTSource(sw_kernel, signature, {"BLOCK": next_pow2(m), "NEG_INF": NEG_INF}, {})
    return triton.compile(source, target=GPUTarget("cuda", ARCH_CC[arch], 32),
                          options={"num_warps": NUM_WARPS, "num_stages": 1, "ptx_version": PTX_ISA})


def base_launch(metadata: dict, pairs: int, m: int, n: int) -> tuple:
    """The global member's Launch and scratch buffers (the three rings)."""
    from builders.triton.compile import make_launch
    width = ring_width(m)
    user_args = [Arg.buf("query"), Arg.buf("target"), Arg.buf("row_best")]
    user_args += [Arg.buf(ring) for ring in RINGS]
    user_args += [Arg.scalar("s32", v) for v in (m, n, SCORING["match"], SCORING["mismatch"],
                                                SCORING["gap_open"], SCORING["gap_extend"])]
    launch, scratch = make_launch(ENTRY, metadata, [pairs], user_args)
    rings = [Buffer(name, "int32", (pairs * depth * width,), "scratch") for name, (_, depth) in RINGS.items()]
    return launch, rings + scratch


def ptx_diff(base_ptx: str, edited_ptx: str, base_name: str, edited_name: str) -> str:
    """Unified diff of the two programs' normalised PTX."""
    return "".join(difflib.unified_diff(normalize_ptx(base_ptx).splitlines(True),
                                        normalize_ptx(edited_ptx).splitlines(True),
                                        fromfile=base_name, tofile=edited_name))


def edited_member(base: KernelRecord, member: str, compiler_smem: int, m: int) -> KernelRecord:
    """The base row with the hand edit applied (raises PtxEditError when the PTX no longer
    matches)."""
    moved, maxnreg = MEMBERS[member]
    width = ring_width(m)
    rings = [Ring(f"{ENTRY}_param_{RINGS[r][0]}", RINGS[r][1] * width * 4) for r in moved]
    edit = rings_to_shared(base.ptx, ENTRY, rings, maxnreg=maxnreg, compiler_smem=compiler_smem)
    launch = base.launches[0]
    args = [Arg.null() if a.kind == "buffer" and a.buffer in moved else a for a in launch.args]
    new_launch = Launch(launch.entry, launch.grid, launch.block, args, launch.cluster,
                        max(edit.dynamic_smem, launch.dynamic_smem))
    base_id = make_kernel_id(ptx_hash(base.ptx), base.launches, base.problem, base.arch)
    variant = dict(base.variant, member=member, base_member=BASE_MEMBER, rings_in_shared=list(moved),
                   maxnreg=maxnreg)
    provenance = dict(base.provenance, edit="builders.handhack.ptx_edit:rings_to_shared",
                      edit_args={"rings": [r.__dict__ for r in rings], "maxnreg": maxnreg,
                                 "compiler_smem": compiler_smem},
                      converted_accesses=edit.converted, base_kernel_id=base_id,
                      diff=ptx_diff(base.ptx, edit.ptx, f"{ENTRY}.{BASE_MEMBER}.ptx", f"{ENTRY}.{member}.ptx"))
    return KernelRecord(group_id=base.group_id, source=base.source, variant=variant,
                        name=f"{ENTRY}_{member}", arch=base.arch, ptx=edit.ptx, launches=[new_launch],
                        problem=base.problem, scratch=[b for b in base.scratch if b.name not in moved],
                        toolchain=dict(base.toolchain), provenance=provenance)


class HandhackBuilder(Builder):
    """The Smith-Waterman groups: one work item per (size, arch), a row per member."""
    name = "handhack"
    pip_extra = "triton"

    def work_items(self) -> list:
        items = []
        for pairs, m, n in SIZES:
            for arch in self.options.archs:
                label = f"{group_id(pairs, m, n)}/{arch}"
                items.append(WorkItem(key=label, group_id=group_id(pairs, m, n), label=label,
                                      payload={"pairs": pairs, "m": m, "n": n, "arch": arch},
                                      rows=1 + len(MEMBERS)))
        return items

    def build(self, item: WorkItem) -> list:
        from builders.triton.compile import PTX_ISA, metadata_dict, one_line, triton_version
        p = item.payload
        pairs, m, n, arch = p["pairs"], p["m"], p["n"], p["arch"]
        variant = {"member": BASE_MEMBER, "BLOCK": next_pow2(m), "num_warps": NUM_WARPS, "num_stages": 1}
        base = KernelRecord(group_id=item.group_id, source=self.name, variant=variant,
                            name=f"{ENTRY}_{BASE_MEMBER}", arch=arch, ptx="", launches=[],
                            problem=sw_problem(pairs, m, n),
                            toolchain={"triton": triton_version(), "ptx_isa": f"{PTX_ISA // 10}.{PTX_ISA % 10}"},
                            provenance={"generator": "ptxds builders.handhack",
                                        "kernel": "builders.handhack.kernels:sw_kernel",
                                        "triton_version": triton_version(), "licence": "MIT (Triton)"})
        try:
            compiled = compile_sw(arch, m)
            metadata = metadata_dict(compiled.metadata)
        except Exception as exc:  # a compile failure is a row, never an exception
            base.status, base.status_message = "build_failed", one_line(exc)
            return [base]
        base.ptx = compiled.asm["ptx"]
        launch, scratch = base_launch(metadata, pairs, m, n)
        base.launches, base.scratch = [launch], scratch
        records = [base]
        for member in MEMBERS:
            try:
                records.append(edited_member(base, member, int(metadata.get("shared") or 0), m))
            except Exception as exc:
                failed = KernelRecord(group_id=base.group_id, source=self.name,
                                      variant=dict(variant, member=member), name=f"{ENTRY}_{member}",
                                      arch=arch, ptx="", launches=[], problem=base.problem,
                                      toolchain=dict(base.toolchain), provenance=dict(base.provenance),
                                      status="build_failed", status_message=one_line(exc))
                records.append(failed)
        return records
