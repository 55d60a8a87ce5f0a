"""Divergence probe: does a mutant's change ever alter what its thread does?

A mutated instruction can run and still never matter: a flipped store guard whose new
predicate holds exactly where the old one did at this size, a loop-mask constant that
moves no thread across the bound. ``instrument_divergence(base_ptx, mutant_ptx)`` gives a
copy of the mutant that also computes, in shadow registers, what the base computes from
the mutated instruction on: the base's version of that instruction is run beside it into
shadows, and every register computation that reads a changed register (the taint,
followed to a fixed point through loops) is repeated on the shadows. Wherever a value the
change can reach leaves registers (a memory access's address or data, a branch or guard
predicate, a shuffle, anything not a pure register computation), the copy compares it
with its shadow and counts, in a ``uint64`` counter, the executions where they differ (or
where the instruction runs in one version and not the other): per thread in a register,
added to the counter where the thread leaves the entry (``probe.flush_at_exits``).

A count of 0 on every trial means the mutant issued the same memory operations and took
the same branches as its base on those inputs: for this problem the change never took
effect. A load whose loaded registers nothing reads is not compared at all: where it reads
from changes no value the thread uses (a fault would, and a passing mutant did not fault).
Only one-instruction replacements are probed; the rest raise ProbeError.
"""
from __future__ import annotations

import re
from typing import Optional

from ..program import _INSTRUCTION, PURE_OPS, REGISTER, SPECIAL_REGISTERS, Instruction, PtxProgram, \
    defs_and_uses, split_operands
from ..analysis.sites import mutated_site
from .probe import COUNT_REGISTER, COUNTER_PARAM_SUFFIX, COUNTER_REGISTER, PROBE_MARK, ProbeError, SiteProbe, \
    _append_param, _unique, first_statement, flush_at_exits

_SINGLE_REG = re.compile(r"\.reg\s+\.(\w+)\s+([^;<]+);")
_RANGE_DECL = re.compile(r"\.reg\s+\.(\w+)\s+(%[A-Za-z_]+)<\d+>")
_BITS = {"8": None, "16": "b16", "32": "b32", "64": "b64"}


def _parse(text: str) -> Instruction:
    match = _INSTRUCTION.match(text)
    if match is None:
        raise ProbeError(f"not one instruction: {text.strip()!r}")
    return Instruction(match.group("indent"), match.group("guard"), match.group("opcode"),
                       split_operands(match.group("operands") or ""), match.group("tail") or "")


def _register_types(program: PtxProgram, function: int) -> tuple:
    """(prefix -> type for ``%r<N>`` ranges, name -> type for single registers), both only
    at function level; registers declared in nested blocks are not shadowed."""
    ranges = {prefix: kind for prefix, (kind, _, depth) in program.register_ranges(function).items() if depth == 1}
    singles = {}
    for i in program.body(function):
        if program.lines[i].depth != 1:
            continue
        for match in _SINGLE_REG.finditer(program.lines[i].text):
            for name in match.group(2).split(","):
                singles[name.strip()] = match.group(1)
    return ranges, singles


def _type_of(register: str, ranges: dict, singles: dict) -> str:
    if register in singles:
        return singles[register]
    match = re.fullmatch(r"(%[A-Za-z_]+)\d+", register)
    if match and match.group(1) in ranges:
        return ranges[match.group(1)]
    raise ProbeError(f"register {register} has no function-level declaration to shadow")


def _renamed(instr: Instruction, shadow: dict) -> Instruction:
    def swap(text: str) -> str:
        return REGISTER.sub(lambda m: shadow.get(m.group(0), m.group(0)), text)
    return Instruction(instr.indent, swap(instr.guard) if instr.guard else instr.guard, instr.opcode,
                       [swap(op) for op in instr.operands], "")


def _taint(program: PtxProgram, function: int, seeds: set) -> set:
    tainted = set(seeds)
    changed = True
    while changed:
        changed = False
        for _, instr in program.instructions(function, top_level=False):
            if instr.base not in PURE_OPS:
                continue
            defs, uses = defs_and_uses(instr)
            if uses & tainted and not defs <= tainted:
                tainted |= defs
                changed = True
    return tainted


def _compared_operands(instr: Instruction) -> list:
    """The operands an instruction reads (a load's, shuffle's or atomic's first operand is
    its destination)."""
    defs, _ = defs_and_uses(instr)
    return instr.operands[1:] if defs else instr.operands


