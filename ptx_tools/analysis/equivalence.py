"""Why a mutant that passed every trial may still compute what its base does, where the PTX
alone can show it: the changed instruction's result is never read (dead), or a swapped
subtraction feeds only squares and absolute values (value-identical). A dropped barrier
after asynchronous copies gets an observation instead: racecheck may not see hazards
through ``cp.async``, so a race not observed there proves nothing. Each reason says whether
it is a ``proof`` (holds for every input) or an ``observation`` (what the trials showed)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..program import PURE_OPS, PtxProgram, defs_and_uses, registers_in
from .sites import ProbeError, mutated_site

PROOF, OBSERVATION = "proof", "observation"


@dataclass
class SurvivorReason:
    """``kind``: proof or observation; ``reason``: a short code; ``detail``: one sentence."""
    kind: str
    reason: str
    detail: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "reason": self.reason, "detail": self.detail}


def _readers(program: PtxProgram, function: int, register: str, skip: int) -> list:
    return [i for i, instr in program.instructions(function, top_level=False)
            if i != skip and register in defs_and_uses(instr)[1]]


def _overwritten_before_read(program: PtxProgram, function: int, line: int, register: str) -> Optional[int]:
    """The line, in the site's own basic block, that writes ``register`` unconditionally
    before anything reads it; None when no such line exists."""
    block = next((b for b in program.basic_blocks(function) if line in b), [])
    for i in block[block.index(line) + 1:] if line in block else []:
        defs, uses = defs_and_uses(program.lines[i].instr)
        if register in uses:
            return None
        if register in defs and not program.lines[i].instr.guard:
            return i
    return None


def dead_result(program: PtxProgram, line: int) -> Optional[SurvivorReason]:
    """The changed instruction writes registers that nothing reads before they are
    overwritten (or ever)."""
    target = program.lines[line]
    if target.instr is None:
        return None
    defs, _ = defs_and_uses(target.instr)
    # only a pure register computation: a load with an unread result still reads its
    # (changed) address, which can fault or race
    if not defs or target.instr.base not in PURE_OPS:
        return None
    notes = []
    for register in sorted(defs):
        if not _readers(program, target.function, register, line):
            notes.append(f"{register} is never read")
            continue
        killer = _overwritten_before_read(program, target.function, line, register)
        if killer is None:
            return None
        notes.append(f"{register} is overwritten at line {killer + 1} before any read")
    return SurvivorReason(PROOF, "dead_result", f"the changed instruction's result is unused: {'; '.join(notes)}")


_SQUARING = ("mul", "fma", "mad")


def _only_definition(program: PtxProgram, function: int, register: str, line: int) -> bool:
    return [i for i, other in program.instructions(function, top_level=False)
            if register in defs_and_uses(other)[0]] == [line]


def _sign_vanishes(program: PtxProgram, function: int, register: str, line: int, depth: int = 0) -> Optional[int]:
    """How many squares or ``abs`` remove the sign of ``register`` (defined once, at
    ``line``) on every path it is read on; ``neg`` and a ``selp`` choosing it or another value
    (on a predicate that does not read it) carry the sign on, since a square of the other
    value is unchanged too. None when some read keeps it."""
    if depth > 4 or not _only_definition(program, function, register, line):
        return None
    readers = _readers(program, function, register, line)
    if not readers:
        return None
    squares = 0
    for i in readers:
        use = program.lines[i].instr
        ops = use.operands
        if register in registers_in(use.guard or ""):
            return None
        if use.base in _SQUARING and len(ops) >= 3 and ops[1] == ops[2] == register \
                and all(register not in registers_in(op) for op in ops[3:]):
            squares += 1
        elif use.base == "abs" and len(ops) == 2:
            squares += 1
        elif (use.base == "neg" and len(ops) == 2) or (
                use.base == "selp" and len(ops) == 4 and register not in registers_in(ops[3])
                and sorted([ops[1] == register, ops[2] == register]) == [False, True]):
            further = _sign_vanishes(program, function, ops[0], i, depth + 1)
            if further is None:
                return None
            squares += further
        else:
            return None
    return squares


def sign_only_uses(program: PtxProgram, line: int) -> Optional[SurvivorReason]:
    """``sub d, a, b`` -> ``sub d, b, a`` where ``d`` has this one definition and every read
    of it, directly or through ``neg`` or a ``selp``, squares it (``mul x, d, d``,
    ``fma x, d, d, c``) or takes ``abs``: b - a = -(a - b) exactly (rounding is symmetric),
    and the sign vanishes."""
    target = program.lines[line]
    instr = target.instr
    if instr is None or instr.base != "sub" or not instr.operands:
        return None
    register = instr.operands[0]
    squares = _sign_vanishes(program, target.function, register, line)
    if not squares:
        return None
    return SurvivorReason(PROOF, "sign_only",
                          f"{register} (the swapped subtraction) is only squared or taken absolute ({squares} "
                          "uses, through neg/selp where present): the result is value-identical")


def async_copy_barrier(base: PtxProgram, line: int) -> Optional[SurvivorReason]:
    """The dropped barrier (line ``line`` of the base) follows asynchronous copies since the
    previous barrier (``cp.async``, ``cp.async.wait_group``)."""
    function = base.lines[line].function
    before = [instr for i, instr in base.instructions(function, top_level=False) if i < line]
    recent = []
    for instr in reversed(before):
        if instr.base in ("bar", "barrier"):
            break
        recent.append(instr)
    waits = [i.opcode for i in recent if i.opcode.startswith("cp.async")]
    if not waits:
        return None
    return SurvivorReason(OBSERVATION, "race_not_observed_async_copy",
                          f"race not observed (async copy): the dropped barrier follows {waits[0]}; racecheck "
                          "does not see shared memory written by asynchronous copies, and the synchronous-copy "
                          "form (provenance.verify.racecheck_sync_copies, where it ran) showed no hazard its base "
                          "lacks either; accesses racecheck cannot see (wgmma, mbarriers, bulk copies) may still "
                          "race, so passing proves nothing")


def static_reason(base_ptx: str, mutant_ptx: str, operator: str) -> Optional[SurvivorReason]:
    """The first reason the PTX alone gives for a surviving mutant, or None."""
    try:
        site = mutated_site(base_ptx, mutant_ptx)
    except ProbeError:
        return None
    if operator == "drop_barrier":
        return async_copy_barrier(PtxProgram(base_ptx), site.base_line) if site.base_line is not None else None
    if site.kind != "replace":
        return None
    program = PtxProgram(mutant_ptx)
    if operator == "swap_operands":
        found = sign_only_uses(program, site.line)
        if found:
            return found
    return dead_result(program, site.line)
