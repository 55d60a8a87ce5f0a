"""Rewrite and mutation operators over a ``PtxProgram``.

Rewrites keep the function: register renaming, reordering independent instructions,
``ld.global.nc`` for read-only buffers, cache operators, multiply by a power of two <->
shift, dead code, a predicated branch negated with its fall-through block moved out of line.
Mutants change it: swapped operands of a non-commutative op, an off-by-one constant, a
flipped comparison, a dropped ``bar.sync``, a wrong register in a load or store address, a
shared-memory access at the neighbouring element, a changed guard on a global store. Their
sites are drawn with weights that prefer loop bodies and the epilogue (code that runs).

Every operator takes (program, rng, context), edits the program in place and returns an
``Edit`` naming itself and the lines it touched, or raises ``NotApplicable``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..analysis.barriers import barrier_roles
from ..program import NUMBERED_REGISTER, PURE_OPS, Instruction, PtxProgram, defs_and_uses, registers_in


class NotApplicable(Exception):
    """The operator has no site in this program."""


@dataclass
class Context:
    """What the PTX alone does not say: per entry, the parameters whose buffers the kernel
    never writes and that alias no other parameter, and the parameters that hold
    addresses at all (buffers, null pointers, by-value structs), from the row's problem
    and launch. Values loaded from other parameters are plain numbers."""
    readonly_params: dict = field(default_factory=dict)
    address_params: dict = field(default_factory=dict)
    block_threads: dict = field(default_factory=dict)  # entry -> threads per CTA, where one launch size holds


@dataclass
class Edit:
    op: str
    lines: list
    detail: str = ""
    excluded: list = field(default_factory=list)  # sites left out as provably equivalent: {line, reason, detail}

    def to_dict(self) -> dict:
        return {"op": self.op, "lines": self.lines, "detail": self.detail,
                **({"excluded": self.excluded} if self.excluded else {})}


def _choose(rng, sites: list, what: str):
    if not sites:
        raise NotApplicable(what)
    return rng.choice(sites)


def _site_line(site) -> int:
    return site if isinstance(site, int) else site[0]


def _choose_weighted(program: PtxProgram, rng, sites: list, what: str):
    """A mutation site, drawn with ``PtxProgram.site_weights``: lines in a loop body, then
    the epilogue after the last loop, are preferred to code that may run once or never."""
    if not sites:
        raise NotApplicable(what)
    weights, by_function = [], {}
    for site in sites:
        function = program.lines[_site_line(site)].function
        if function not in by_function:
            by_function[function] = program.site_weights(function)
        weights.append(by_function[function].get(_site_line(site), 1))
    return rng.choices(sites, weights=weights)[0]


# -- rewrites ----------------------------------------------------------------------------
def rename_registers(program: PtxProgram, rng, ctx: Context) -> Edit:
    """Permute the numbers of one declared register range (``%r<N>``) in one function."""
    sites = [(f, prefix) for f in range(len(program.functions))
             for prefix, (_, count, depth) in program.register_ranges(f).items() if depth == 1 and count > 2]
    function, prefix = _choose(rng, sites, "no register range to rename")
    count = program.register_ranges(function)[prefix][1]
    nested = any(line.depth > 1 and re.search(rf"\.reg\b.*{re.escape(prefix)}\b", line.text)
                 for line in (program.lines[i] for i in program.body(function)))
    unparsed = any(line.kind == "other" and re.search(re.escape(prefix) + r"\d", line.text)
                   for line in (program.lines[i] for i in program.body(function)))
    if nested or unparsed:
        raise NotApplicable(f"{prefix} is redeclared in a nested block or used on a line not parsed")
    numbers = list(range(count))
    shuffled = numbers[:]
    rng.shuffle(shuffled)
    mapping = dict(zip(numbers, shuffled))

    def rename(match):
        if match.group(1) != prefix or int(match.group(2)) >= count:
            return match.group(0)
        return f"{prefix}{mapping[int(match.group(2))]}"
    touched = []
    for i in program.body(function):
        line = program.lines[i]
        if line.instr is None:
            continue
        instr = line.instr
        new_ops = [NUMBERED_REGISTER.sub(rename, op) for op in instr.operands]
        new_guard = NUMBERED_REGISTER.sub(rename, instr.guard) if instr.guard else instr.guard
        if new_ops != instr.operands or new_guard != instr.guard:
            instr.operands, instr.guard = new_ops, new_guard
            touched.append(i)
    if not touched:
        raise NotApplicable(f"{prefix} is never used")
    return Edit("rename_registers", touched[:8], f"{prefix}<{count}> permuted in {len(touched)} instructions")


def _independent(a: Instruction, b: Instruction) -> bool:
    if a.base not in PURE_OPS or b.base not in PURE_OPS:
        return False
    defs_a, uses_a = defs_and_uses(a)
    defs_b, uses_b = defs_and_uses(b)
    return not (defs_a & (uses_b | defs_b) or defs_b & uses_a)


def reorder_independent(program: PtxProgram, rng, ctx: Context) -> Edit:
    """Swap adjacent pure register instructions with no def-use link, inside one block."""
    sites = []
    for f in range(len(program.functions)):
        for block in program.basic_blocks(f):
            for i, j in zip(block, block[1:]):
                if j == i + 1 and _independent(program.lines[i].instr, program.lines[j].instr):
                    sites.append(i)
    if not sites:
        raise NotApplicable("no adjacent independent instructions")
    chosen = sorted(rng.sample(sites, min(len(sites), max(1, len(sites) // 4), 16)))
    done = []
    for i in chosen:
        if i - 1 in done:  # the pair moved already; its partner is no longer adjacent-independent
            continue
        a, b = program.lines[i], program.lines[i + 1]
        if not _independent(a.instr, b.instr):
            continue
        a.instr.indent, b.instr.indent = b.instr.indent, a.instr.indent
        program.lines[i], program.lines[i + 1] = b, a
        done.append(i)
    return Edit("reorder_independent", done, f"{len(done)} adjacent pairs swapped")


_CACHE_OPS = {"ca", "cg", "cs", "lu", "cv", "nc", "volatile", "relaxed", "acquire", "mmio", "weak"}
_PREFETCH = {"L2::64B", "L2::128B", "L2::256B"}


def _plain_global_load(instr: Instruction) -> bool:
    mods = instr.modifiers
    return (instr.base == "ld" and mods[:1] == ["global"] and not (set(mods) & _CACHE_OPS)
            and all("::" not in m or m in _PREFETCH for m in mods))


def _insert_modifier(instr: Instruction, after: str, modifier: str) -> None:
    parts = instr.opcode.split(".")
    parts.insert(parts.index(after) + 1, modifier)
    instr.opcode = ".".join(parts)


def _param_taint(program: PtxProgram, function: int, address_params: set) -> dict:
    """Register -> the parameters its value may derive from (flow-insensitive, to a fixed
    point); "?" marks a value from memory or from an instruction not followed."""
    taint: dict = {}
    instrs = [instr for _, instr in program.instructions(function, top_level=False)]
    changed = True
    while changed:
        changed = False
        for instr in instrs:
            defs, uses = defs_and_uses(instr)
            if not defs:
                continue
            if instr.opcode.startswith("ld.param") and len(instr.operands) > 1:
                param = instr.operands[1].strip("[] ").split("+")[0].strip()
                source = {param} if param in address_params else set()
            elif instr.base in PURE_OPS:
                source = set().union(*(taint.get(r, set()) for r in uses - set(registers_in(instr.guard or ""))))
            else:
                source = {"?"}
            for reg in defs:
                if not source <= taint.get(reg, set()):
                    taint[reg] = taint.get(reg, set()) | source
                    changed = True
    return taint


def global_load_nc(program: PtxProgram, rng, ctx: Context) -> Edit:
    """``ld.global`` -> ``ld.global.nc`` where the address derives only from parameters
    whose buffers the kernel never writes."""
    touched = []
    for f, function in enumerate(program.functions):
        readonly = ctx.readonly_params.get(function.name, set())
        if not readonly:
            continue
        taint = _param_taint(program, f, ctx.address_params.get(function.name, set()) | readonly)
        for i, instr in program.instructions(f, top_level=False):
            if not _plain_global_load(instr) or len(instr.operands) < 2:
                continue
            address = registers_in(instr.operands[1])
            sources = set().union(*(taint.get(r, {"?"}) for r in address)) if address else {"?"}
            if sources and sources <= readonly:
                _insert_modifier(instr, "global", "nc")
                touched.append(i)
    if not touched:
        raise NotApplicable("no global load from a read-only buffer")
    return Edit("global_load_nc", touched, f"{len(touched)} loads read through the non-coherent cache")


def cache_operator(program: PtxProgram, rng, ctx: Context) -> Edit:
    """Add a cache operator (.ca, .cg or .cs) to plain global loads: a hint, not a change."""
    sites = [i for i, instr in program.instructions(top_level=False) if _plain_global_load(instr)]
    if not sites:
        raise NotApplicable("no plain global load")
    chosen = sorted(rng.sample(sites, max(1, len(sites) // 2)))
    operator = rng.choice(["ca", "cg", "cs"])
    for i in chosen:
        _insert_modifier(program.lines[i].instr, "global", operator)
    return Edit("cache_operator", chosen, f".{operator} on {len(chosen)} loads")


_INT = re.compile(r"^-?\d+$")


def mul_shift(program: PtxProgram, rng, ctx: Context) -> Edit:
    """``mul.lo.{s,u}W d, a, 2^k`` <-> ``shl.bW d, a, k`` (equal modulo 2^W)."""
    sites = []
    for i, instr in program.instructions(top_level=False):
        ops = instr.operands
        if len(ops) != 3 or not registers_in(ops[1]) or not _INT.match(ops[2]):
            continue
        value = int(ops[2])
        m = re.fullmatch(r"mul\.lo\.[su](32|64)", instr.opcode)
        if m and value > 1 and value & (value - 1) == 0 and value < 2 ** (int(m.group(1)) - 1):
            sites.append((i, f"shl.b{m.group(1)}", str(value.bit_length() - 1)))
        m = re.fullmatch(r"shl\.b(32|64)", instr.opcode)
        if m and 0 < value < int(m.group(1)) - 1:
            sites.append((i, f"mul.lo.u{m.group(1)}", str(2 ** value)))
    i, opcode, operand = _choose(rng, sites, "no multiply by a power of two and no shift by a constant")
    instr = program.lines[i].instr
    before = f"{instr.opcode} {instr.operands[2]}"
    instr.opcode, instr.operands = opcode, instr.operands[:2] + [operand]
    return Edit("mul_shift", [i], f"{before} -> {opcode} {operand}")


def dead_code(program: PtxProgram, rng, ctx: Context) -> Edit:
    """Declare fresh registers and insert computations on them that nothing reads."""
    f = rng.randrange(len(program.functions))
    positions = [i for i, _ in program.instructions(f)]
    if not positions:
        raise NotApplicable("empty function")
    text = program.print()
    prefix = "%dead"
    while re.search(re.escape(prefix) + r"\d", text):
        prefix += "x"
    at = rng.choice(positions)
    indent = program.lines[at].instr.indent
    salt = rng.randrange(1, 1 << 16)
    program.insert(at, [f"{indent}mov.u32 {prefix}0, %tid.x;",
                        f"{indent}xor.b32 {prefix}1, {prefix}0, {salt};",
                        f"{indent}mul.lo.u32 {prefix}2, {prefix}1, {prefix}0;"], f)
    open_line = program.functions[f].open_line
    program.insert(open_line + 1, [f"\t.reg .b32 {prefix}<3>;"], f)
    return Edit("dead_code", [at + 1], f"3 unused instructions on {prefix}<3>")


_TERMINATORS = {"ret", "exit", "trap"}


def branch_swap(program: PtxProgram, rng, ctx: Context) -> Edit:
    """``@p bra L; F; L:`` -> ``@!p bra F'; L: ...`` with F moved to the function's end as
    ``F': F; bra L;``: the taken path becomes the fall-through and the blocks trade places."""
    sites = []
    for f in range(len(program.functions)):
        body = list(program.body(f))
        last = [i for i in body if program.lines[i].kind in ("instr", "label", "other")
                and program.lines[i].depth == 1]
        tail = program.lines[last[-1]].instr if last else None
        if tail is None or tail.guard or not (tail.base in _TERMINATORS or tail.base == "bra"):
            continue  # the moved block must not be reached by falling off the end
        labels = {program.lines[i].label: i for i in body if program.lines[i].kind == "label"}
        for i, instr in program.instructions(f):
            if instr.base != "bra" or not instr.guard or not instr.operands:
                continue
            target = labels.get(instr.operands[0])
            if target is None or target <= i + 1:
                continue
            moved = range(i + 1, target)
            if any(program.lines[j].depth < 1 or program.lines[j].kind == "decl" for j in moved):
                continue
            if program.lines[target - 1].depth != 1 or program.lines[target].depth != 1:
                continue
            sites.append((f, i, target))
    f, i, target = _choose(rng, sites, "no forward predicated branch over a movable block")
    instr = program.lines[i].instr
    label = instr.operands[0]
    text = program.print()
    new_label = "$RW_swap"
    while new_label in text:
        new_label += "_"
    guard = instr.guard[1:] if instr.guard.startswith("!") else "!" + instr.guard
    indent = instr.indent
    instr.guard, instr.operands = guard, [new_label]
    moved_lines = [program.lines[j].render() for j in range(i + 1, target)]
    close = program.functions[f].close_line
    program.insert(close, [f"{new_label}:"] + moved_lines + [f"{indent}bra {label};"], f)
    program.delete(range(i + 1, target))
    return Edit("branch_swap", [i], f"@{guard} bra {new_label}; {len(moved_lines)} lines moved after the last return")


