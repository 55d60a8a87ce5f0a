"""The hand edit of the Smith-Waterman experiment, as a script over the compiler's PTX.

``rings_to_shared`` moves ring buffers that a kernel keeps in global memory (one region
per program, at ``param + program * bytes_per_program``) into dynamic shared memory:

1. it declares ``.extern .shared`` (or reuses the module's own extern array, past the
   bytes the compiler already uses);
2. it replaces the ``ld.param`` of each ring pointer with PTX that computes
   ``shared_base - %ctaid.x * bytes_per_program``, so the compiler's own pointer arithmetic
   (which adds the program's offset back) lands on the ring's shared-memory copy; 64-bit
   integer arithmetic wraps, so this is exact;
3. it follows every register derived from those pointers (add, sub, mad, mov, selp) and
   turns the ``ld.global``/``st.global`` whose address is such a register into
   ``ld.shared``/``st.shared`` (cache qualifiers dropped: shared memory has none);
4. optionally it sets ``.maxnreg`` (the experiment raised the register budget).

The edit matches patterns, not line numbers, so it still applies when the compiler's
output changes; when the PTX no longer has the shape it needs, ``PtxEditError`` says what
is missing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from dataset_spec.errors import PtxdsError


SHARED_SYMBOL = "ring_smem"
SHARED_ALIGN = 16
EDIT_REGS = ("%ringd", "%ringr")  # register families the edit declares (b64, b32)


class PtxEditError(PtxdsError, ValueError):
    """The PTX does not have the shape the edit needs; the message names what is missing."""


@dataclass(frozen=True)
class Ring:
    """A ring buffer kept in global memory: the entry parameter holding its base pointer and
    the bytes each program (CTA along x) owns."""
    param: str
    bytes_per_program: int


@dataclass
class EditResult:
    ptx: str
    dynamic_smem: int          # total dynamic shared memory the edited kernel needs
    converted: dict            # ring param -> number of loads/stores moved to shared memory


_LD_PARAM = r"^(\s*)ld\.param\.(?:b64|u64|s64)\s+(%[\w]+)\s*,\s*\[\s*{param}\s*\]\s*;\s*$"
_DEF = re.compile(r"^\s*(?:@!?%\w+\s+)?(?P<op>[a-z]+)(?P<mods>(?:\.[\w:]+)*)\s+(?P<dst>%\w+)\s*,(?P<srcs>[^;]*);")
_MEMORY = re.compile(r"^(?P<lead>\s*(?:@!?%\w+\s+)?)(?P<op>ld|st)\.global(?P<mods>(?:\.[\w:]+)*)"
                     r"(?P<rest>\s[^;]*\[\s*(?P<addr>%\w+)\s*(?:\+\s*-?\w+\s*)?\][^;]*;.*)$")
_REG = re.compile(r"%\w+")
# Ops through which a pointer stays a pointer (into the same ring).
POINTER_OPS = ("add", "sub", "mad", "mov", "selp")
CACHE_QUALIFIERS = re.compile(r"\.(?:ca|cg|cs|lu|cv|wb|wt|nc|L1::[\w]+|L2::[\w]+|relaxed|weak|gpu|sys|cta)\b")


def rings_to_shared(ptx: str, entry: str, rings: list, maxnreg: int | None = None,
                    compiler_smem: int = 0) -> EditResult:
    """``ptx`` with ``rings`` of ``entry`` moved to dynamic shared memory (see the module
    docstring). ``compiler_smem``: dynamic shared bytes the compiler's own code uses."""
    start, end = _entry_span(ptx, entry)
    head, body, tail = ptx[:start], ptx[start:end], ptx[end:]
    symbol, head = _shared_symbol(head)
    offset = _align(compiler_smem) if symbol != SHARED_SYMBOL else 0
    lines = body.split("\n")
    pointer_regs, converted = {}, {}
    replacements = {}
    for index, ring in enumerate(rings):
        line_no, reg = _find_param_load(lines, ring.param, entry)
        pointer_regs[reg] = ring.param
        replacements[line_no] = _base_code(lines[line_no], reg, symbol, offset, ring.bytes_per_program, index)
        offset += _align(ring.bytes_per_program)
    derived = _derived_registers(lines, set(pointer_regs), pointer_regs)
    for i, line in enumerate(lines):
        if i in replacements:
            continue
        match = _MEMORY.match(line)
        if match and match.group("addr") in derived:
            mods = CACHE_QUALIFIERS.sub("", match.group("mods"))
            lines[i] = f"{match.group('lead')}{match.group('op')}.shared{mods}{match.group('rest')}"
            ring = derived[match.group("addr")]
            converted[ring] = converted.get(ring, 0) + 1
        elif _uses_outside_arithmetic(line, derived):
            raise PtxEditError(f"entry {entry}: a ring pointer register is used outside address arithmetic "
                               f"and ld/st.global: {line.strip()!r}; the edit cannot move it to shared memory")
    for ring in rings:
        if not converted.get(ring.param):
            raise PtxEditError(f"entry {entry}: no ld.global/st.global address derives from {ring.param}; "
                               f"the compiler's PTX no longer matches the ring-buffer edit")
    for line_no, code in replacements.items():
        lines[line_no] = code
    body = "\n".join(lines)
    body = _declare_edit_registers(body, len(rings), entry)
    if maxnreg is not None:
        body = _set_maxnreg(body, maxnreg, entry)
    return EditResult(head + body + tail, offset, converted)


