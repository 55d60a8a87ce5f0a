"""How a mutant's label follows from its verify outcome: one rule for the ``pairs`` config,
the dataset card and the kill-rate benchmark."""
from __future__ import annotations

import json
from typing import Optional

# Outcomes that prove a mutant differs from its base, which passed the same trials.
KILLED_STATUSES = ("wrong_result", "unwritten_output", "out_of_bounds_write", "modified_input",
                   "disagrees", "crashed", "launch_failed", "timeout", "out_of_bounds_read", "race_detected")


# Outcomes that show a mutant equivalent *for its problem*: ``unexercised``, the mutated
# instruction never executed on any trial (verify/probes/coverage.py). A mutant that merely passed
# every trial is "survived", not equivalent: a dropped barrier that did not race is still a race.
SHOWN_EQUIVALENT_STATUSES = ("unexercised",)
MUTANT_CLASSES = ("killed", "survived", "equivalent")
# How a survivor's reason (``provenance.verify.survivor``) was established: ``proof``, from
# the PTX for every input (a dead result, a sign a square removes); ``observation``, what the
# trials showed (equal site counts, a race not observed behind async copies). An observation
# never makes a survivor a positive.
SURVIVOR_REASON_KINDS = ("proof", "observation")


def kill_rates(killed: int, survived: int, equivalent: int) -> tuple:
    """(over all mutants with a verdict, over exercised ones) as fractions, None where the
    count is 0. A killed mutant ran its change (else it would compute what its base does);
    an ``unexercised`` (equivalent) one did not; a survivor did, or its coverage is unknown."""
    everyone, exercised = killed + survived + equivalent, killed + survived
    return (killed / everyone if everyone else None, killed / exercised if exercised else None)


def race_hazards(sanitizer: Optional[str]) -> Optional[int]:
    """racecheck's hazard count from a ``sanitizer`` column value; None when it did not run."""
    if not sanitizer:
        return None
    return (json.loads(sanitizer).get("racecheck") or {}).get("errors")


def mutant_killed(status: str, sanitizer: Optional[str], base_sanitizer: Optional[str],
                  base_known: bool = True) -> bool:
    """The verifier proved the mutant different: a failing status (``race_detected`` where
    ``ptxds verify --sanitize`` already held a hazard its group lacks against it), or, for rows
    verified before sanitizer findings set the status, a pass with racecheck hazards that its
    base (found, and race-checked) does not have."""
    if status in KILLED_STATUSES:
        return True
    return (status == "passed" and (race_hazards(sanitizer) or 0) > 0
            and base_known and race_hazards(base_sanitizer) == 0)


def mutant_class(status: str, sanitizer: Optional[str], base_sanitizer: Optional[str],
                 base_known: bool = True) -> Optional[str]:
    """killed, equivalent (shown so for the problem), survived (passed, nothing proven), or
    None when the mutant has no verdict yet (not run)."""
    if mutant_killed(status, sanitizer, base_sanitizer, base_known):
        return "killed"
    if status in SHOWN_EQUIVALENT_STATUSES:
        return "equivalent"
    if status == "passed":
        return "survived"
    return None


def survivor_reason(provenance: Optional[dict]) -> Optional[dict]:
    """The recorded reason a surviving mutant may be equivalent ({kind, reason, detail}), or
    None when the verifier recorded none (rows verified before reasons were recorded)."""
    found = ((provenance or {}).get("verify") or {}).get("survivor")
    return found if isinstance(found, dict) and found.get("kind") in SURVIVOR_REASON_KINDS else None