class _Emitter:
    """Builds the comparison lines for one observation point."""

    def __init__(self, types: tuple, counter: str, count: str):
        self.types, self.counter, self.count = types, counter, count

    def _effective(self, guard: Optional[str], into: str, lines: list) -> str:
        if not guard:
            lines.append(f"\tsetp.eq.u32 {into}, 0, 0;")
        elif guard.startswith("!"):
            lines.append(f"\tnot.pred {into}, {guard[1:]};")
        else:
            lines.append(f"\tmov.pred {into}, {guard};")
        return into

    def compare(self, mine: Instruction, theirs: Instruction) -> list:
        """Lines that count one divergence when ``mine`` (as the mutant runs it) and
        ``theirs`` (the base's version, on shadows) differ in whether they run or in any
        value they read."""
        lines = ["\t{ " + PROBE_MARK, "\t.reg .pred %ptxds_d, %ptxds_t, %ptxds_g, %ptxds_h;"]
        lines.append("\tsetp.ne.u32 %ptxds_d, 0, 0;")
        ours, base = _compared_operands(mine), _compared_operands(theirs)
        if mine.opcode != theirs.opcode or len(ours) != len(base):
            lines.append("\tsetp.eq.u32 %ptxds_d, 0, 0;")
        else:
            for a, b in zip(ours, base):
                if a == b:
                    continue
                regs_a, regs_b = _plain_registers(a), _plain_registers(b)
                if REGISTER.sub("R", a) != REGISTER.sub("R", b) or len(regs_a) != len(regs_b):
                    lines.append("\tsetp.eq.u32 %ptxds_d, 0, 0;")  # a constant changed: differs when run
                    continue
                for x, y in zip(regs_a, regs_b):
                    if x != y:
                        lines.extend(self._differs(x, y))
        self._effective(mine.guard, "%ptxds_g", lines)
        lines.append("\tand.pred %ptxds_d, %ptxds_d, %ptxds_g;")
        if (mine.guard or "") != (theirs.guard or ""):
            self._effective(theirs.guard, "%ptxds_h", lines)
            lines.append("\txor.pred %ptxds_t, %ptxds_g, %ptxds_h;")
            lines.append("\tor.pred %ptxds_d, %ptxds_d, %ptxds_t;")
        lines.append(f"\t@%ptxds_d add.u64 {self.count}, {self.count}, 1;")
        lines.append("\t} " + PROBE_MARK)
        return [line if PROBE_MARK in line else f"{line} {PROBE_MARK}" for line in lines]

    def _differs(self, x: str, y: str) -> list:
        kind = _type_of(x, *self.types)
        if kind == "pred":
            return [f"\txor.pred %ptxds_t, {x}, {y};", "\tor.pred %ptxds_d, %ptxds_d, %ptxds_t;"]
        bits = _BITS.get(re.sub(r"\D", "", kind) or "32")
        if bits is None:
            raise ProbeError(f"register {x} of type .{kind} cannot be compared")
        return [f"\tsetp.ne.or.{bits} %ptxds_d, {x}, {y}, %ptxds_d;"]


def _plain_registers(operand: str) -> list:
    return [m.group(0) for m in REGISTER.finditer(operand) if not SPECIAL_REGISTERS.match(m.group(0))]


