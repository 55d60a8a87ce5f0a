"""Asynchronous copies and ldmatrix reads made visible to racecheck.

compute-sanitizer's racecheck does not see the shared-memory writes of ``cp.async``, so a
dropped barrier that only ordered asynchronous copies against later shared-memory traffic
passes it. ``synchronous_copies(ptx)`` replaces every non-bulk ``cp.async`` into shared
memory by the synchronous copy it stands for: a global load into registers and a
``st.shared`` of them at the copy's issue (zeros where the copy's source size is 0, as the
copy zero-fills), under the copy's own guard. The copy now lands earlier than it could, so
this copy orders shared memory at least as strictly as the original, and a hazard racecheck
finds in it is a pair of accesses that no barrier orders in the original either. Each
``ldmatrix`` also gets, right before it, a volatile 16-byte ``ld.shared`` of the row each
lane addresses (the bytes the warp's ldmatrix reads), whose result nothing uses. The
verifier race-checks this form of a ``drop_barrier`` mutant and of its base; a hazard the
base's form lacks is the race the dropped barrier let in. ``racecheck_blind_spot`` names the
first access around a barrier that even this form keeps from racecheck.
"""
from __future__ import annotations

import re

from ..analysis.barriers import UnboundedSides, _global_conflict, _traffic, barrier_sides, shared_access
from ..program import Instruction, PtxProgram

SYNC_MARK = "// ptxds synchronous copy"
_COPY = re.compile(r"^cp\.async\.(ca|cg)\.shared(::cta)?\.global\b")
_WIDTH = {4: ("b32", 1), 8: ("b32", 2), 16: ("b32", 4)}
_PREFETCH = {"L2::64B", "L2::128B", "L2::256B"}  # size hints, no operand of their own
_LDMATRIX = re.compile(r"^ldmatrix\.sync\.aligned\.m8n8\.x(1|2|4)(\.trans)?\.shared(::cta)?\.b16$")


def _copy_lines(guard: str, destination: str, source: str, size: int, source_size: str, indent: str) -> list:
    kind, lanes = _WIDTH[size]
    regs = [f"%ptxds_c{k}" for k in range(lanes)]
    vector = f".v{lanes}" if lanes > 1 else ""
    value = "{" + ", ".join(regs) + "}" if lanes > 1 else regs[0]
    on = f"@{guard} " if guard else ""
    lines = [f"{indent}{{", f"{indent}.reg .{kind} %ptxds_c<{lanes}>;", f"{indent}.reg .pred %ptxds_z, %ptxds_l;"]
    lines += [f"{indent}mov.{kind} {r}, 0;" for r in regs]
    if source_size:
        lines.append(f"{indent}mov.b32 %ptxds_c0, {source_size};")
        lines.append(f"{indent}setp.ne.u32 %ptxds_l, %ptxds_c0, 0;")
        lines.append(f"{indent}mov.b32 %ptxds_c0, 0;")
    else:
        lines.append(f"{indent}setp.eq.u32 %ptxds_l, 0, 0;")
    if guard.startswith("!"):
        lines.append(f"{indent}not.pred %ptxds_z, {guard[1:]};")
        lines.append(f"{indent}and.pred %ptxds_l, %ptxds_l, %ptxds_z;")
    elif guard:
        lines.append(f"{indent}and.pred %ptxds_l, %ptxds_l, {guard};")
    lines.append(f"{indent}@%ptxds_l ld.global{vector}.{kind} {value}, {source};")
    lines.append(f"{indent}{on}st.shared{vector}.{kind} {destination}, {value};")
    lines.append(f"{indent}}}")
    return [f"{line} {SYNC_MARK}" for line in lines]


def convertible(instr: Instruction) -> bool:
    """A plain ``cp.async.{ca,cg}.shared.global`` of 4, 8 or 16 bytes (an L2 prefetch-size
    hint allowed; a cache-policy operand or an ignore-source predicate not)."""
    if not _COPY.match(instr.opcode) or any("::" in m and not m.startswith("shared") and m not in _PREFETCH
                                            for m in instr.modifiers):
        return False
    ops = instr.operands
    if len(ops) not in (3, 4):
        return False
    try:
        size = int(ops[2], 0)
    except ValueError:
        return False
    return size in _WIDTH and (len(ops) == 3 or bool(re.fullmatch(r"%\w+|\d+|0x[0-9a-fA-F]+", ops[3])))


