"""Which CTA barriers order shared-memory traffic, and which provably order none.

A ``bar.sync 0`` matters only if some memory access that can run before it (since the
previous CTA-wide barrier, following branches and loop back edges) conflicts with one that
can run after it (up to the next), a conflict being a pair with at least one write. A
barrier with global-memory writes on one side and global accesses on the other (a
generic address counts as both shared and global) always stays a site; the reasons below
are about shared memory.
``barrier_roles`` walks the function's control flow from each CTA-wide barrier in both
directions, stopping at other CTA-wide barriers, and gives each barrier either ``None`` (it
may order a conflicting pair: a ``drop_barrier`` site) or the reason its removal cannot
change any shared-memory ordering:

- ``no_conflict``: the accesses on the two sides are reads only, or one side has none;
- ``async_copies_in_flight``: every access on the side before is a ``cp.async`` copy into
  shared memory and no ``cp.async.wait_*`` follows it there: bar.sync does not wait for
  asynchronous copies, so it orders none of their writes (Triton's pipeline prologues);
- ``warpgroup_collective``: the CTA is exactly one warpgroup (128 threads) and every
  shared-memory access on one side is a ``wgmma.mma_async`` read. wgmma reads shared memory
  asynchronously for the warpgroup: before the barrier, ``bar.sync`` does not wait for those
  reads (only ``wgmma.wait_group`` does, and in a single warpgroup every thread waits on the
  same collective wgmma-groups, at the same place); after it, the side must reach a
  ``wgmma.fence`` (executed by the whole warpgroup, ``.sync.aligned``, ordering its prior
  register and shared-memory accesses before the wgmma) before any ``wgmma.mma_async``, so
  every thread's writes before the barrier are ordered before the reads without it. This
  rests on the PTX ISA's warpgroup-level semantics of wgmma, stated in the reason.

Named or partial barriers (``bar.sync 1, 128``), ``bar.arrive``, ``brx.idx`` and calls make
the analysis give up (every barrier stays a site): its sides would not be bounded.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional

from ..program import Instruction, PtxProgram

NO_CONFLICT = "no_conflict"
ASYNC_IN_FLIGHT = "async_copies_in_flight"
WARPGROUP_COLLECTIVE = "warpgroup_collective"
WARPGROUP_THREADS = 128
_CTA_BARRIERS = ("bar.sync", "barrier.sync", "bar.sync.aligned", "barrier.sync.aligned")
_READ_ONLY_SHARED = ("ldmatrix",)
_WRITE_ONLY_SHARED = ("stmatrix",)
_SPACES = ("global", "shared", "local", "param", "const")
_NO_ACCESS = ("cvta", "mapa", "isspacep", "fence", "membar")
_NO_ACCESS_OPCODES = ("cp.async.wait", "cp.async.commit", "cp.async.bulk.wait", "cp.async.bulk.commit")


def is_cta_barrier(instr: Instruction) -> bool:
    """``bar.sync 0`` / ``barrier.sync 0``: every thread of the CTA, barrier 0, no count."""
    return instr.opcode in _CTA_BARRIERS and instr.operands == ["0"] and not instr.guard


def _is_any_barrier(instr: Instruction) -> bool:
    return instr.base in ("bar", "barrier") and not instr.opcode.startswith("barrier.cluster")


def shared_access(instr: Instruction) -> tuple:
    """(reads, writes) of shared memory, conservatively: a generic-address load or store may
    reach shared memory; ``cp.async`` wait/commit, fences and address conversions access
    nothing; an unknown instruction naming shared memory (or an mbarrier) does both."""
    op, mods = instr.opcode, instr.modifiers
    if instr.base in ("ld", "st", "atom", "red"):
        spaces = [m for m in mods if m in _SPACES or m.startswith("shared::")]
        if spaces and not spaces[0].startswith("shared"):
            return False, False
        return instr.base in ("ld", "atom"), instr.base in ("st", "atom", "red")
    if instr.base == "wgmma":
        return op.startswith("wgmma.mma_async"), False
    if instr.base in _READ_ONLY_SHARED:
        return True, False
    if instr.base in _WRITE_ONLY_SHARED:
        return False, True
    if instr.base in _NO_ACCESS or op.startswith(_NO_ACCESS_OPCODES):
        return False, False
    if instr.base == "cp":
        # cp.async.*.shared.global writes shared memory; cp.async.bulk.global.shared reads it
        spaces = [m for m in mods if m.startswith("shared") or m == "global"]
        if not spaces:
            return True, True
        return not spaces[0].startswith("shared"), spaces[0].startswith("shared")
    if "shared" in op or instr.base == "mbarrier":
        return True, True
    return False, False


def global_access(instr: Instruction) -> tuple:
    """(reads, writes) of global memory, conservatively: a generic-address access may reach
    it; a ``cp.async`` into shared memory reads it; a bulk copy out of shared memory
    writes it; ``ld.global.nc`` and ``ldu`` read data that stays read-only while the kernel
    runs, so they conflict with nothing."""
    spaces = [m for m in instr.modifiers if m in _SPACES or m.startswith("shared")]
    if instr.base == "cp":
        if instr.opcode.startswith(_NO_ACCESS_OPCODES):
            return False, False
        if not spaces:
            return True, True
        return "global" in spaces[1:], spaces[0] == "global"  # cp.<...>.dst.src
    if instr.base in ("ld", "ldu", "st", "atom", "red"):
        if spaces and spaces[0] != "global" or instr.base == "ldu" or "nc" in instr.modifiers:
            return False, False  # another space, or data read-only for the kernel's lifetime
        return instr.base in ("ld", "ldu", "atom"), instr.base in ("st", "atom", "red")
    return False, False


def _flow(program: PtxProgram, function: int):
    """Ordered instruction lines, successors and predecessors by position; None when the
    function branches through a table or calls (the analysis gives up)."""
    order = [i for i, _ in program.instructions(function, top_level=False)]
    position = {line: k for k, line in enumerate(order)}
    labels = {}
    for i in program.body(function):
        if program.lines[i].kind == "label":
            labels[program.lines[i].label] = next((position[j] for j in order if j > i), len(order))
    successors = []
    for k, line in enumerate(order):
        instr = program.lines[line].instr
        if instr.base in ("brx", "call"):
            return None
        nexts = []
        if instr.base == "bra":
            target = labels.get(instr.operands[0] if instr.operands else "")
            if target is None:
                return None
            nexts.append(target)
            if instr.guard:
                nexts.append(k + 1)
        elif instr.base not in ("ret", "exit", "trap") or instr.guard:
            nexts.append(k + 1)
        successors.append([n for n in nexts if n < len(order)])
    predecessors = [[] for _ in order]
    for k, nexts in enumerate(successors):
        for n in nexts:
            predecessors[n].append(k)
    return order, successors, predecessors


def _side(start: int, edges: list, is_boundary) -> set:
    """Positions reachable from ``start`` along ``edges`` without passing a boundary."""
    seen, queue = set(), deque(edges[start])
    while queue:
        k = queue.popleft()
        if k in seen:
            continue
        seen.add(k)
        if not is_boundary(k):
            queue.extend(edges[k])
    return {k for k in seen if not is_boundary(k)}


@dataclass
class _Side:
    """The shared-memory traffic of one side of a barrier."""
    reads: bool = False
    writes: bool = False
    only_wgmma: bool = False       # every access a wgmma.mma_async read (and some access)
    only_async_copies: bool = False  # every access an asynchronous copy into shared memory (and some)
    waits: bool = False            # a cp.async wait on this side
    global_reads: bool = False
    global_writes: bool = False


def _is_async_copy(instr: Instruction) -> bool:
    return instr.opcode.startswith("cp.async.") and shared_access(instr) == (False, True)


def _traffic(program: PtxProgram, order: list, positions: set) -> _Side:
    side, kinds = _Side(), []
    for k in positions:
        instr = program.lines[order[k]].instr
        side.waits |= instr.opcode.startswith(("cp.async.wait", "cp.async.bulk.wait"))
        reads, writes = shared_access(instr)
        if reads or writes:
            kinds.append(instr)
        side.reads, side.writes = side.reads or reads, side.writes or writes
        reads, writes = global_access(instr)
        side.global_reads, side.global_writes = side.global_reads or reads, side.global_writes or writes
    side.only_wgmma = bool(kinds) and all(i.opcode.startswith("wgmma.mma_async") for i in kinds)
    side.only_async_copies = bool(kinds) and all(_is_async_copy(i) for i in kinds)
    return side


def _global_conflict(first: _Side, then: _Side) -> bool:
    return first.global_writes and (then.global_reads or then.global_writes) or first.global_reads and then.global_writes


def _fenced(program: PtxProgram, order: list, start: int, successors: list, boundary: set) -> bool:
    """Every path from ``start`` reaches a ``wgmma.fence`` before any ``wgmma.mma_async``."""
    def stop(k: int) -> bool:
        return k in boundary or program.lines[order[k]].instr.opcode.startswith("wgmma.fence")
    reached = _side(start, successors, stop)
    return not any(program.lines[order[k]].instr.opcode.startswith("wgmma.mma_async") for k in reached)


def barrier_roles(program: PtxProgram, function: int, block_threads: Optional[int] = None) -> dict:
    """Line of each CTA-wide barrier -> None (it may order conflicting shared-memory
    accesses) or (reason code, detail) when its removal provably changes no ordering."""
    flow = _flow(program, function)
    lines = {i: instr for i, instr in program.instructions(function, top_level=False)}
    barriers = [i for i, instr in lines.items() if is_cta_barrier(instr)]
    partial = [i for i, instr in lines.items() if _is_any_barrier(instr) and not is_cta_barrier(instr)]
    if flow is None or partial:
        return {i: None for i in barriers}
    order, successors, predecessors = flow
    position = {line: k for k, line in enumerate(order)}
    boundary = {position[i] for i in barriers}
    roles = {}
    for line in barriers:
        k = position[line]
        before = _side(k, predecessors, boundary.__contains__)
        after = _side(k, successors, boundary.__contains__)
        first, then = _traffic(program, order, before), _traffic(program, order, after)
        if _global_conflict(first, then):
            roles[line] = None  # it may order the CTA's global-memory traffic: nothing below looks at that
        elif not (first.writes and (then.reads or then.writes) or first.reads and then.writes):
            roles[line] = (NO_CONFLICT, "no shared-memory write on either side conflicts with an access on the "
                           "other (reads only, or no access on one side): the barrier orders nothing")
        elif first.only_async_copies and not first.waits:
            roles[line] = (ASYNC_IN_FLIGHT,
                           "every shared-memory access since the previous barrier is an asynchronous copy with no "
                           "cp.async wait after it: bar.sync does not wait for those copies (only cp.async.wait_* "
                           "does), so the barrier orders none of their writes")
        elif block_threads == WARPGROUP_THREADS and (first.only_wgmma or then.only_wgmma and _fenced(
                program, order, k, successors, boundary)):
            side = "before" if first.only_wgmma else "after"
            roles[line] = (WARPGROUP_COLLECTIVE,
                           f"the CTA is one warpgroup (128 threads) and every shared-memory access {side} the "
                           "barrier is a wgmma.mma_async read: wgmma reads asynchronously and collectively for "
                           "the warpgroup, so bar.sync neither waits for those reads (wgmma.wait_group does, on "
                           "the same collective groups in every thread) nor orders writes before them that the "
                           "warpgroup's wgmma.fence.sync.aligned, reached first on every path, does not (PTX ISA, "
                           "warpgroup-level wgmma)")
        else:
            roles[line] = None
    return roles


class UnboundedSides(ValueError):
    """A barrier's sides cannot be bounded (partial barriers, calls, indirect branches), or
    the line is not a CTA-wide barrier; the message says which."""


@dataclass
class BarrierSides:
    """The lines of the instructions that can run since the previous CTA-wide barrier
    (``before``) and up to the next (``after``) of one barrier, and the flow they came from."""
    order: list
    before: set
    after: set
    positions: tuple  # (before, after) as positions in ``order``


def barrier_sides(program: PtxProgram, line: int) -> BarrierSides:
    """The two sides of the CTA-wide barrier at ``line``; raises UnboundedSides."""
    function = program.lines[line].function
    flow = _flow(program, function)
    instrs = dict(program.instructions(function, top_level=False))
    if flow is None or any(_is_any_barrier(i) and not is_cta_barrier(i) for i in instrs.values()):
        raise UnboundedSides("the function has partial barriers, calls or indirect branches")
    order, successors, predecessors = flow
    position = {i: k for k, i in enumerate(order)}
    boundary = {position[i] for i, instr in instrs.items() if is_cta_barrier(instr)}
    if line not in position or position[line] not in boundary:
        raise UnboundedSides(f"line {line + 1} is not a CTA-wide barrier")
    k = position[line]
    before, after = _side(k, predecessors, boundary.__contains__), _side(k, successors, boundary.__contains__)
    return BarrierSides(order, {order[j] for j in before}, {order[j] for j in after}, (before, after))
