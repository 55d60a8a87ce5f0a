"""Instruction-level view of PTX text for the rewrite engine.

A module is kept as its lines; each line inside a function body is classified (instruction,
label, declaration, brace, other) and an instruction is split into guard predicate, opcode
with modifiers, and top-level operands. Printing returns each untouched line verbatim, so
parse + print is byte-identical, and only edited lines are re-rendered. Basic blocks and
register def-use are computed on demand from the lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .errors import PtxError

REGISTER = re.compile(r"%[A-Za-z_][A-Za-z_]*\d+\b|%[A-Za-z_]\w*")
NUMBERED_REGISTER = re.compile(r"(%[A-Za-z_]+)(\d+)\b")
SPECIAL_REGISTERS = re.compile(
    r"%(tid|ntid|laneid|warpid|nwarpid|ctaid|nctaid|smid|nsmid|gridid|clusterid|nclusterid|"
    r"cluster_ctaid|cluster_nctaid|cluster_ctarank|cluster_nctarank|is_explicit_cluster|"
    r"lanemask_\w+|clock|clock64|clock_hi|pm\d+|pm\d+_64|envreg\d+|globaltimer\w*|"
    r"reserved_smem\w*|total_smem_size|dynamic_smem_size|aggr_smem_size|current_graph_exec)\b")
_INSTRUCTION = re.compile(
    r"^(?P<indent>[ \t]*)(?:@(?P<guard>!?%?[\w$]+)[ \t]+)?(?P<opcode>[a-z_][\w.:]*)"
    r"(?:[ \t]+(?P<operands>[^;]*?))?[ \t]*;(?P<tail>[ \t]*(?://.*)?)$")
_LABEL = re.compile(r"^(?P<indent>[ \t]*)(?P<name>[A-Za-z_$][\w$]*):(?!:)[ \t]*$")
_FUNCTION_HEAD = re.compile(r"(^|\s)\.(entry|func)\s")
_DECL = re.compile(r"^[ \t]*\.(reg|local|shared|param|const|global|pragma)\b")
_REG_RANGE = re.compile(r"\.reg\s+\.(\w+)\s+(%[A-Za-z_]+)<(\d+)>")


def split_operands(text: str) -> list:
    """Split an operand list at commas outside {} and []."""
    if not text or not text.strip():
        return []
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return parts


def registers_in(text: str) -> list:
    """Register names in an operand, special registers (%tid.x, %ctaid.y) left out."""
    return [m.group(0) for m in REGISTER.finditer(text) if not SPECIAL_REGISTERS.match(m.group(0))]


@dataclass
class Instruction:
    """``[@guard] opcode operands;`` with the opcode's modifiers kept in ``opcode``."""
    indent: str
    guard: Optional[str]
    opcode: str
    operands: list
    tail: str = ""

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def modifiers(self) -> list:
        return self.opcode.split(".")[1:]

    def render(self) -> str:
        guard = f"@{self.guard} " if self.guard else ""
        operands = f" {', '.join(self.operands)}" if self.operands else ""
        return f"{self.indent}{guard}{self.opcode}{operands};{self.tail}"


@dataclass
class Line:
    """One source line; ``depth`` is the brace depth at its start (1 = a function body)."""
    text: str
    kind: str  # instr, label, decl, open, close, other, outside
    depth: int = 0
    function: int = -1
    instr: Optional[Instruction] = None
    label: Optional[str] = None

    def render(self) -> str:
        return self.instr.render() if self.instr is not None else self.text


@dataclass
class Function:
    """A function body: line indices of its opening and closing braces."""
    name: str
    is_entry: bool
    open_line: int
    close_line: int


