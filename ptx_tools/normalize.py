"""Canonical PTX text, its content hash, and splitting a module into one module per entry.

Normalised PTX is still valid PTX. It drops what does not change the code (comments,
``.file``/``.loc`` line info, DWARF ``.section`` blocks and with them the ``debug`` target flag, labels nothing
jumps to) and
renames what only reflects where or with what else a kernel was compiled: label numbers
(``$L__BB3_7``), local depot numbers, and internal symbols whose names carry a file hash
or a counter (``_INTERNAL_<hash>``, ``$str$2``, ``__unnamed_4``). So one kernel compiled
alone or next to others, in one file or another, normalises to the same text.
"""
from __future__ import annotations

import hashlib
import re

from ._text import LABEL_DEF, STRING, identifiers, strip_comments, sub_identifiers
from .parse import PtxModule, parse_ptx

_LINE_INFO = re.compile(r"^[ \t]*(?:\.loc|@@DWARF)\b[^\n]*\n?", re.M)
_LOCAL_DEPOT = re.compile(r"__local_depot\d+")

# Internal (non-visible, non-extern) module symbols whose names are made by the compiler,
# each with the canonical name stem it gets; renamed in order of first appearance.
_COMPILER_SYMBOLS = [
    (re.compile(r".*_INTERNAL_[0-9a-f]+_.*"), "_INTERNAL_{}"),
    (re.compile(r"\$str(?:\$\d+)?"), "$str${}"),
    (re.compile(r"__unnamed_\d+"), "__unnamed_{}"),
]
_NUMBERED_SYMBOL = re.compile(r"(.+)\$\d+")


def normalize_ptx(text: str) -> str:
    """Canonical, still-assemblable PTX text (raises PtxError on malformed input)."""
    module = parse_ptx(text)
    clean = strip_comments(text)
    header, blocks = [], []
    for item in module.items:
        if item.kind in ("file", "section"):
            continue
        chunk = clean[item.start:item.end]
        if item.kind == "function":
            chunk = _normalize_function(chunk)
        elif item.kind == "header":
            chunk = _drop_debug_target(chunk)
        (header if item.kind == "header" else blocks).append(chunk)
    body = "\n\x00\n".join(blocks)  # \x00 marks item boundaries through the renaming below
    body = sub_identifiers(body, _symbol_renames(module, body))
    parts = ["\n".join(_canonical_lines("\n".join(header)))]
    parts += ["\n".join(_canonical_lines(block)) for block in body.split("\n\x00\n")]
    return "\n\n".join(p for p in parts if p) + "\n"


def ptx_hash(text: str) -> str:
    """sha256 hex digest of the normalised text."""
    return hashlib.sha256(normalize_ptx(text).encode()).hexdigest()


def split_module(text: str) -> dict:
    """One standalone PTX module per entry: the header, the entry, and the variables and
    functions it references (transitively), in their original order.

    Debug information is left out: its DWARF sections describe the whole module and would
    reference functions a split module no longer has.
    """
    module = parse_ptx(text)
    clean = strip_comments(text)
    items = module.items
    definers: dict = {}
    for index, item in enumerate(items):
        for name in item.names:
            definers.setdefault(name, []).append(index)
    references = [set(identifiers(clean[it.start:it.end])) - set(it.names) for it in items]
    always = {i for i, it in enumerate(items) if it.kind in ("header", "pragma")}

    result = {}
    for entry in module.entries:
        keep = set(always)
        todo = list(definers.get(entry.name, []))
        while todo:
            index = todo.pop()
            if index in keep:
                continue
            keep.add(index)
            for name in references[index]:
                todo.extend(i for i in definers.get(name, []) if i not in keep)
        pieces = []
        for index in sorted(keep):
            piece = text[items[index].start:items[index].end]
            if items[index].kind == "function":
                piece = _LINE_INFO.sub("", piece)
            elif items[index].kind == "header":
                piece = _drop_debug_target(piece)
            pieces.append(piece)
        result[entry.name] = "\n".join(pieces) + "\n"
    return result


def _drop_debug_target(header: str) -> str:
    # ptxas refuses ".target ..., debug" without DWARF sections, which are dropped.
    return re.sub(r"\s*,\s*debug\b", "", header) if header.lstrip().startswith(".target") else header


def _normalize_function(chunk: str) -> str:
    """Drop line info and unused labels; number labels in order of first appearance."""
    chunk = _LINE_INFO.sub("", chunk)
    definitions = LABEL_DEF.findall(chunk)
    uses = {}
    for name in identifiers(chunk):
        uses[name] = uses.get(name, 0) + 1
    defined_count = {}
    for name in definitions:
        defined_count[name] = defined_count.get(name, 0) + 1
    unused = {name for name, n in defined_count.items() if uses.get(name, 0) <= n}
    if unused:
        chunk = LABEL_DEF.sub(lambda m: "" if m.group(1) in unused else m.group(0), chunk)
    renames, labels = {}, 0
    for name in identifiers(chunk):
        if name in defined_count and name not in renames:
            renames[name] = f"$L__BB{labels}"
            labels += 1
        elif _LOCAL_DEPOT.fullmatch(name):
            # The depot is function-scoped; its number is just the function's index.
            renames[name] = "__local_depot0"
    return sub_identifiers(chunk, renames)


def _symbol_renames(module: PtxModule, text: str) -> dict:
    internal = {v.name for v in module.variables if not (v.visible or v.extern or v.weak)}
    internal |= {f.name for f in module.functions
                 if not (f.visible or f.extern or f.weak or f.is_entry)}
    used = set(identifiers(text))
    renames, counters = {}, {}
    for name in identifiers(text):
        if name not in internal or name in renames:
            continue
        stem = None
        for pattern, template in _COMPILER_SYMBOLS:
            if pattern.fullmatch(name):
                stem = template
                break
        if stem is None:
            numbered = _NUMBERED_SYMBOL.fullmatch(name)
            if not numbered:
                continue
            stem = numbered.group(1).replace("{", "{{").replace("}", "}}") + "${}"
        index = counters.get(stem, 0)
        new = stem.format(index)
        while new in used and new != name:  # never collide with a name already there
            new += "_"
        counters[stem] = index + 1
        renames[name] = new
        used.add(new)
    return renames


def _canonical_line(line: str) -> str:
    pieces, last = [], 0
    for m in STRING.finditer(line):
        pieces.append(_canonical_code(line[last:m.start()]))
        pieces.append(m.group(0))
        last = m.end()
    pieces.append(_canonical_code(line[last:]))
    return "".join(pieces).strip()


def _canonical_code(code: str) -> str:
    code = re.sub(r"\s+", " ", code)
    code = re.sub(r" ?, ?", ", ", code)
    return re.sub(r" ;", ";", code)


def _canonical_lines(block: str) -> list:
    """One statement line per input line, whitespace collapsed, indented by nesting depth."""
    out, depth = [], 0
    for raw in block.splitlines():
        line = _canonical_line(raw)
        if not line:
            continue
        code = STRING.sub("", line)
        leading_closers = len(code) - len(code.lstrip("})"))
        out.append("\t" * max(depth - leading_closers, 0) + line)
        depth += code.count("{") + code.count("(") - code.count("}") - code.count(")")
        depth = max(depth, 0)
    return out