def synchronous_copies(ptx: str) -> tuple:
    """(``ptx`` with its plain ``cp.async`` copies into shared memory made synchronous and
    its ldmatrix rows read explicitly, how many instructions were handled). Copies of
    another form (bulk, a cache-policy operand, an ignore-source predicate) stay as they
    are."""
    program = PtxProgram(ptx)
    replaced = []
    read_before = []
    for i, instr in program.instructions(top_level=False):
        if convertible(instr):
            ops = instr.operands
            replaced.append((i, _copy_lines(instr.guard or "", ops[0], ops[1], int(ops[2], 0),
                                            ops[3] if len(ops) == 4 else "", instr.indent or "\t")))
        elif matrix_rows(instr):
            read_before.append((i, _row_reads(instr, matrix_rows(instr))))
    edits = [(i, lines, True) for i, lines in replaced] + [(i, lines, False) for i, lines in read_before]
    for i, lines, replace in sorted(edits, key=lambda e: e[0], reverse=True):
        function = program.lines[i].function
        if replace:
            program.delete([i])
        program.insert(i, lines, function)
    return program.print(), len(edits)


def matrix_rows(instr: Instruction) -> int:
    """The row addresses an ``ldmatrix.*.m8n8.x{1,2,4}.*.b16`` reads (8 per matrix), 0 for
    anything else."""
    match = _LDMATRIX.match(instr.opcode)
    return 8 * int(match.group(1)) if match and len(instr.operands) == 2 else 0


def _row_reads(instr: Instruction, lanes: int) -> list:
    """A volatile 16-byte ``ld.shared`` of the row each of the first ``lanes`` lanes
    addresses, right before the ldmatrix: the bytes it reads, where racecheck sees them."""
    indent = instr.indent or "\t"
    lines = [f"{indent}{{", f"{indent}.reg .b32 %ptxds_m<5>;", f"{indent}.reg .pred %ptxds_q;",
             f"{indent}mov.u32 %ptxds_m4, %laneid;", f"{indent}setp.lt.u32 %ptxds_q, %ptxds_m4, {lanes};"]
    guard = instr.guard or ""
    if guard.startswith("!"):
        lines += [f"{indent}.reg .pred %ptxds_z;", f"{indent}not.pred %ptxds_z, {guard[1:]};",
                  f"{indent}and.pred %ptxds_q, %ptxds_q, %ptxds_z;"]
    elif guard:
        lines.append(f"{indent}and.pred %ptxds_q, %ptxds_q, {guard};")
    lines.append(f"{indent}@%ptxds_q ld.volatile.shared.v4.b32 {{%ptxds_m0, %ptxds_m1, %ptxds_m2, %ptxds_m3}}, "
                 f"{instr.operands[1]};")
    lines.append(f"{indent}}}")
    return [f"{line} {SYNC_MARK}" for line in lines]


def racecheck_blind_spot(program: PtxProgram, line: int) -> str:
    """The first shared-memory access on either side of the CTA barrier at ``line`` that
    compute-sanitizer's racecheck cannot see even in the synchronous-copy form (wgmma,
    stmatrix, bulk or cache-policy copies, mbarriers, ...), or '' when it sees them all
    (plain, generic or atomic loads and stores, and the copies and ldmatrix rows that
    ``sync_copies`` makes explicit).
    A reason string when the sides cannot be bounded."""
    try:
        sides = barrier_sides(program, line)
    except UnboundedSides as exc:
        return str(exc)
    order, (before, after) = sides.order, sides.positions
    if _global_conflict(_traffic(program, order, before), _traffic(program, order, after)):
        return "global memory written on one side and accessed on the other (racecheck checks shared memory only)"
    for side in (before, after):
        for j in sorted(side):
            instr = program.lines[order[j]].instr
            if not any(shared_access(instr)):
                continue
            plain = instr.base in ("ld", "st", "atom", "red") and "async" not in instr.modifiers \
                and "shared::cluster" not in instr.modifiers
            if plain or convertible(instr) or matrix_rows(instr):
                continue
            return instr.opcode
    return ""
