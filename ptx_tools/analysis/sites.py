"""Where a mutant differs from its base: the first changed line (``mutated_site``) and its
guard predicate, which the probes instrument and the equivalence reasons read."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Optional

from ..program import _INSTRUCTION


class ProbeError(ValueError):
    """The site cannot be instrumented; the message says why."""


@dataclass
class MutatedSite:
    """Where a mutation changed the program: ``line`` (0-based, in the mutant's text) is the
    first changed line, or for a deletion the line that now stands where the deleted one
    was; ``guard`` is the changed instruction's guard predicate (None: unguarded)."""
    line: int
    kind: str                 # replace, delete or insert
    before: str               # the base's line(s) there
    after: str                # the mutant's line(s) there
    guard: Optional[str] = None
    base_line: Optional[int] = None  # the same place in the base's text (0-based)


def _guard_of(text: str) -> Optional[str]:
    match = _INSTRUCTION.match(text)
    return match.group("guard") if match else None


def mutated_site(base_ptx: str, mutant_ptx: str) -> MutatedSite:
    """The first place ``mutant_ptx`` differs from ``base_ptx``, by line."""
    before, after = base_ptx.split("\n"), mutant_ptx.split("\n")
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        old, new = "\n".join(before[i1:i2]), "\n".join(after[j1:j2])
        guards = {_guard_of(t) for t in before[i1:i2] + after[j1:j2] if t.strip()}
        # a guard both sides share: the site runs only under it; a changed guard: count arrivals
        guard = guards.pop() if len(guards) == 1 else None
        return MutatedSite(j1, tag, old, new, guard, i1)
    raise ProbeError("the mutant's PTX equals its base's: there is no mutated site to probe")
