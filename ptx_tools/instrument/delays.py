"""Delay injection: a copy of a kernel in which half of each block's warps arrive late.

A dropped barrier that orders global memory (or shared memory that racecheck cannot see)
races only when one side of it is late, and the trials' schedules may never make it so.
``delayed_copy(ptx, parity)`` makes the late side: before every store, atomic or reduction
to global, shared or generic memory (``st.*``, ``stmatrix``, ``atom.*``, ``red.*``, and
``cp.async`` copies into shared memory; guarded or not) and after every remaining block
barrier (``bar.sync``, ``barrier.sync``, ``bar.red``, ``barrier.red``), the threads whose
warp index (linear thread id / 32, the id from ``%tid.x/y/z`` and ``%ntid.x/y``) has
parity ``parity`` sleep for ``nanoseconds`` (``nanosleep.u32``, sm_70 and later). Each
delay is a scoped block ``{ .reg ...; ... }`` whose registers have names the kernel does
not use, so every other line is unchanged. Delays before stores make a producer's writes
late (a read it no longer waits for sees the old value); delays after barriers make a
consumer's reads late (a write that no longer waits for them overwrites the value first).
The two parities make either side of a pair of neighbouring warps the late one.

PTX the instrumentation cannot handle safely (no sm_70+ target, a PTX ISA before 6.3, a
store or barrier on a line holding more than one statement, nothing to delay) is refused
with ``DelayError``, never instrumented half-way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import PtxError
from ..program import PtxProgram

DELAY_MARK = "// ptxds delay"
DEFAULT_NANOSECONDS = 4000
MAX_NANOSECONDS = 1_000_000  # nanosleep's documented limit: 1 ms
PARITIES = (0, 1)
WARP_SIZE = 32
REGISTER_STEM = "%ptxds_dly"
PREDICATE_STEM = "%ptxds_dlp"
# Opcodes that write memory another thread may read (st.local and st.param cannot be).
_STORE_BASES = ("st", "stmatrix", "atom", "red")
_PRIVATE_SPACES = ("local", "param")
_ASYNC_COPY = re.compile(r"^cp\.async\.(ca|cg)\.shared")
_BARRIER_OPCODE = re.compile(r"^(bar|barrier)\.(cta\.)?(sync|red)\b")
# Any store-like or barrier opcode in a line's code, to refuse lines the parser could not split.
_SENSITIVE = re.compile(r"(?<![\w.%$])(st|stmatrix|atom|red|bar|barrier|cp\.async\.c[ag])\.[a-z]")
_TARGET = re.compile(r"^[ \t]*\.target[ \t]+([^\n/]+)", re.M)
_VERSION = re.compile(r"^[ \t]*\.version[ \t]+(\d+)\.(\d+)", re.M)


class DelayError(ValueError):
    """The PTX cannot be instrumented with delays; the message says why."""


@dataclass
class DelayedPtx:
    """A delayed copy: ``parity`` of the warps sleeping, ``stores`` and ``barriers`` the
    number of delays placed before stores and after barriers."""
    ptx: str
    parity: int
    nanoseconds: int
    stores: int
    barriers: int

    def describe(self) -> str:
        return (f"warps of parity {self.parity} sleep {self.nanoseconds} ns before {self.stores} store(s) "
                f"and after {self.barriers} barrier(s)")


def is_shared_store(opcode: str) -> bool:
    """Whether ``opcode`` writes memory other threads can read: a store, atomic or
    reduction outside the local and parameter spaces, or a ``cp.async.ca``/``.cg`` copy
    into shared memory (issued late, it lands late)."""
    if _ASYNC_COPY.match(opcode):
        return True
    parts = opcode.split(".")
    if parts[0] not in _STORE_BASES:
        return False
    return not any(part in _PRIVATE_SPACES for part in parts[1:])


def is_block_barrier(opcode: str) -> bool:
    """``bar.sync``/``barrier.sync``/``bar.red`` (and ``.cta`` forms): a waiting barrier."""
    return bool(_BARRIER_OPCODE.match(opcode))


def _check_target(ptx: str) -> None:
    target = _TARGET.search(ptx)
    if target is None:
        raise DelayError("the PTX has no .target directive: nanosleep needs sm_70 or later; add .target")
    arch = target.group(1).split(",")[0].strip()
    number = re.fullmatch(r"sm_(\d+)[a-z]?", arch)
    if number is None or int(number.group(1)) < 70:
        raise DelayError(f".target {arch} is not sm_70 or later: nanosleep does not exist there")
    version = _VERSION.search(ptx)
    if version is None or (int(version.group(1)), int(version.group(2))) < (6, 3):
        found = f"{version.group(1)}.{version.group(2)}" if version else "none"
        raise DelayError(f"PTX ISA {found} is older than 6.3, the first with nanosleep: pin a newer .version")


def _fresh(text: str, stem: str) -> str:
    """``stem`` lengthened until neither it nor it followed by digits names anything in ``text``."""
    name = stem
    while re.search(re.escape(name) + r"\d*(?![\w$])", text):
        name += "_"
    return name


def delay_block(indent: str, parity: int, nanoseconds: int, registers: str, predicate: str) -> list:
    """The scoped lines that make warps of ``parity`` sleep: linear thread id
    (tid.z * ntid.y + tid.y) * ntid.x + tid.x, warp index = id / 32, its parity compared."""
    r = [f"{registers}{i}" for i in range(3)]
    body = [f".reg .b32 {registers}<3>;",
            f".reg .pred {predicate};",
            f"mov.u32 {r[0]}, %tid.z;",
            f"mov.u32 {r[1]}, %ntid.y;",
            f"mov.u32 {r[2]}, %tid.y;",
            f"mad.lo.u32 {r[0]}, {r[0]}, {r[1]}, {r[2]};",
            f"mov.u32 {r[1]}, %ntid.x;",
            f"mov.u32 {r[2]}, %tid.x;",
            f"mad.lo.u32 {r[0]}, {r[0]}, {r[1]}, {r[2]};",
            f"shr.u32 {r[0]}, {r[0]}, {WARP_SIZE.bit_length() - 1};",
            f"and.b32 {r[0]}, {r[0]}, 1;",
            f"setp.eq.u32 {predicate}, {r[0]}, {parity};",
            f"@{predicate} nanosleep.u32 {nanoseconds};"]
    return [f"{indent}{{ {DELAY_MARK}"] + [f"{indent}\t{line} {DELAY_MARK}" for line in body] + \
        [f"{indent}}} {DELAY_MARK}"]


def delayed_copy(ptx: str, parity: int, nanoseconds: int = DEFAULT_NANOSECONDS, stores: bool = True,
                 barriers: bool = True) -> DelayedPtx:
    """``ptx`` with warps of ``parity`` sleeping before stores and/or after barriers (see the
    module docstring). Raises DelayError for PTX it cannot instrument."""
    if parity not in PARITIES:
        raise DelayError(f"parity must be 0 or 1, got {parity!r}")
    if not 0 < int(nanoseconds) <= MAX_NANOSECONDS:
        raise DelayError(f"nanoseconds must be in 1..{MAX_NANOSECONDS} (nanosleep's limit), got {nanoseconds}")
    if not stores and not barriers:
        raise DelayError("nothing to delay: ask for delays before stores, after barriers or both")
    if DELAY_MARK in ptx:
        raise DelayError("the PTX already holds delays (a delayed copy of a delayed copy): start from the kernel")
    _check_target(ptx)
    try:
        program = PtxProgram(ptx)
    except PtxError as exc:
        raise DelayError(f"the PTX does not parse: {exc}") from None
    registers, predicate = _fresh(ptx, REGISTER_STEM), _fresh(ptx, PREDICATE_STEM)
    before, after = [], []  # line indices
    for index, line in enumerate(program.lines):
        if line.function < 0:
            continue
        code = line.text.split("//", 1)[0]
        if line.kind != "instr":
            if line.kind in ("other", "open", "close") and _SENSITIVE.search(code.replace("{", " ").replace("}", " ")):
                raise DelayError(f"line {index + 1} holds a store or barrier the instrumentation cannot isolate "
                                 f"(more than one statement on the line): {line.text.strip()[:120]!r}")
            continue
        opcode = line.instr.opcode
        if stores and is_shared_store(opcode):
            before.append(index)
        elif barriers and is_block_barrier(opcode):
            after.append(index)
    if not before and not after:
        raise DelayError("the PTX has no store, atomic, reduction or block barrier to delay around")
    # the output is built from the original lines (printing the parsed program would
    # re-render every instruction), each store preceded and each barrier followed by a delay
    delays_before, delays_after = set(before), set(after)
    out = []
    for index, raw in enumerate(ptx.split("\n")):
        line = program.lines[index]
        if index in delays_before:
            out.extend(delay_block(line.instr.indent, parity, int(nanoseconds), registers, predicate))
        out.append(raw)
        if index in delays_after:
            out.extend(delay_block(line.instr.indent, parity, int(nanoseconds), registers, predicate))
    return DelayedPtx("\n".join(out), parity, int(nanoseconds), len(before), len(after))


def delayed_copies(ptx: str, nanoseconds: int = DEFAULT_NANOSECONDS) -> list:
    """Both parities' delayed copies, parity 0 first."""
    return [delayed_copy(ptx, parity, nanoseconds) for parity in PARITIES]


def strip_delays(ptx: str) -> str:
    """``ptx`` without the delay blocks: the text ``delayed_copy`` was given."""
    return "\n".join(line for line in ptx.split("\n") if DELAY_MARK not in line)