def _align(n: int) -> int:
    return -(-int(n) // SHARED_ALIGN) * SHARED_ALIGN


def _entry_span(ptx: str, entry: str) -> tuple:
    match = re.search(rf"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+{re.escape(entry)}\s*\(", ptx, re.M)
    if match is None:
        raise PtxEditError(f"the PTX has no .entry {entry}; the edit applies to that kernel only")
    open_brace = ptx.find("{", ptx.find(")", match.end()))
    depth, i = 0, open_brace
    while i < len(ptx):
        depth += {"{": 1, "}": -1}.get(ptx[i], 0)
        if depth == 0:
            return match.start(), i + 1
        i += 1
    raise PtxEditError(f"entry {entry}: unbalanced braces; the PTX is truncated")


def _shared_symbol(head: str) -> tuple:
    """The module's ``.extern .shared`` array, or ours declared before the entry."""
    existing = re.search(r"^\s*\.extern\s+\.shared\s+\.align\s+\d+\s+\.b8\s+(\w+)\s*\[\s*\]\s*;", head, re.M)
    if existing:
        return existing.group(1), head
    declaration = f".extern .shared .align {SHARED_ALIGN} .b8 {SHARED_SYMBOL}[];\n"
    return SHARED_SYMBOL, head + declaration


def _find_param_load(lines: list, param: str, entry: str) -> tuple:
    pattern = re.compile(_LD_PARAM.format(param=re.escape(param)))
    hits = [(i, m.group(2)) for i, line in enumerate(lines) if (m := pattern.match(line))]
    if len(hits) != 1:
        raise PtxEditError(f"entry {entry}: expected one 64-bit ld.param of {param}, found {len(hits)}; "
                           f"the compiler's PTX no longer matches the ring-buffer edit")
    return hits[0]


def _base_code(line: str, reg: str, symbol: str, offset: int, stride: int, index: int) -> str:
    indent = re.match(r"\s*", line).group(0)
    d0, d1, r0 = f"{EDIT_REGS[0]}{2 * index}", f"{EDIT_REGS[0]}{2 * index + 1}", f"{EDIT_REGS[1]}{index}"
    code = [f"// ring in shared memory at {symbol}+{offset}, minus this program's {stride}-byte global offset",
            f"mov.u32 {r0}, %ctaid.x;",
            f"mul.wide.u32 {d0}, {r0}, {stride};",
            f"mov.u64 {d1}, {symbol};",
            f"add.s64 {d1}, {d1}, {offset};",
            f"sub.s64 {reg}, {d1}, {d0};"]
    return "\n".join(indent + c for c in code)


def _derived_registers(lines: list, roots: set, ring_of: dict) -> dict:
    """Registers computed from the ring pointers -> the ring they point into (to a fixed
    point, so loop-carried pointers count). A register fed by two rings is an error."""
    derived = dict(ring_of)
    changed = True
    while changed:
        changed = False
        for line in lines:
            match = _DEF.match(line)
            if not match or match.group("op") not in POINTER_OPS:
                continue
            dst = match.group("dst")
            sources = {derived[r] for r in _REG.findall(match.group("srcs")) if r in derived}
            if not sources:
                continue
            if len(sources) > 1 or (dst in derived and derived[dst] not in sources):
                raise PtxEditError(f"register {dst} mixes two ring pointers ({line.strip()!r}); "
                                   f"the edit needs one ring per address register")
            if dst not in derived:
                derived[dst] = sources.pop()
                changed = True
    return derived


def _uses_outside_arithmetic(line: str, derived: dict) -> bool:
    code = line.split("//", 1)[0]
    regs = [r for r in _REG.findall(code) if r in derived]
    if not regs:
        return False
    match = _DEF.match(code)
    return not (match and match.group("op") in POINTER_OPS + ("setp",))


def _declare_edit_registers(body: str, count: int, entry: str) -> str:
    """Declare the edit's registers before the entry's first ``.reg`` line."""
    match = re.search(r"^([ \t]*)\.reg\s", body, re.M)
    if match is None:
        raise PtxEditError(f"entry {entry}: no .reg declarations; the PTX is not compiler output the edit knows")
    indent = match.group(1)
    decl = (f"{indent}.reg .b64 {EDIT_REGS[0]}<{2 * count}>;\n"
            f"{indent}.reg .b32 {EDIT_REGS[1]}<{count}>;\n")
    return body[:match.start()] + decl + body[match.start():]


def _set_maxnreg(body: str, maxnreg: int, entry: str) -> str:
    """Replace or add ``.maxnreg`` among the entry's performance directives."""
    if re.search(r"^\s*\.maxnreg\s+\d+", body, re.M):
        return re.sub(r"^(\s*)\.maxnreg\s+\d+", rf"\g<1>.maxnreg {int(maxnreg)}", body, count=1, flags=re.M)
    close = body.find(")")
    brace = body.find("{", close)
    if close < 0 or brace < 0:
        raise PtxEditError(f"entry {entry}: no parameter list and body; cannot set .maxnreg")
    return body[:brace] + f".maxnreg {int(maxnreg)}\n" + body[brace:]
