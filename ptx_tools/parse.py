"""Parse PTX text into a PtxModule: header, functions (params, launch directives, body,
instruction histogram) and module-level variables.

The parser reads only the module structure; bodies are kept as text. Function bodies are
found by brace matching, so a large module parses quickly. Anything it does not understand
at module scope is an error, reported with its line number.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ._text import LineIndex, iter_instructions, strip_comments
from .errors import PtxError

TYPE_SIZES = {
    "b8": 1, "u8": 1, "s8": 1, "pred": 1,
    "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "f16x2": 4, "bf16x2": 4,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "tf32": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16,
    "e4m3": 1, "e5m2": 1,
}
STATE_SPACES = ("global", "shared", "const", "local", "param", "generic")
LINKAGES = (".visible", ".extern", ".weak", ".common")
VARIABLE_SPACES = (".global", ".const", ".shared", ".local")
INT_DIRECTIVES = ("minnctapersm", "maxnreg", "maxclusterrank", "minnctapersm")
DIM_DIRECTIVES = ("reqntid", "maxntid", "reqnctapercluster")

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>"(?:[^"\\\n]|\\.)*")
     |(?P<word>\.?[A-Za-z_$%][\w$]*(?:::[\w$]+)*)
     |(?P<num>0[fFdD][0-9a-fA-F]+|0[xX][0-9a-fA-F]+U?|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?U?)
     |(?P<punct>@@|[{}()\[\];,=:<>+\-*/|&!@~^?])
     |(?P<bad>\S)
    )""", re.X)
_END_OF_LINE = re.compile(r"[^\n]*")


@dataclass
class PtxParam:
    """One parameter of a function: scalar (``.param .u32 n``), pointer
    (``.param .u64 .ptr .global .align 16 p``) or byte array (``.param .align 8 .b8 s[24]``)."""
    name: str
    type: str
    size: int
    align: int
    array_len: Optional[int] = None
    is_ptr: bool = False
    ptr_space: Optional[str] = None
    ptr_align: Optional[int] = None
    space: str = "param"  # .func parameters may also be declared .reg


