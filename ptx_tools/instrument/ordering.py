"""Ordering probe: did a CTA barrier order any two threads' accesses to one address?

Dropping ``bar.sync 0`` can only change a result through a pair of accesses to one
address, by two different threads of one CTA, one since the previous CTA-wide barrier
(its *before* side) and one up to the next (its *after* side), at least one a write:
every other pair stays ordered by the barriers around it. Racecheck sees such pairs in
shared memory only; handhack's ring buffers, and Triton's scratch, are global.

``instrument_ordering(base_ptx, line, ctas)`` gives a copy of the base (barrier kept) in
which every load, store and atomic on either side of the barrier at ``line`` also updates
a per-CTA hash table in a scratch buffer. Each thread counts the barrier's executions (its
*epoch*); the CTA runs the barrier together, so an epoch names one barrier instance:

- an access on the before side records (epoch + 1, its 4-byte granules, thread, write?)
  with ``atom.cas``: one record per granule per epoch, marked ``multi`` once a second
  thread touches it (open addressing, 64 probes; a table too full to place a record
  counts an overflow);
- an access on the after side looks its granules up under the current epoch: a record
  left by another thread (or by several) with a write on either side is a *conflict*.

Tables alternate by epoch parity: the after side of epoch e reads parity e while the
before side of e + 1 fills the other, and no thread reaches e + 2 before every thread
has left the after side of e (it ends at a barrier). A record is keyed by CTA, state space
and address through a 35-bit tag (the count is folded into a 16-bit epoch); two granules
that share a slot and tag merge, which can
only add conflicts. Conflicts, lookups, overflows and records are the scratch buffer's
first four ``uint64`` words (``COUNTER_WORDS``; 64-bit so that no count wraps to 0); the
tables follow.

0 conflicts and 0 overflows on a trial mean that, on its inputs, the barrier ordered
nothing any thread could observe: dropping it is equivalent for this problem. Accesses
the probe cannot follow (asynchronous copies, tensor memory, wgmma operands, bulk copies,
mbarriers, texture and surface instructions, calls, generic addresses beside explicit
ones) raise ProbeError: the answer is then unknown, never "ordered nothing".
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..analysis.barriers import UnboundedSides, barrier_sides, global_access, is_cta_barrier, shared_access
from .divergence import _register_types, _type_of
from ..program import PtxProgram
from .probe import COUNTER_PARAM_SUFFIX, PROBE_MARK, ProbeError, _append_param, _unique, first_statement

COUNTER_WORDS = 4  # conflicts, lookups, overflows, records
TABLE_BYTES = 32 << 20
MAX_REGIONS = 1024
MAX_PROBES = 64
# a record: epoch (16 bits, 1..65535, the barrier count folded), tag (35), owner thread + 1
# (11), multi (1), write (1)
_EPOCH_SHIFT, _TAG_SHIFT, _OWNER_SHIFT = 48, 13, 2
_TAG_MASK, _OWNER_MASK, _EPOCHS = (1 << 35) - 1, (1 << 11) - 1, (1 << 16) - 1
_SPACE_CODE = {"shared": 1, "global": 2, "generic": 3}
_WIDTH = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "e4m3x2": 2, "e5m2x2": 2,
          "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
          "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16}
_PRIVATE = ("local", "param", "const")


@dataclass
class OrderingProbe:
    """The instrumented base: ``entry`` gains the last parameter ``param``, a pointer to a
    zeroed buffer of ``words`` uint64 (COUNTER_WORDS counters, then the tables' slots)."""
    ptx: str
    entry: str
    param: str
    words: int
    accesses: int       # instrumented instructions (before side, after side, both)
    barrier: str        # the barrier's text


@dataclass
class _Access:
    line: int
    space: str
    address: str
    granules: int
    writes: bool
    before: bool
    after: bool


def _next_pow2(n: int) -> int:
    return 1 << max(0, (max(1, n) - 1).bit_length())


def table_shape(ctas: int) -> tuple:
    """(regions, slots per region and parity): a region per CTA up to MAX_REGIONS (CTAs
    beyond share regions, their tags differ), TABLE_BYTES in all."""
    regions = min(_next_pow2(ctas), MAX_REGIONS)
    slots = max(1024, min(1 << 16, TABLE_BYTES // (2 * 8 * regions)))
    return regions, slots


def _space(instr) -> str:
    mods = instr.modifiers
    spaces = [m for m in mods if m in ("global", "shared", "shared::cta") + _PRIVATE or m.startswith("shared::")]
    if not spaces:
        return "generic"
    if spaces[0] in ("shared", "shared::cta"):
        return "shared"
    return spaces[0]


def _width(instr) -> int:
    mods = instr.modifiers
    element = next((_WIDTH[m] for m in reversed(mods) if m in _WIDTH), None)
    if element is None:
        raise ProbeError(f"{instr.opcode}: the access width is not known to the ordering probe")
    lanes = 4 if "v4" in mods else 2 if "v2" in mods else 8 if "v8" in mods else 1
    return element * lanes


def _access(line: int, instr, before: bool, after: bool):
    """The access an instruction makes, None when it makes none the barrier could order
    (thread-private or read-only memory); ProbeError when it cannot be followed."""
    reads_s, writes_s = shared_access(instr)
    reads_g, writes_g = global_access(instr)
    if instr.base in ("ld", "st", "atom", "red", "ldu"):
        space = _space(instr)
        if space in _PRIVATE or instr.base == "ldu" or "nc" in instr.modifiers:
            return None
        if space not in _SPACE_CODE:
            raise ProbeError(f"{instr.opcode}: state space {space} is not followed by the ordering probe")
        if "async" in instr.modifiers or "bulk" in instr.modifiers:
            raise ProbeError(f"{instr.opcode}: an asynchronous access")
        address = instr.operands[1] if instr.base in ("ld", "ldu", "atom") else instr.operands[0]
        width = _width(instr)
        return _Access(line, space, address, max(1, (width + 3) // 4), instr.base != "ld", before, after)
    if instr.base in ("ldmatrix", "stmatrix"):
        # every thread names one 16-byte row; rows named by lanes the shape does not use
        # only add records, so they can add conflicts and never hide one
        address = instr.operands[1] if instr.base == "ldmatrix" else instr.operands[0]
        return _Access(line, "shared", address, 4, instr.base == "stmatrix", before, after)
    if reads_s or writes_s or reads_g or writes_g or instr.base in ("tex", "suld", "sust", "tld4", "prefetchu"):
        raise ProbeError(f"{instr.opcode} on a side of the barrier: its accesses are not followed by the "
                         "ordering probe")
    return None


def _parse_address(operand: str) -> tuple:
    """``[%rd4+16]`` -> (terms, offset): registers/symbols and the summed constant."""
    text = operand.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise ProbeError(f"address operand {operand!r} is not [..]")
    inner = text[1:-1].replace(" ", "").replace("\t", "")
    terms, offset = [], 0
    for part in re.findall(r"[+-]?[^+-]+", inner):
        sign = -1 if part.startswith("-") else 1
        body = part.lstrip("+-")
        if re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", body):
            offset += sign * int(body, 0)
        elif sign < 0:
            raise ProbeError(f"address operand {operand!r} subtracts a register")
        else:
            terms.append(body)
    if not terms:
        raise ProbeError(f"address operand {operand!r} has no base register or symbol")
    return terms, offset


class _Emitter:
    """PTX text for the probe's set-up, epoch count and per-access table updates."""

    def __init__(self, text: str, param: str, regions: int, slots: int, types):
        self.r = {name: _unique(text, f"%ptxo_{name}") for name in (
            "base", "region", "epoch", "me", "cta", "a", "g", "h", "t", "tb", "sa", "old", "new", "cur",
            "e", "i", "w", "n", "j", "s", "f", "p", "q", "u", "m", "c", "l")}
        self.text, self.param, self.regions, self.slots, self.types = text, param, regions, slots, types
        self.labels = 0
        self.parity_bytes = regions * slots * 8

    def label(self, stem: str) -> str:
        self.labels += 1
        return _unique(self.text, f"ptxo_{stem}_{self.labels}")

    def declarations(self) -> list:
        r = self.r
        b64 = ", ".join(r[k] for k in ("base", "region", "a", "g", "h", "t", "tb", "sa", "old", "new", "cur", "u",
                                       "f", "n"))
        b32 = ", ".join(r[k] for k in ("epoch", "me", "cta", "e", "i", "w", "j", "s", "m", "c", "l"))
        return [f"\t.reg .b64 {b64};", f"\t.reg .b32 {b32};", f"\t.reg .pred {r['p']}, {r['q']};"]

    def setup(self) -> list:
        r = self.r
        return [f"ld.param.u64 {r['base']}, [{self.param}];",
                f"cvta.to.global.u64 {r['base']}, {r['base']};",
                f"mov.u32 {r['epoch']}, 0;",
                f"mov.u32 {r['w']}, %tid.z;", f"mov.u32 {r['c']}, %ntid.y;", f"mov.u32 {r['i']}, %tid.y;",
                f"mad.lo.u32 {r['i']}, {r['w']}, {r['c']}, {r['i']};",
                f"mov.u32 {r['c']}, %ntid.x;", f"mov.u32 {r['w']}, %tid.x;",
                f"mad.lo.u32 {r['me']}, {r['i']}, {r['c']}, {r['w']};",
                f"add.u32 {r['me']}, {r['me']}, 1;",
                f"mov.u32 {r['w']}, %ctaid.z;", f"mov.u32 {r['c']}, %nctaid.y;", f"mov.u32 {r['i']}, %ctaid.y;",
                f"mad.lo.u32 {r['i']}, {r['w']}, {r['c']}, {r['i']};",
                f"mov.u32 {r['c']}, %nctaid.x;", f"mov.u32 {r['w']}, %ctaid.x;",
                f"mad.lo.u32 {r['cta']}, {r['i']}, {r['c']}, {r['w']};",
                f"and.b32 {r['w']}, {r['cta']}, {self.regions - 1};",
                f"mul.wide.u32 {r['region']}, {r['w']}, {self.slots * 8};",
                f"add.s64 {r['region']}, {r['region']}, {r['base']};",
                f"add.s64 {r['region']}, {r['region']}, {COUNTER_WORDS * 8};"]

    def address(self, access: _Access) -> list:
        r = self.r
        terms, offset = _parse_address(access.address)
        out = [f"mov.u64 {r['a']}, {offset};"]
        for term in terms:
            if term.startswith("%"):
                kind = _type_of(term, *self.types)
                if kind.endswith("64"):
                    out.append(f"add.s64 {r['a']}, {r['a']}, {term};")
                elif kind.endswith("32"):
                    out += [f"cvt.u64.u32 {r['t']}, {term};", f"add.s64 {r['a']}, {r['a']}, {r['t']};"]
                else:
                    raise ProbeError(f"address register {term} has type {kind}")
            else:
                out += [f"mov.u64 {r['t']}, {term};", f"add.s64 {r['a']}, {r['a']}, {r['t']};"]
        return out

    def _hash(self, space: int) -> list:
        """h: the granule's 64-bit key (CTA, space, granule) mixed; s: its slot (low bits);
        f: its tag (the top 35 bits)."""
        r = self.r
        return [f"mul.lo.u64 {r['h']}, {r['g']}, 0x9E3779B97F4A7C15;",
                f"cvt.u64.u32 {r['t']}, {r['cta']};",
                f"mul.lo.u64 {r['t']}, {r['t']}, 0x632BE59BD9B4E019;",
                f"xor.b64 {r['h']}, {r['h']}, {r['t']};",
                f"xor.b64 {r['h']}, {r['h']}, {space << 56};",
                f"shr.u64 {r['t']}, {r['h']}, 29;", f"xor.b64 {r['h']}, {r['h']}, {r['t']};",
                f"mul.lo.u64 {r['h']}, {r['h']}, 0xBF58476D1CE4E5B9;",
                f"shr.u64 {r['t']}, {r['h']}, 32;", f"xor.b64 {r['h']}, {r['h']}, {r['t']};",
                f"cvt.u32.u64 {r['s']}, {r['h']};",
                f"and.b32 {r['s']}, {r['s']}, {self.slots - 1};",
                f"shr.u64 {r['f']}, {r['h']}, {64 - 35};"]

    def _warp_add(self, address: str) -> list:
        """Adds each converged thread's 1 to the counter at ``address`` with one atomic per
        warp (a single-address atomic per access would serialise every thread)."""
        r = self.r
        return [f"activemask.b32 {r['m']};", f"popc.b32 {r['c']}, {r['m']};",
                f"mov.u32 {r['l']}, %lanemask_lt;", f"and.b32 {r['l']}, {r['l']}, {r['m']};",
                f"setp.eq.u32 {r['q']}, {r['l']}, 0;", f"cvt.u64.u32 {r['t']}, {r['c']};",
                f"@{r['q']} red.global.add.u64 [{address}], {r['t']};"]

    def _epoch(self, source: str) -> list:
        """e: the barrier count in ``source`` folded into 1..65535 (0 marks an empty slot)."""
        r = self.r
        return [f"rem.u32 {r['e']}, {source}, {_EPOCHS};", f"add.u32 {r['e']}, {r['e']}, 1;"]

    def _table(self, count: str) -> list:
        """tb: this CTA's table for the parity of the barrier count in ``count`` (the raw
        count: folded epochs repeat a parity where they wrap)."""
        r = self.r
        return [f"and.b32 {r['l']}, {count}, 1;",
                f"mul.wide.u32 {r['tb']}, {r['l']}, {self.parity_bytes};",
                f"add.s64 {r['tb']}, {r['tb']}, {r['region']};"]

    def _slot_address(self) -> list:
        r = self.r
        return [f"add.u32 {r['w']}, {r['s']}, {r['j']};",
                f"and.b32 {r['w']}, {r['w']}, {self.slots - 1};",
                f"mul.wide.u32 {r['sa']}, {r['w']}, 8;",
                f"add.s64 {r['sa']}, {r['sa']}, {r['tb']};"]

    def _fields(self, source: str) -> list:
        """From the 64-bit record ``source``: i = its epoch, n = its tag."""
        r = self.r
        return [f"shr.u64 {r['t']}, {source}, {_EPOCH_SHIFT};", f"cvt.u32.u64 {r['i']}, {r['t']};",
                f"shr.u64 {r['n']}, {source}, {_TAG_SHIFT};",
                f"and.b64 {r['n']}, {r['n']}, {_TAG_MASK};"]

    def lookup(self, writes: bool) -> list:
        """After side: a conflict if the epoch's record of this granule is another thread's
        (or several threads') and a write is on either side."""
        r = self.r
        loop, found, done, full = (self.label(s) for s in ("look", "found", "looked", "full"))
        out = [f"setp.eq.u32 {r['p']}, {r['epoch']}, 0;", f"@{r['p']} bra {done};",
               *self._epoch(r['epoch']), *self._table(r['epoch']),
               *self._warp_add(f"{r['base']}+8"), f"mov.u32 {r['j']}, 0;", f"{loop}:",
               *self._slot_address(), f"ld.volatile.global.u64 {r['old']}, [{r['sa']}];", *self._fields(r['old']),
               f"setp.ne.u32 {r['p']}, {r['i']}, {r['e']};", f"@{r['p']} bra {done};",
               f"setp.eq.u64 {r['p']}, {r['n']}, {r['f']};", f"@{r['p']} bra {found};",
               f"add.u32 {r['j']}, {r['j']}, 1;", f"setp.lt.u32 {r['p']}, {r['j']}, {MAX_PROBES};",
               f"@{r['p']} bra {loop};", f"bra.uni {full};", f"{found}:",
               # owner != me or multi, and a write on either side
               f"shr.u64 {r['t']}, {r['old']}, {_OWNER_SHIFT};", f"cvt.u32.u64 {r['w']}, {r['t']};",
               f"and.b32 {r['w']}, {r['w']}, {_OWNER_MASK};",
               f"setp.ne.u32 {r['p']}, {r['w']}, {r['me']};",
               f"and.b64 {r['t']}, {r['old']}, 2;", f"setp.ne.u64 {r['q']}, {r['t']}, 0;",
               f"or.pred {r['p']}, {r['p']}, {r['q']};"]
        if not writes:
            out += [f"and.b64 {r['t']}, {r['old']}, 1;", f"setp.ne.u64 {r['q']}, {r['t']}, 0;",
                    f"and.pred {r['p']}, {r['p']}, {r['q']};"]
        out += [f"@{r['p']} red.global.add.u64 [{r['base']}], 1;", f"bra.uni {done};",
                f"{full}:", f"red.global.add.u64 [{r['base']}+16], 1;", f"{done}:"]
        return out

    def record(self, writes: bool) -> list:
        """Before side: the granule's record for epoch + 1 gains this thread (and a write)."""
        r = self.r
        loop, retry, fresh, done, next_slot = (self.label(s) for s in ("rec", "retry", "fresh", "recorded", "next"))
        w = 1 if writes else 0
        return [f"add.u32 {r['w']}, {r['epoch']}, 1;", *self._epoch(r['w']), *self._table(r['w']),
                *self._warp_add(f"{r['base']}+24"), f"mov.u32 {r['j']}, 0;", f"{loop}:",
                *self._slot_address(), f"ld.volatile.global.u64 {r['old']}, [{r['sa']}];", f"{retry}:",
                *self._fields(r['old']),
                f"setp.ne.u32 {r['p']}, {r['i']}, {r['e']};", f"@{r['p']} bra {fresh};",
                f"setp.ne.u64 {r['p']}, {r['n']}, {r['f']};", f"@{r['p']} bra {next_slot};",
                # the same granule this epoch: add multi (another thread) and the write bit
                f"shr.u64 {r['t']}, {r['old']}, {_OWNER_SHIFT};", f"cvt.u32.u64 {r['w']}, {r['t']};",
                f"and.b32 {r['w']}, {r['w']}, {_OWNER_MASK};",
                f"setp.ne.u32 {r['p']}, {r['w']}, {r['me']};",
                f"selp.b64 {r['new']}, 2, 0, {r['p']};", f"or.b64 {r['new']}, {r['new']}, {r['old']};",
                f"or.b64 {r['new']}, {r['new']}, {w};",
                f"setp.eq.u64 {r['p']}, {r['new']}, {r['old']};", f"@{r['p']} bra {done};",
                f"atom.global.cas.b64 {r['cur']}, [{r['sa']}], {r['old']}, {r['new']};",
                f"setp.eq.u64 {r['p']}, {r['cur']}, {r['old']};", f"@{r['p']} bra {done};",
                f"mov.b64 {r['old']}, {r['cur']};", f"bra.uni {retry};",
                f"{fresh}:",  # a slot empty for this epoch: claim it
                f"cvt.u64.u32 {r['new']}, {r['e']};", f"shl.b64 {r['new']}, {r['new']}, {_EPOCH_SHIFT};",
                f"shl.b64 {r['t']}, {r['f']}, {_TAG_SHIFT};",
                f"or.b64 {r['new']}, {r['new']}, {r['t']};",
                f"cvt.u64.u32 {r['t']}, {r['me']};", f"shl.b64 {r['t']}, {r['t']}, {_OWNER_SHIFT};",
                f"or.b64 {r['new']}, {r['new']}, {r['t']};", f"or.b64 {r['new']}, {r['new']}, {w};",
                f"atom.global.cas.b64 {r['cur']}, [{r['sa']}], {r['old']}, {r['new']};",
                f"setp.eq.u64 {r['p']}, {r['cur']}, {r['old']};", f"@{r['p']} bra {done};",
                f"mov.b64 {r['old']}, {r['cur']};", f"bra.uni {retry};",
                f"{next_slot}:", f"add.u32 {r['j']}, {r['j']}, 1;",
                f"setp.lt.u32 {r['p']}, {r['j']}, {MAX_PROBES};", f"@{r['p']} bra {loop};",
                f"red.global.add.u64 [{r['base']}+16], 1;", f"{done}:"]

    def access(self, access: _Access, guard) -> list:
        r = self.r
        skip, granule = self.label("skip"), self.label("granule")
        out = []
        if guard:
            out.append(f"@{guard[1:] if guard.startswith('!') else '!' + guard} bra {skip};")
        out += self.address(access)
        out += [f"shr.u64 {r['g']}, {r['a']}, 2;", f"mov.u64 {r['u']}, {access.granules};", f"{granule}:"]
        out += self._hash(_SPACE_CODE[access.space])
        if access.after:
            out += self.lookup(access.writes)
        if access.before:
            out += self.record(access.writes)
        out += [f"add.u64 {r['g']}, {r['g']}, 1;", f"sub.u64 {r['u']}, {r['u']}, 1;",
                f"setp.ne.u64 {r['p']}, {r['u']}, 0;", f"@{r['p']} bra {granule};", f"{skip}:"]
        return out


def instrument_ordering(base_ptx: str, line: int, ctas: int) -> OrderingProbe:
    """The ordering probe of the CTA barrier at ``line`` (0-based) of ``base_ptx`` for a
    launch of ``ctas`` CTAs (see the module docstring)."""
    program = PtxProgram(base_ptx)
    if not 0 <= line < len(program.lines) or program.lines[line].instr is None \
            or not is_cta_barrier(program.lines[line].instr):
        raise ProbeError(f"line {line + 1} is not a CTA-wide barrier (bar.sync 0)")
    function_index = program.lines[line].function
    function = program.functions[function_index]
    if not function.is_entry:
        raise ProbeError(f"the barrier is in .func {function.name}: the probe's buffer cannot reach it")
    try:
        sides = barrier_sides(program, line)
    except UnboundedSides as exc:
        raise ProbeError(f"{exc}: the barrier's sides are not bounded") from None
    instrs = dict(program.instructions(function_index, top_level=False))
    before, after = sides.before, sides.after
    accesses = [a for i in sorted(before | after)
                if (a := _access(i, instrs[i], i in before, i in after)) is not None]
    if not any(a.before for a in accesses) or not any(a.after for a in accesses):
        raise ProbeError("one side of the barrier makes no access the probe follows: nothing to order")
    spaces = {a.space for a in accesses}
    if "generic" in spaces and len(spaces) > 1:
        raise ProbeError("generic addresses beside shared/global ones: the probe cannot tell when they alias")
    types = _register_types(program, function_index)
    text = program.print()
    param = _unique(text, function.name + COUNTER_PARAM_SUFFIX)
    regions, slots = table_shape(ctas)
    emit = _Emitter(text, param, regions, slots, types)
    edits = [(a.line, [t if t.endswith(":") else f"\t{t} {PROBE_MARK}" for t in emit.access(a, instrs[a.line].guard)])
             for a in accesses]
    edits.append((line + 1, [f"\tadd.u32 {emit.r['epoch']}, {emit.r['epoch']}, 1; {PROBE_MARK}"]))
    for at, texts in sorted(edits, key=lambda edit: -edit[0]):  # bottom up: earlier lines keep their numbers
        program.insert(at, texts, function_index)
    program.insert(first_statement(program, function_index), [f"\t{t} {PROBE_MARK}" for t in emit.setup()],
                   function_index)
    program.insert(function.open_line + 1, [f"{t} {PROBE_MARK}" for t in emit.declarations()], function_index)
    instrumented = _append_param(program.print(), function.name, param)
    words = COUNTER_WORDS + 2 * regions * slots
    barrier_text = instrs[line].render().strip()
    return OrderingProbe(instrumented, function.name, param, words, len(accesses), barrier_text)