REWRITES = {
    "rename_registers": rename_registers,
    "reorder_independent": reorder_independent,
    "global_load_nc": global_load_nc,
    "cache_operator": cache_operator,
    "mul_shift": mul_shift,
    "dead_code": dead_code,
    "branch_swap": branch_swap,
}


# -- mutations ---------------------------------------------------------------------------
_NON_COMMUTATIVE = {"sub", "div", "rem", "shl", "shr"}


def swap_operands(program: PtxProgram, rng, ctx: Context) -> Edit:
    sites = [i for i, instr in program.instructions(top_level=False)
             if instr.base in _NON_COMMUTATIVE and len(instr.operands) == 3
             and not (instr.base in ("shl", "shr") and instr.opcode.endswith("64"))  # the amount is 32-bit
             and instr.operands[1] != instr.operands[2] and registers_in(instr.operands[1])
             and registers_in(instr.operands[2])]
    i = _choose_weighted(program, rng, sites, "no non-commutative op on two registers")
    instr = program.lines[i].instr
    instr.operands = [instr.operands[0], instr.operands[2], instr.operands[1]]
    return Edit("swap_operands", [i], instr.opcode)


# Arithmetic and comparisons only: an off-by-one in a bit mask (and/or), a clamp (min/max)
# or a select is often invisible (a mask bit the data never sets), so those are left out.
_CONSTANT_OPS = {"add", "sub", "mul", "mad", "setp", "shl", "shr"}
_ADDRESS_OFFSET = re.compile(r"\+\s*(-?\d+)\s*\]")


