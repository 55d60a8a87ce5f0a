"""Coverage probe of a mutated site: an instrumented copy of a mutant's PTX that counts how
often the changed instruction runs.

``analysis.sites.mutated_site(base_ptx, mutant_ptx)`` finds the first line the mutation changed (for a
deleted line, the place where it stood). ``instrument_site(ptx, site)`` appends a ``.u64``
counter parameter to the entry that holds the site and, right before the site, adds
``add.u64 %count, %count, 1`` to a per-thread 64-bit register under the site instruction's own
guard predicate, so a predicated-off instruction does not count as executed; every thread
adds its count to the ``uint64`` counter with one ``red.global.add.u64`` where it leaves the entry
(``flush_at_exits``: before each ``ret``/``exit``, under its guard). An atomic per
execution would serialise a hot loop on one address and make the copy far slower than
the mutant; a 32-bit counter wraps (2^21 executions by each of 2^18 threads read 0). Nothing else changes: the copy runs the same instructions as the mutant plus
the counter's set-up, increment and flush.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..analysis.sites import MutatedSite, ProbeError
from ..program import PtxProgram

COUNTER_PARAM_SUFFIX = "_ptxds_site_count"
COUNTER_REGISTER = "%ptxds_site"
COUNT_REGISTER = "%ptxds_count"
PROBE_MARK = "// ptxds site probe"


@dataclass
class SiteProbe:
    """The instrumented PTX and what a launch must add: ``entry`` gains the last parameter
    ``param`` (a pointer to one zeroed ``uint32``), incremented each time the site runs."""
    ptx: str
    entry: str
    param: str
    line: int                 # the site's line in the instrumented text (0-based)
    site: str                 # the site's text, stripped


def _unique(text: str, stem: str) -> str:
    name = stem
    while re.search(re.escape(name) + r"(?![\w$])", text):
        name += "_"
    return name


def _append_param(text: str, entry: str, param: str) -> str:
    head = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\(", text)
    if head is None:
        raise ProbeError(f"entry {entry} has no parameter list in the PTX")
    depth, i = 1, head.end()
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    close = i - 1
    inside = text[head.end():close]
    separator = "," if inside.strip() else ""
    kept = inside.rstrip()
    return text[:head.end()] + kept + f"{separator}\n\t.param .u64 {param}\n" + text[close:]


def flush_at_exits(program: PtxProgram, function: int, count: str, address: str) -> None:
    """Before every ``ret``/``exit`` of ``function`` (under its guard), and before its closing
    brace where the last instruction can fall through, each thread adds its ``count``
    register to the ``uint64`` at ``address``."""
    flush = f"red.global.add.u64 [{address}], {count}; {PROBE_MARK}"
    exits = [(i, instr.guard) for i, instr in program.instructions(function, top_level=False)
             if instr.base in ("ret", "exit")]
    last = [i for i, _ in program.instructions(function, top_level=False)]
    falls_through = not last or program.lines[last[-1]].instr.base not in ("ret", "exit", "bra", "trap") \
        or bool(program.lines[last[-1]].instr.guard)
    if falls_through:
        exits.append((program.functions[function].close_line, None))
    for i, guard in sorted(exits, reverse=True):
        indent = program.lines[i].instr.indent if program.lines[i].instr is not None else "\t"
        program.insert(i, [f"{indent}{'@' + guard + ' ' if guard else ''}{flush}"], function)


def first_statement(program: PtxProgram, function: int) -> int:
    """The first line of a body that is neither a declaration nor blank: set-up goes there."""
    return next(i for i in program.body(function) if program.lines[i].depth != 1 or not (
        program.lines[i].kind == "decl" or not program.lines[i].text.split("//", 1)[0].strip()))


def instrument_site(ptx: str, site: MutatedSite) -> SiteProbe:
    """``ptx`` with a counter of the site's executions (see the module docstring)."""
    program = PtxProgram(ptx)
    if not 0 <= site.line < len(program.lines):
        raise ProbeError(f"site line {site.line + 1} is outside the program ({len(program.lines)} lines)")
    target = program.lines[site.line]
    if target.function < 0 or target.kind == "open":
        raise ProbeError(f"site line {site.line + 1} is outside any function body: {target.text.strip()!r}")
    function = program.functions[target.function]
    if not function.is_entry:
        raise ProbeError(f"the site is in .func {function.name}, not in an entry: a counter parameter "
                         "cannot reach it")
    text = program.print()
    register, count = _unique(text, COUNTER_REGISTER), _unique(text, COUNT_REGISTER)
    param = _unique(text, function.name + COUNTER_PARAM_SUFFIX)
    indent = target.instr.indent if target.instr is not None else "\t"
    guard = f"@{site.guard} " if site.guard else ""
    increment = f"add.u64 {count}, {count}, 1;"
    program.insert(site.line, [f"{indent}{guard}{increment} {PROBE_MARK}"], target.function)
    flush_at_exits(program, target.function, count, register)
    program.insert(first_statement(program, target.function),
                   [f"\tld.param.u64 {register}, [{param}]; {PROBE_MARK}",
                    f"\tcvta.to.global.u64 {register}, {register}; {PROBE_MARK}",
                    f"\tmov.u64 {count}, 0; {PROBE_MARK}"], target.function)
    program.insert(function.open_line + 1, [f"\t.reg .b64 {register}; {PROBE_MARK}",
                                            f"\t.reg .b64 {count}; {PROBE_MARK}"], target.function)
    lines = program.print().split("\n")
    site_line = next(i for i, line in enumerate(lines) if increment in line and PROBE_MARK in line) + 1
    instrumented = _append_param("\n".join(lines), function.name, param)
    added = instrumented.count("\n") + 1 - len(lines)  # the parameter's lines, all above the site
    site_text = (site.before if site.kind == "delete" else site.after).strip()
    return SiteProbe(instrumented, function.name, param, site_line + added, site_text)


def strip_probe(ptx: str, param: str) -> str:
    """``ptx`` without the probe's lines and parameter: the text it was made from, up to the
    comma and line breaks around the removed parameter."""
    kept = [line for line in ptx.split("\n") if PROBE_MARK not in line]
    text = "\n".join(kept)
    return re.sub(r",?\s*\.param \.u64 " + re.escape(param) + r"\s*(?=\))", "\n", text)
