"""Which passing members get compute-sanitizer racecheck without ``--sanitize``.

A dropped barrier that did not race in a few trials is still a race, so trials alone do
not settle it. A passing member derived from a base (a mutant or a rewrite) whose PTX
differs from its base's near a barrier, a shared-memory access or a fence, and that uses
shared memory, is run under racecheck together with its base whenever compute-sanitizer is
installed; a hazard its base lacks makes it ``race_detected`` (runner.apply_race_statuses).

racecheck does not see ``cp.async`` writes, so a ``drop_barrier`` mutant whose racecheck
found nothing its base lacks, in a kernel with asynchronous copies or ldmatrix reads, is
checked again in its synchronous-copy form (``ptx_tools.instrument.sync_copies``) beside its
base's (``synchronous_copy_pair``). A dropped barrier whose racecheck (of those forms where
they exist) found no hazard in the mutant or its base, and whose sides hold only accesses
racecheck sees, ordered no pair of conflicting accesses on the race-checked trial: its
ordering was never exercised (``barrier_never_ordered``).

racecheck does not see global memory either: every member still passing after it that
``delay_reason`` selects (every ``drop_barrier`` mutant among them) is run with half of its
warps delayed, beside its base (verify/probes/race_delays.py).
"""
from __future__ import annotations

import dataclasses
import difflib
import re
from typing import Optional

from ptx_tools.analysis.sites import ProbeError, mutated_site
from ptx_tools.instrument.sync_copies import racecheck_blind_spot, synchronous_copies
from ptx_tools.program import PtxProgram

from .sanitize import SanitizerMissing, find_sanitizer, uses_shared_memory

# Lines whose change can reorder threads' shared-memory traffic.
SYNC_OR_SHARED = re.compile(r"\b(bar\.(sync|arrive|red)|barrier\.|membar|fence\.|mbarrier|\w+\.shared\b|"
                            r"cp\.async|ldmatrix|stmatrix)")
CONTEXT_LINES = 2
# Rewrites that change only register names, arithmetic forms, unread code or global-load
# cache hints: they cannot order shared-memory traffic differently, so they need no racecheck.
ORDER_KEEPING_REWRITES = {"rename_registers", "mul_shift", "dead_code", "cache_operator", "global_load_nc"}


def touches_synchronisation(base_ptx: str, ptx: str, context: int = CONTEXT_LINES) -> bool:
    """Whether a changed line, or one within ``context`` lines of a change, is a barrier,
    a fence or a shared-memory access."""
    before, after = base_ptx.split("\n"), ptx.split("\n")
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        near = before[max(0, i1 - context):i2 + context] + after[max(0, j1 - context):j2 + context]
        if any(SYNC_OR_SHARED.search(line.split("//", 1)[0]) for line in near):
            return True
    return False


def racecheck_reason(row, base) -> str:
    """Why ``row`` (a passing member) gets racecheck, or '' when it does not."""
    if row.status != "passed" or base is None or not row.ptx or not base.ptx:
        return ""
    if not uses_shared_memory(row):
        return ""
    variant = row.variant or {}
    if variant.get("mutation") == "drop_barrier":
        return "a drop_barrier mutant"
    if "rewrites" in variant and set(variant["rewrites"]) <= ORDER_KEEPING_REWRITES:
        return ""
    if touches_synchronisation(base.ptx, row.ptx):
        return "its PTX differs from its base's near a barrier, fence or shared-memory access"
    return ""


def delay_reason(row, base) -> str:
    """Why ``row`` (a passing member) is run with delays injected beside its base
    (verify/probes/race_delays.py), or '' when it is not: every ``drop_barrier`` mutant, and any
    member whose PTX differs from its base's near a barrier, fence or shared-memory access.
    Unlike racecheck, delays expose global-memory orderings, so shared memory is not required."""
    if row.status != "passed" or base is None or base.status != "passed" or not row.ptx or not base.ptx:
        return ""
    variant = row.variant or {}
    if variant.get("mutation") == "drop_barrier":
        return "a drop_barrier mutant"
    if "rewrites" in variant and set(variant["rewrites"]) <= ORDER_KEEPING_REWRITES:
        return ""
    if touches_synchronisation(base.ptx, row.ptx):
        return "its PTX differs from its base's near a barrier, fence or shared-memory access"
    return ""


def automatic_sanitizer() -> tuple:
    """(compute-sanitizer's path, '') or (None, why racecheck cannot run)."""
    try:
        return find_sanitizer(), ""
    except SanitizerMissing:
        return None, "compute-sanitizer not found on PATH or through PTXDS_COMPUTE_SANITIZER"


def note(reason: str, path: Optional[str], missing: str) -> str:
    """The ``provenance.verify.racecheck`` note of a member that wanted racecheck."""
    return f"ran: {reason}" if path else f"not run ({missing}): {reason}"


def synchronous_copy_pair(row, base) -> Optional[tuple]:
    """(mutant, base) with their ``cp.async`` copies made synchronous, for a
    ``drop_barrier`` mutant of a kernel with such copies; None otherwise."""
    if (row.variant or {}).get("mutation") != "drop_barrier" or base is None:
        return None
    mutant_ptx, copies = synchronous_copies(row.ptx)
    base_ptx, base_copies = synchronous_copies(base.ptx)
    if not copies or not base_copies:
        return None
    return (dataclasses.replace(row, ptx=mutant_ptx, build_key=f"{row.build_key}:sync-copies"),
            dataclasses.replace(base, ptx=base_ptx, build_key=f"{base.build_key}:sync-copies"))


def synchronous_copy_verdict(mutant_errors: Optional[int], base_errors: Optional[int]) -> Optional[str]:
    """The race_detected message when the mutant's synchronous form has hazards its base's
    lacks; None otherwise (no hazard, the base's form racy too, or racecheck failed)."""
    if not mutant_errors or base_errors != 0:
        return None
    return (f"racecheck with cp.async made synchronous: {mutant_errors} shared-memory hazard error(s) its "
            "base's synchronous form lacks (the dropped barrier ordered asynchronous copies)")


def barrier_never_ordered(row, base, mutant_errors: Optional[int], base_errors: Optional[int]) -> Optional[str]:
    """The ``unexercised`` note of a passing ``drop_barrier`` mutant whose racecheck counts
    (its own and its base's, of the synchronous-copy forms where there are copies) are both
    0 and whose dropped barrier's sides hold only accesses racecheck sees; None otherwise."""
    if (row.variant or {}).get("mutation") != "drop_barrier" or base is None or row.status != "passed":
        return None
    if mutant_errors != 0 or base_errors != 0:
        return None
    try:
        line = mutated_site(base.ptx, row.ptx).base_line
    except ProbeError:
        return None
    if line is None or racecheck_blind_spot(PtxProgram(base.ptx), line):
        return None
    return ("the dropped barrier ordered no pair of conflicting shared-memory accesses on the race-checked trial: "
            "racecheck, which sees every access on both of its sides (asynchronous copies made synchronous), "
            "found no hazard in the mutant or its base; its ordering was never exercised, equivalent for this "
            "problem")