def off_by_one(program: PtxProgram, rng, ctx: Context) -> Edit:
    """An integer constant (an operand, or an address offset) changed by one."""
    sites = []
    for i, instr in program.instructions(top_level=False):
        for k, op in enumerate(instr.operands):
            if k and instr.base in _CONSTANT_OPS and _INT.match(op):
                sites.append((i, k, "operand"))
            elif instr.base in ("ld", "st") and _ADDRESS_OFFSET.search(op) and "param" not in instr.opcode:
                sites.append((i, k, "address"))
    i, k, kind = _choose_weighted(program, rng, sites, "no integer constant")
    instr = program.lines[i].instr
    delta = rng.choice([-1, 1])
    before = instr.operands[k]
    if kind == "operand":
        instr.operands[k] = str(int(before) + delta)
    else:
        instr.operands[k] = _ADDRESS_OFFSET.sub(lambda m: f"+ {int(m.group(1)) + delta} ]", before, count=1)
    return Edit("off_by_one", [i], f"{kind} {before} -> {instr.operands[k]}")


_FLIPPED = {"lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "eq": "ne", "ne": "eq",
            "lo": "hs", "hs": "lo", "ls": "hi", "hi": "ls"}


def flip_comparison(program: PtxProgram, rng, ctx: Context) -> Edit:
    sites = [i for i, instr in program.instructions(top_level=False)
             if instr.base == "setp" and len(instr.modifiers) > 1 and instr.modifiers[0] in _FLIPPED]
    i = _choose_weighted(program, rng, sites, "no setp comparison")
    instr = program.lines[i].instr
    mods = instr.modifiers
    before = instr.opcode
    instr.opcode = ".".join(["setp", _FLIPPED[mods[0]]] + mods[1:])
    return Edit("flip_comparison", [i], f"{before} -> {instr.opcode}")