def instrument_divergence(base_ptx: str, mutant_ptx: str) -> SiteProbe:
    """The mutant with shadows of the base's values and a counter of the executions where
    the two would act differently (module docstring)."""
    site = mutated_site(base_ptx, mutant_ptx)
    if site.kind != "replace" or "\n" in site.before or "\n" in site.after:
        raise ProbeError(f"the mutation is a {site.kind} of {site.before.count(chr(10)) + 1} line(s), not one "
                         "replaced instruction")
    program = PtxProgram(mutant_ptx)
    target = program.lines[site.line]
    if target.instr is None or target.depth < 1:
        raise ProbeError(f"site line {site.line + 1} is not an instruction")
    function = program.functions[target.function]
    if not function.is_entry:
        raise ProbeError(f"the site is in .func {function.name}, not in an entry")
    mine, theirs = target.instr, _parse(site.before)
    types = _register_types(program, target.function)
    site_pure = mine.base in PURE_OPS and theirs.base in PURE_OPS
    tainted = _taint(program, target.function, defs_and_uses(mine)[0] | defs_and_uses(theirs)[0]) \
        if site_pure else set()
    _refuse_unfollowed_reads(program, target.function, tainted)
    text = program.print()
    stem = _unique(text, "%ptxds_s")
    shadow = {reg: f"{stem}_{reg[1:]}" for reg in sorted(tainted)}
    counter, count = _unique(text, COUNTER_REGISTER), _unique(text, COUNT_REGISTER)
    emitter = _Emitter(types, counter, count)
    before, after = {}, {}
    for i, instr in program.instructions(target.function, top_level=False):
        defs, uses = defs_and_uses(instr)
        if i == site.line:
            if site_pure:
                after[i] = [_renamed(theirs, shadow).render().strip()]
            elif not _unread_load(program, target.function, i, mine, theirs):
                before[i] = emitter.compare(mine, _renamed(theirs, shadow))
            continue
        if instr.base in PURE_OPS:
            if defs & tainted:
                after[i] = [_renamed(instr, shadow).render().strip()]
            continue
        if uses & tainted:
            before[i] = emitter.compare(instr, _renamed(instr, shadow))
        if defs & tainted:
            after[i] = [f"mov.{_mov_type(reg, types)} {shadow[reg]}, {reg};" for reg in sorted(defs & tainted)]
    for i in after:
        if _uses_carry(program.lines[i].instr) or (i == site.line and _uses_carry(theirs)):
            raise ProbeError(f"line {i + 1} uses the carry flag: a shadow copy would change it between "
                             f"{program.lines[i].instr.opcode} and the instruction that reads it")
    for i in sorted(set(before) | set(after), reverse=True):
        indent = program.lines[i].instr.indent or "\t"
        if i in after:
            program.insert(i + 1, [f"{indent}{line.strip()} {PROBE_MARK}" if PROBE_MARK not in line else line
                                   for line in after[i]], target.function)
        if i in before:
            program.insert(i, before[i], target.function)
    declarations = [f"\t.reg .{_type_of(reg, *types)} {name}; {PROBE_MARK}" for reg, name in shadow.items()]
    flush_at_exits(program, target.function, count, counter)
    param = _unique(text, function.name + COUNTER_PARAM_SUFFIX)
    program.insert(first_statement(program, target.function),
                   [f"\tld.param.u64 {counter}, [{param}]; {PROBE_MARK}",
                    f"\tcvta.to.global.u64 {counter}, {counter}; {PROBE_MARK}",
                    f"\tmov.u64 {count}, 0; {PROBE_MARK}"], target.function)
    program.insert(function.open_line + 1, [f"\t.reg .b64 {counter}; {PROBE_MARK}",
                                            f"\t.reg .b64 {count}; {PROBE_MARK}"] + declarations,
                   target.function)
    instrumented = _append_param(program.print(), function.name, param)
    return SiteProbe(instrumented, function.name, param, site.line, site.after.strip())


def _refuse_unfollowed_reads(program: PtxProgram, function: int, tainted: set) -> None:
    """A changed value read where the probe cannot follow it (an unparsed line, a nested
    block that redeclares the register) could diverge unseen: no probe then."""
    for i in program.body(function):
        line = program.lines[i]
        if line.kind == "instr" or not tainted:
            continue
        code = line.text.split("//", 1)[0]
        named = set(REGISTER.findall(code))
        prefixes = {m.group(2) for m in _RANGE_DECL.finditer(code)}
        hidden = {r for r in tainted if r in named or re.sub(r"\d+$", "", r) in prefixes}
        if line.kind == "decl" and line.depth > 1 and hidden:
            raise ProbeError(f"line {i + 1} redeclares {sorted(hidden)[0]} in a nested block")
        if line.kind == "other" and hidden:
            raise ProbeError(f"line {i + 1} reads {sorted(hidden)[0]} but is not one parsed instruction")


def _unread_load(program: PtxProgram, function: int, line: int, mine: Instruction, theirs: Instruction) -> bool:
    """A plain load (same opcode and destination in both versions) whose loaded registers
    nothing else in the function reads: where it reads from changes no value the thread
    uses, so only a fault could tell, and a mutant that passed did not fault."""
    if mine.base not in ("ld", "ldu") or mine.opcode != theirs.opcode or mine.operands[:1] != theirs.operands[:1]:
        return False
    loaded, _ = defs_and_uses(mine)
    return bool(loaded) and not any(loaded & defs_and_uses(other)[1]
                                    for j, other in program.instructions(function, top_level=False) if j != line)


def _uses_carry(instr: Instruction) -> bool:
    return "cc" in instr.modifiers or instr.base in ("addc", "subc", "madc")


def _mov_type(register: str, types: tuple) -> str:
    kind = _type_of(register, *types)
    if kind == "pred":
        return "pred"
    bits = re.sub(r"\D", "", kind)
    return f"b{bits}" if bits else kind