@dataclass
class PtxFunction:
    """A ``.entry`` or ``.func``; ``body`` is None for a declaration without a body."""
    name: str
    is_entry: bool
    visible: bool = False
    extern: bool = False
    weak: bool = False
    params: list = field(default_factory=list)
    return_params: list = field(default_factory=list)
    reqntid: Optional[tuple] = None
    maxntid: Optional[tuple] = None
    minnctapersm: Optional[int] = None
    maxnreg: Optional[int] = None
    maxclusterrank: Optional[int] = None
    reqnctapercluster: Optional[tuple] = None
    explicitcluster: bool = False
    noreturn: bool = False
    pragmas: list = field(default_factory=list)
    body: Optional[str] = None
    line: int = 0
    opcode_counts: dict = field(default_factory=dict)   # full opcode -> count
    base_opcode_counts: dict = field(default_factory=dict)  # "mma" -> count

    @property
    def param_bytes(self) -> int:
        """Bytes of the parameter buffer, with each parameter at its alignment."""
        offset = 0
        for p in self.params:
            offset = -(-offset // p.align) * p.align + p.size
        return offset


@dataclass
class PtxVariable:
    """A module-level ``.global`` / ``.const`` / ``.shared`` declaration."""
    name: str
    state_space: str
    type: str
    align: Optional[int] = None
    size: Optional[int] = None  # None for an unsized extern array (dynamic shared memory)
    dims: tuple = ()
    visible: bool = False
    extern: bool = False
    weak: bool = False
    initialized: bool = False
    line: int = 0


@dataclass
class ModuleItem:
    """A top-level piece of the module, with its character span in the source text."""
    kind: str  # header, file, section, pragma, alias, function, variable
    start: int
    end: int
    names: tuple = ()  # symbols it defines or declares


@dataclass
class PtxModule:
    version: str
    target: list
    address_size: int
    functions: list = field(default_factory=list)
    variables: list = field(default_factory=list)
    items: list = field(default_factory=list, repr=False)

    @property
    def entries(self) -> list:
        return [f for f in self.functions if f.is_entry]

    @property
    def funcs(self) -> list:
        return [f for f in self.functions if not f.is_entry]

    @property
    def arch(self) -> str:
        """The target architecture, e.g. ``sm_90a`` (the first ``.target`` word)."""
        return self.target[0] if self.target else ""

    def function(self, name: str) -> PtxFunction:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def opcode_counts(self) -> Counter:
        """Full-opcode histogram summed over all functions."""
        total = Counter()
        for f in self.functions:
            total.update(f.opcode_counts)
        return total


def parse_ptx(text: str) -> PtxModule:
    """Parse PTX text; raises PtxError(line, reason) on malformed input."""
    return _Parser(text).parse()


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.clean = strip_comments(text)
        self.lines = LineIndex(text)
        self.pos = 0
        self.module = PtxModule(version="", target=[], address_size=0)
        self._functions_by_name: dict = {}

    # -- tokens -------------------------------------------------------------------------
    def error(self, offset: int, reason: str) -> PtxError:
        return PtxError(self.lines.line(offset), reason)

    def peek(self):
        """(kind, value, start) of the next token without consuming it; kind None at EOF."""
        m = _TOKEN.match(self.clean, self.pos)
        if not m or m.lastgroup is None:
            return None, "", len(self.clean)
        return m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)

    def take(self):
        m = _TOKEN.match(self.clean, self.pos)
        if not m or m.lastgroup is None:
            self.pos = len(self.clean)
            return None, "", len(self.clean)
        self.pos = m.end()
        return m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)

    def expect(self, value: str, what: str):
        kind, tok, start = self.take()
        if tok != value:
            found = repr(tok) if kind else "end of file"
            raise self.error(start, f"expected {value!r} {what}, found {found}")
        return start

    def take_int(self, what: str) -> int:
        kind, tok, start = self.take()
        if kind != "num":
            raise self.error(start, f"expected a number for {what}, found {tok or 'end of file'!r}")
        try:
            return int(tok.rstrip("U"), 0)
        except ValueError:
            raise self.error(start, f"expected an integer for {what}, found {tok!r}") from None

    def skip_line(self):
        self.pos = _END_OF_LINE.match(self.clean, self.pos).end()

    def skip_to_semicolon(self, start: int, what: str) -> int:
        end = self.clean.find(";", self.pos)
        if end < 0:
            raise self.error(start, f"{what} is not terminated by ';' (truncated file?)")
        self.pos = end + 1
        return self.pos

    def match_brace(self, open_at: int, what: str) -> int:
        """Offset just past the '}' matching the '{' at ``open_at``."""
        depth = 0
        for m in re.compile(r"[{}]").finditer(self.clean, open_at):
            depth += 1 if m.group(0) == "{" else -1
            if depth == 0:
                return m.end()
        raise self.error(open_at, f"unbalanced braces: '{{' of {what} is never closed")

    # -- module -------------------------------------------------------------------------
    def parse(self) -> PtxModule:
        mod = self.module
        kind, tok, start = self.peek()
        if tok != ".version":
            line = self.lines.line(start) if kind else 1
            raise PtxError(line, "missing .version directive at the start of the module"
                           + (f" (found {tok!r})" if kind else " (empty text)"))
        while True:
            kind, tok, start = self.take()
            if kind is None:
                break
            if tok == ".version":
                kind, value, at = self.take()
                if kind != "num" or not re.fullmatch(r"\d+\.\d+", value):
                    raise self.error(at, f"bad .version {value!r}")
                mod.version = value
                mod.items.append(ModuleItem("header", start, self.pos))
            elif tok == ".target":
                mod.target = self._target_list(start)
                mod.items.append(ModuleItem("header", start, self.pos))
            elif tok == ".address_size":
                mod.address_size = self.take_int(".address_size")
                mod.items.append(ModuleItem("header", start, self.pos))
            elif tok == ".file":
                self.skip_line()
                mod.items.append(ModuleItem("file", start, self.pos))
            elif tok == "@@":  # old-style @@DWARF debug lines
                self.skip_line()
                mod.items.append(ModuleItem("section", start, self.pos))
            elif tok == ".section":
                self._section(start)
            elif tok == ".pragma":
                end = self.skip_to_semicolon(start, ".pragma")
                mod.items.append(ModuleItem("pragma", start, end))
            elif tok == ".alias":
                end = self.skip_to_semicolon(start, ".alias")
                names = tuple(re.findall(r"[A-Za-z_$%][\w$]*", self.clean[start + 6:end]))
                mod.items.append(ModuleItem("alias", start, end, names[:1]))
            elif tok in LINKAGES or tok in (".entry", ".func") or tok in VARIABLE_SPACES:
                self._declaration(tok, start)
            elif tok == "}":
                raise self.error(start, "unbalanced braces: '}' without a matching '{'")
            else:
                raise self.error(start, f"unknown directive {tok!r} at module scope")
        if not mod.target:
            raise PtxError(self.lines.line(len(self.text)), "missing .target directive")
        return mod

    def _target_list(self, start: int) -> list:
        targets = []
        while True:
            kind, tok, at = self.take()
            if kind != "word":
                raise self.error(at, f"bad .target list: {tok!r}")
            targets.append(tok)
            if self.peek()[1] != ",":
                return targets
            self.take()

    def _section(self, start: int):
        kind, name, at = self.take()
        if kind != "word":
            raise self.error(at, f"expected a section name after .section, found {name!r}")
        kind, tok, brace = self.take()
        if tok != "{":
            raise self.error(brace, f"expected '{{' after .section {name}")
        self.pos = self.match_brace(brace, f".section {name}")
        self.module.items.append(ModuleItem("section", start, self.pos))

    def _declaration(self, tok: str, start: int):
        linkage = set()
        while tok in LINKAGES:
            linkage.add(tok[1:])
            kind, tok, at = self.take()
        if tok in (".entry", ".func"):
            self._function(tok == ".entry", linkage, start)
        elif tok in VARIABLE_SPACES:
            self._variable(tok[1:], linkage, start)
        else:
            raise self.error(start, f"unknown directive {tok!r} at module scope")

    # -- variables ----------------------------------------------------------------------
    def _variable(self, space: str, linkage: set, start: int):
        end = self.skip_to_semicolon(start, f".{space} declaration")
        decl = self.clean[start:end]
        head = decl.split("=", 1)[0]
        m = re.search(r"([A-Za-z_$%][\w$]*)\s*((?:\[\s*\d*\s*\]\s*)*)$", head.rstrip(" \t\n;"))
        if not m:
            raise self.error(start, f"cannot read the name in .{space} declaration")
        dims = tuple(int(d) if d else None for d in re.findall(r"\[\s*(\d*)\s*\]", m.group(2)))
        types = [t for t in re.findall(r"\.(\w+)", head[:m.start()]) if t in TYPE_SIZES]
        align = re.search(r"\.align\s+(\d+)", head)
        vector = re.search(r"\.v(\d)\b", head)
        vtype = types[-1] if types else ""
        size = None
        if vtype and None not in dims:
            size = TYPE_SIZES[vtype] * (int(vector.group(1)) if vector else 1)
            for d in dims:
                size *= d
        self.module.variables.append(PtxVariable(
            name=m.group(1), state_space=space, type=vtype,
            align=int(align.group(1)) if align else None, size=size, dims=dims,
            visible="visible" in linkage, extern="extern" in linkage, weak="weak" in linkage,
            initialized="=" in decl, line=self.lines.line(start)))
        self.module.items.append(ModuleItem("variable", start, end, (m.group(1),)))

    # -- functions ----------------------------------------------------------------------
    def _function(self, is_entry: bool, linkage: set, start: int):
        kind_name = ".entry" if is_entry else ".func"
        fn = PtxFunction(name="", is_entry=is_entry, visible="visible" in linkage,
                         extern="extern" in linkage, weak="weak" in linkage,
                         line=self.lines.line(start))
        kind, tok, at = self.peek()
        if not is_entry and tok == "(":
            self.take()
            fn.return_params = self._param_list(f"return value of {kind_name}", at)
        while self.peek()[1] == ".attribute":  # e.g. .attribute(.unified(...))
            self.take()
            self._skip_parens()
        kind, name, at = self.take()
        if kind != "word" or name.startswith("."):
            raise self.error(at, f"expected a name after {kind_name}, found {name or 'end of file'!r}")
        fn.name = name
        if self.peek()[1] == "(":
            self.take()
            fn.params = self._param_list(f"{kind_name} {name}", at)
        self._performance_directives(fn)
        kind, tok, brace = self.take()
        if tok == ";":
            end = self.pos
        elif tok == "{":
            end = self.match_brace(brace, f"{kind_name} {name}")
            self.pos = end
            fn.body = self.text[brace + 1:end - 1]
            counts = Counter(iter_instructions(self.clean[brace + 1:end - 1]))
            fn.opcode_counts = dict(counts)
            base = Counter()
            for opcode, n in counts.items():
                base[opcode.split(".", 1)[0]] += n
            fn.base_opcode_counts = dict(base)
        else:
            raise self.error(brace, f"expected '{{' or ';' after the header of {kind_name} {name}, "
                             f"found {tok or 'end of file'!r}")
        self._add_function(fn)
        self.module.items.append(ModuleItem("function", start, end, (name,)))

    def _add_function(self, fn: PtxFunction):
        # A prototype followed by its definition is one function.
        old = self._functions_by_name.get(fn.name)
        if old is None:
            self._functions_by_name[fn.name] = fn
            self.module.functions.append(fn)
        elif fn.body is not None:
            index = self.module.functions.index(old)
            fn.visible |= old.visible
            self.module.functions[index] = fn
            self._functions_by_name[fn.name] = fn

    def _skip_parens(self):
        kind, tok, at = self.take()
        if tok != "(":
            raise self.error(at, "expected '('")
        depth = 1
        while depth:
            kind, tok, pos = self.take()
            if kind is None:
                raise self.error(at, "unbalanced parentheses")
            depth += {"(": 1, ")": -1}.get(tok, 0)

    def _param_list(self, what: str, at: int) -> list:
        params = []
        if self.peek()[1] == ")":
            self.take()
            return params
        while True:
            params.append(self._param(what))
            kind, tok, pos = self.take()
            if tok == ")":
                return params
            if tok != ",":
                raise self.error(pos, f"broken parameter list of {what}: expected ',' or ')', "
                                 f"found {tok or 'end of file'!r}")

    def _param(self, what: str) -> PtxParam:
        kind, tok, start = self.take()
        if tok not in (".param", ".reg"):
            raise self.error(start, f"broken parameter list of {what}: expected .param, "
                             f"found {tok or 'end of file'!r}")
        space = tok[1:]
        align = ptr_align = array_len = None
        is_ptr = False
        ptr_space = None
        ptype = name = None
        while True:
            kind, tok, at = self.peek()
            if kind != "word":
                break
            self.take()
            if tok == ".align":
                value = self.take_int(".align")
                if is_ptr:
                    ptr_align = value
                else:
                    align = value
            elif tok == ".ptr":
                is_ptr = True
            elif is_ptr and tok[1:] in STATE_SPACES:
                ptr_space = tok[1:]
            elif tok.startswith(".") and tok[1:] in TYPE_SIZES:
                ptype = tok[1:]
            elif tok.startswith("."):
                raise self.error(at, f"broken parameter list of {what}: unexpected {tok!r}")
            else:
                name = tok
                break
        if name is None or ptype is None:
            raise self.error(start, f"broken parameter list of {what}: "
                             f"{'no type' if ptype is None else 'no name'} in a parameter")
        if self.peek()[1] == "[":
            self.take()
            array_len = self.take_int(f"array length of parameter {name}")
            self.expect("]", f"after the array length of parameter {name}")
        size = TYPE_SIZES[ptype] * (array_len or 1)
        return PtxParam(name=name, type=ptype, size=size, align=align or TYPE_SIZES[ptype],
                        array_len=array_len, is_ptr=is_ptr, ptr_space=ptr_space,
                        ptr_align=ptr_align, space=space)

    def _performance_directives(self, fn: PtxFunction):
        while True:
            kind, tok, at = self.peek()
            if kind != "word" or not tok.startswith("."):
                return
            self.take()
            directive = tok[1:]
            if directive in DIM_DIRECTIVES:
                dims = [self.take_int(tok)]
                while self.peek()[1] == ",":
                    self.take()
                    dims.append(self.take_int(tok))
                setattr(fn, directive, tuple(dims))
            elif directive in INT_DIRECTIVES:
                setattr(fn, directive, self.take_int(tok))
            elif directive == "explicitcluster":
                fn.explicitcluster = True
            elif directive == "noreturn":
                fn.noreturn = True
            elif directive == "pragma":
                kind, value, pos = self.take()
                if kind != "str":
                    raise self.error(pos, "expected a string after .pragma")
                fn.pragmas.append(value.strip('"'))
                self.expect(";", "after .pragma")
            else:
                raise self.error(at, f"unknown directive {tok!r} in the header of {fn.name}")