def drop_barrier(program: PtxProgram, rng, ctx: Context) -> Edit:
    """One CTA-wide ``bar.sync`` removed, among those that may order conflicting
    shared-memory accesses (``barriers.barrier_roles``); barriers whose removal provably
    changes no ordering are left out and listed, with their reason, in ``Edit.excluded``."""
    sites, excluded = [], []
    for f, function in enumerate(program.functions):
        for line, role in sorted(barrier_roles(program, f, ctx.block_threads.get(function.name)).items()):
            if role is None:
                sites.append(line)
            else:
                excluded.append({"line": line + 1, "reason": role[0], "detail": role[1]})
    if not sites and excluded:
        raise NotApplicable(f"every bar.sync is provably redundant ({', '.join(e['reason'] for e in excluded)})")
    i = _choose_weighted(program, rng, sites, "no bar.sync between conflicting shared-memory accesses")
    text = program.lines[i].render().strip()
    program.delete([i])
    return Edit("drop_barrier", [i], text, excluded)


def wrong_address_register(program: PtxProgram, rng, ctx: Context) -> Edit:
    """The base register of a global load or store address replaced by the address
    register of another global access, one into another buffer where the parameters tell
    (by def-use taint), else any other."""
    accesses = []
    for f, function in enumerate(program.functions):
        taint = _param_taint(program, f, ctx.address_params.get(function.name, set())
                             | ctx.readonly_params.get(function.name, set()))
        for i, instr in program.instructions(f, top_level=False):
            if instr.base in ("ld", "st") and instr.modifiers[:1] == ["global"]:
                k = 1 if instr.base == "ld" else 0
                if len(instr.operands) > k and instr.operands[k].startswith("["):
                    regs = registers_in(instr.operands[k])
                    if regs:
                        accesses.append((f, i, k, regs[0], frozenset(taint.get(regs[0], {"?"}))))
    sites = []
    for f, i, k, reg, source in accesses:
        prefix = NUMBERED_REGISTER.match(reg)
        if not prefix:
            continue
        same_kind = {(r, s) for g, _, _, r, s in accesses if g == f and r != reg
                     and (NUMBERED_REGISTER.match(r) or prefix).group(1) == prefix.group(1)}
        known = source and "?" not in source
        other_buffer = sorted(r for r, s in same_kind if known and s and "?" not in s and s != source)
        others = other_buffer or sorted(r for r, _ in same_kind)
        if others:
            sites.append((i, k, reg, others))
    i, k, reg, others = _choose_weighted(program, rng, sites,
                                         "no global load or store with another address register to take")
    instr = program.lines[i].instr
    new = rng.choice(others)
    instr.operands[k] = re.sub(re.escape(reg) + r"\b", new, instr.operands[k], count=1)
    return Edit("wrong_address_register", [i], f"{instr.opcode} address {reg} -> {new}")


