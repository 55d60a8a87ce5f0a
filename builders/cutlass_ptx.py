"""Split a batched PTX module into one standalone module per entry, and read entry params.

Uses ``ptx_tools.split_module`` / ``normalize_ptx`` when the project's PTX tools provide
them; the small local fallbacks below cover what a CUTLASS module contains (header,
module-scope variables, ``.func``/``.entry`` definitions).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_DIRECTIVE = re.compile(r"^\s*(\.version|\.target|\.address_size)\b")
_SYMBOL = re.compile(r"[A-Za-z_$%][\w$]*")
_DEF_NAME = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_VAR_NAME = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:\[[^\]]*\])*\s*(?:=|;)")
_PARAM = re.compile(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)(?:\[(\d+)\])?")


@dataclass
class TopLevel:
    """One module-scope statement: a header directive, a variable, a function or entry."""
    kind: str  # header, variable, func, entry
    name: str
    text: str


def _statements(ptx: str) -> list[TopLevel]:
    items, buf, depth = [], [], 0
    for line in ptx.splitlines():
        stripped = line.strip()
        if depth == 0 and not buf:
            if not stripped or stripped.startswith("//"):
                continue
            if _DIRECTIVE.match(stripped):
                items.append(TopLevel("header", stripped.split()[0], stripped))
                continue
        buf.append(line)
        depth += line.count("{") - line.count("}")
        text = "\n".join(buf)
        is_def = re.search(r"\.(entry|func)\b", buf[0]) is not None
        done = depth == 0 and (("}" in line) if is_def and "{" in text else stripped.endswith(";"))
        if done:
            if is_def:
                kind = "entry" if re.search(r"\.entry\b", buf[0]) else "func"
                name = _DEF_NAME.search(text)
                items.append(TopLevel(kind, name.group(1) if name else "", text))
            else:
                name = _VAR_NAME.search(text.split("=")[0] + ";")
                items.append(TopLevel("variable", name.group(1) if name else "", text))
            buf = []
    return items


def split_entries(ptx: str) -> dict[str, str]:
    """entry name -> standalone PTX (header, the variables and functions it uses, the entry)."""
    try:
        from ptx_tools import split_module
        return split_module(ptx)
    except ImportError:
        pass
    items = _statements(ptx)
    header = [i.text for i in items if i.kind == "header"]
    defined = {i.name: i for i in items if i.kind in ("variable", "func") and i.name}
    order = [i for i in items if i.kind in ("variable", "func")]
    modules = {}
    for entry in (i for i in items if i.kind == "entry"):
        needed, stack = set(), [entry.text]
        while stack:
            for sym in set(_SYMBOL.findall(stack.pop())):
                if sym in defined and sym not in needed:
                    needed.add(sym)
                    stack.append(defined[sym].text)
        body = [i.text for i in order if i.name in needed]
        # Function definitions may come after use; PTX needs a prototype, so keep the
        # original order (the compiler already emitted declarations where it had to).
        modules[entry.name] = "\n".join(header) + "\n\n" + "\n\n".join(body + [entry.text]) + "\n"
    return modules


def normalize(ptx: str) -> str:
    """PTX with comments, label numbering and blank lines normalised (for comparison)."""
    try:
        from ptx_tools import normalize_ptx
        return normalize_ptx(ptx)
    except ImportError:
        pass
    text = re.sub(r"//[^\n]*", "", ptx)
    text = re.sub(r"\$L__BB\d+_", "$L__BB_", text)
    text = re.sub(r"__local_depot\d+", "__local_depot", text)
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip()) + "\n"


@dataclass
class EntryParam:
    """One ``.param`` of an entry: name, PTX type, byte size, alignment."""
    name: str
    ptx_type: str
    size: int
    align: int


def entry_params(ptx: str, entry: str) -> list[EntryParam]:
    """The parameters of ``entry`` in ``ptx``, in order."""
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\((.*?)\)", ptx, re.S)
    if not m:
        return []
    params = []
    for align, ptx_type, name, count in _PARAM.findall(m.group(1)):
        width = int(re.sub(r"\D", "", ptx_type) or 8) // 8
        size = width * (int(count) if count else 1)
        params.append(EntryParam(name, ptx_type, size, int(align) if align else width))
    return params