class PtxProgram:
    """A PTX module as editable lines. ``print()`` gives the text back."""

    def __init__(self, text: str):
        self.lines: list = []
        self.functions: list = []
        self._parse(text)

    def _parse(self, text: str) -> None:
        depth, header, header_text, function_index = 0, False, "", -1
        for number, raw in enumerate(text.split("\n")):
            code = raw.split("//", 1)[0]
            line = Line(raw, "outside", depth, -1)
            if depth == 0:
                if _FUNCTION_HEAD.search(" " + code):
                    header, header_text = True, ""
                if header:
                    header_text += code + "\n"
                    if code.strip() == "{":
                        match = re.search(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", header_text)
                        name = match.group(1) if match else f"function{len(self.functions)}"
                        self.functions.append(Function(name, ".entry" in header_text, number, -1))
                        function_index = len(self.functions) - 1
                        header = False
                        line.kind, line.function = "open", function_index
                    elif code.rstrip().endswith(";"):
                        header = False  # a declaration without a body
            else:
                line.function = function_index
                line.kind = self._classify(line, code)
            opens, closes = code.count("{"), code.count("}")
            depth += opens - closes
            if depth < 0:
                raise PtxError(number + 1, "unbalanced '}'")
            if line.function >= 0 and depth == 0 and line.kind != "open":
                line.kind = "close"
                self.functions[line.function].close_line = number
                function_index = -1
            self.lines.append(line)
        if depth != 0:
            raise PtxError(len(self.lines), "a '{' is never closed")

    @staticmethod
    def _classify(line: Line, code: str) -> str:
        stripped = code.strip()
        if not stripped:
            return "other"
        if stripped == "{":
            return "open"
        if stripped == "}":
            return "close"
        if _DECL.match(code):
            return "decl"
        label = _LABEL.match(code)
        if label:
            line.label = label.group("name")
            return "label"
        match = _INSTRUCTION.match(line.text)
        if match and line.text.count(";") == 1:
            line.instr = Instruction(match.group("indent"), match.group("guard"), match.group("opcode"),
                                     split_operands(match.group("operands") or ""), match.group("tail") or "")
            return "instr"
        return "other"

    def print(self) -> str:
        return "\n".join(line.render() for line in self.lines)

    # -- queries ---------------------------------------------------------------------
    def body(self, function: int) -> range:
        f = self.functions[function]
        return range(f.open_line + 1, f.close_line)

    def instructions(self, function: Optional[int] = None, top_level: bool = True):
        """(index, Instruction) pairs, by default only at the body's own nesting level."""
        for i, line in enumerate(self.lines):
            if line.kind != "instr" or (function is not None and line.function != function):
                continue
            if top_level and line.depth != 1:
                continue
            yield i, line.instr

    def register_ranges(self, function: int) -> dict:
        """``%r`` -> (type, count) for ``.reg .b32 %r<N>;`` declarations of a body."""
        ranges = {}
        for i in self.body(function):
            for match in _REG_RANGE.finditer(self.lines[i].text):
                ranges[match.group(2)] = (match.group(1), int(match.group(3)), self.lines[i].depth)
        return ranges

    def basic_blocks(self, function: int) -> list:
        """Lists of line indices: a block starts at a label or after a branch, return,
        barrier or nested block, and holds straight-line top-level instructions."""
        blocks, current = [], []
        for i in self.body(function):
            line = self.lines[i]
            if line.kind == "label" or line.depth != 1 or line.kind in ("open", "close", "other"):
                if current:
                    blocks.append(current)
                current = []
                continue
            if line.kind != "instr":
                continue
            current.append(i)
            if line.instr.base in ENDS_BLOCK or line.instr.base.startswith("bar"):
                blocks.append(current)
                current = []
        if current:
            blocks.append(current)
        return blocks

    def loops(self, function: int) -> list:
        """(first, last) line spans of the function's loops: a label and a later branch
        back to it."""
        labels = {self.lines[i].label: i for i in self.body(function) if self.lines[i].kind == "label"}
        spans = []
        for i, instr in self.instructions(function, top_level=False):
            if instr.base == "bra" and instr.operands and labels.get(instr.operands[0], i) < i:
                spans.append((labels[instr.operands[0]], i))
        return spans

    def site_weights(self, function: int) -> dict:
        """Line index -> how strongly a mutation prefers that line: 4 inside a loop (the main
        loop body, run most often), 2 after the last loop (the epilogue, which every thread
        reaches once the loop ends), 1 elsewhere; all 1 in a function without loops."""
        spans = self.loops(function)
        if not spans:
            return {i: 1 for i in self.body(function)}
        last_end = max(end for _, end in spans)
        return {i: 4 if any(start <= i <= end for start, end in spans) else 2 if i > last_end else 1
                for i in self.body(function)}

    def insert(self, index: int, texts: list, function: int) -> None:
        """Insert new lines before ``index`` (function bodies only)."""
        new = []
        for text in texts:
            line = Line(text, "other", 1, function)
            line.kind = self._classify(line, text.split("//", 1)[0])
            new.append(line)
        self.lines[index:index] = new
        for f in self.functions:
            if f.open_line >= index:
                f.open_line += len(new)
            if f.close_line >= index:
                f.close_line += len(new)

    def delete(self, indices) -> list:
        removed = [self.lines[i] for i in sorted(indices)]
        keep = set(indices)
        for f in self.functions:
            f.open_line -= sum(1 for i in keep if i < f.open_line)
            f.close_line -= sum(1 for i in keep if i < f.close_line)
        self.lines = [line for i, line in enumerate(self.lines) if i not in keep]
        return removed


ENDS_BLOCK = {"bra", "ret", "exit", "trap", "brx", "call"}
# Instructions that only compute registers from registers: no memory, no side effects,
# no communication between threads. Only these are reordered or followed by taint.
PURE_OPS = {
    "add", "sub", "mul", "mad", "fma", "mov", "shl", "shr", "and", "or", "xor", "not", "cvt",
    "cvta", "setp", "selp", "neg", "abs", "min", "max", "mul24", "mad24", "div", "rem", "bfe",
    "bfi", "prmt", "lop3", "popc", "clz", "brev", "sqrt", "rsqrt", "ex2", "lg2", "rcp", "sin",
    "cos", "testp", "copysign", "shf", "set", "slct", "sad", "cnot", "tanh", "fns", "bmsk",
    "szext", "dp4a", "dp2a",
}


def defs_and_uses(instr: Instruction) -> tuple:
    """Registers an instruction writes and reads (the guard counts as a read). Stores,
    branches and barriers write no register."""
    uses = set(registers_in(instr.guard or ""))
    if not instr.operands:
        return set(), uses
    if instr.base in ("st", "bar", "barrier", "bra", "red", "membar", "fence", "prefetch", "ret",
                      "exit", "cp", "trap") or instr.opcode.startswith("mbarrier.init"):
        return set(), uses | {r for op in instr.operands for r in registers_in(op)}
    defs = set(registers_in(instr.operands[0]))
    uses |= {r for op in instr.operands[1:] for r in registers_in(op)}
    return defs, uses