_TYPE_BYTES = re.compile(r"^[bsuf](8|16|32|64|128)$")
_VECTOR = re.compile(r"^v(2|4|8)$")
_SHARED_ADDRESS = re.compile(r"^\[\s*(?P<base>[^\]+]+?)\s*(?:\+\s*(?P<offset>-?\d+)\s*)?\]$")


def _access_bytes(instr: Instruction) -> int:
    """Bytes one ld/st moves: element width times vector length (so the wrong offset keeps
    the access aligned, as a hand edit that compiles and runs would)."""
    width = next((int(m.group(1)) // 8 for m in map(_TYPE_BYTES.match, instr.modifiers) if m), 4)
    lanes = next((int(m.group(1)) for m in map(_VECTOR.match, instr.modifiers) if m), 1)
    return max(1, width) * lanes


def wrong_shared_offset(program: PtxProgram, rng, ctx: Context) -> Edit:
    """A shared-memory load or store addresses the neighbouring element: ``[%r + k]`` ->
    ``[%r + k + size]`` (``st.shared [%r]`` -> ``st.shared [%r+4]`` for a 4-byte store),
    or ``- size`` where the offset is positive and the draw says so."""
    sites = []
    for i, instr in program.instructions(top_level=False):
        if instr.base not in ("ld", "st") or not instr.modifiers[:1] \
                or not instr.modifiers[0].startswith("shared"):
            continue
        k = 1 if instr.base == "ld" else 0
        if len(instr.operands) > k and _SHARED_ADDRESS.match(instr.operands[k]):
            sites.append((i, k))
    i, k = _choose_weighted(program, rng, sites, "no ld.shared or st.shared with a plain address")
    instr = program.lines[i].instr
    match = _SHARED_ADDRESS.match(instr.operands[k])
    offset, size = int(match.group("offset") or 0), _access_bytes(instr)
    new = offset - size if offset >= size and rng.random() < 0.5 else offset + size
    before = instr.operands[k]
    instr.operands[k] = f"[{match.group('base')}+{new}]"
    return Edit("wrong_shared_offset", [i], f"{instr.opcode} address {before} -> {instr.operands[k]}")


def _guards(program: PtxProgram, function: int) -> list:
    """Predicate registers used as guards in a function, without their negation."""
    return sorted({instr.guard.lstrip("!") for _, instr in program.instructions(function, top_level=False)
                   if instr.guard and instr.guard.lstrip("!").startswith("%")})


def flip_store_guard(program: PtxProgram, rng, ctx: Context) -> Edit:
    """The guard of a predicated global store changed: negated (``@%p`` -> ``@!%p``), or
    replaced by another predicate that guards an instruction of the same function."""
    sites = [i for i, instr in program.instructions(top_level=False)
             if instr.base in ("st", "red", "atom") and instr.modifiers[:1] == ["global"] and instr.guard]
    i = _choose_weighted(program, rng, sites, "no predicated global store")
    instr = program.lines[i].instr
    before, negated = instr.guard, instr.guard.startswith("!")
    predicate = before.lstrip("!")
    others = [p for p in _guards(program, program.lines[i].function) if p != predicate]
    if others and rng.random() < 0.5:
        instr.guard = ("!" if negated else "") + rng.choice(others)
    else:
        instr.guard = predicate if negated else "!" + predicate
    return Edit("flip_store_guard", [i], f"{instr.opcode} guard @{before} -> @{instr.guard}")


MUTATIONS = {
    "swap_operands": swap_operands,
    "off_by_one": off_by_one,
    "flip_comparison": flip_comparison,
    "drop_barrier": drop_barrier,
    "wrong_address_register": wrong_address_register,
    "wrong_shared_offset": wrong_shared_offset,
    "flip_store_guard": flip_store_guard,
}


def apply_rewrites(ptx: str, names: list, rng, ctx: Context) -> tuple:
    """Apply the named rewrites in order, skipping those without a site; returns the new
    PTX and the Edits that applied."""
    program = PtxProgram(ptx)
    edits = []
    for name in names:
        try:
            edits.append(REWRITES[name](program, rng, ctx))
        except NotApplicable:
            continue
    return program.print(), edits


def apply_mutation(ptx: str, name: str, rng, ctx: Context) -> tuple:
    """One mutation; raises NotApplicable when the program has no site for it."""
    program = PtxProgram(ptx)
    edit = MUTATIONS[name](program, rng, ctx)
    return program.print(), edit
