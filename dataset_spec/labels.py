"""How a mutant's label follows from its verify outcome: one rule for the ``pairs`` config,
the dataset card and the kill-rate benchmark."""
from __future__ import annotations

import json
from typing import Optional

# Outcomes that prove a mutant differs from its base, which passed the same trials.
KILLED_STATUSES = ("wrong_result", "unwritten_output", "out_of_bounds_write", "modified_input",
                   "disagrees", "crashed", "launch_failed", "timeout", "out_of_bounds_read", "race_detected")


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
