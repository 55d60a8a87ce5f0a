"""A row's findings and the one function that derives its status from them.

Every check the verifier runs on a member (the trials' verdict, memcheck, racecheck, the
delayed-warp runs, the group's consensus, the coverage probe, timing, the roofline) adds a
finding: the check's name, the status it gives (None for a note) and its message. ``derive``
reads them in the order the checks run and decides which status wins; every finding stays in
the row's ``findings`` column, so a status that lost is kept with its reason.

Adding a check is one finding it records plus its line in ``OVERRULES``."""
from __future__ import annotations

from typing import Optional

# Statuses a sanitizer finding may replace: outcomes of the checks that the finding explains
# better (a crash from an invalid access, a wrong result from reading past an end). Statuses
# with a more specific cause of their own stay.
SANITIZER_REPLACES = ("passed", "disagrees", "wrong_result", "unwritten_output", "crashed")
EVERY_STATUS = None  # overrules whatever the earlier checks said
TIMED = ("passed", "unexercised")

# check -> (the statuses its finding replaces, whether it explains them). An explaining
# finding keeps the replaced status in its message as "(the checks said ...)"; an overruling
# one puts the earlier message after its own. "checks" (the trials' verdict) comes first and
# always sets the status.
OVERRULES = {
    "checks": (EVERY_STATUS, False),
    "memcheck": (SANITIZER_REPLACES, True),
    "timing": (TIMED, False),
    "roofline": (TIMED, False),
    "consensus": (("passed",), False),
    "racecheck": (SANITIZER_REPLACES, True),
    "coverage": (("passed",), False),
    "barrier": (("passed",), False),
    "race_delays": (EVERY_STATUS, True),
    "memcheck_tails": (SANITIZER_REPLACES, True),
}


def finding(check: str, status: Optional[str], message: str) -> dict:
    """One finding as the ``findings`` column stores it; raises ValueError for an unknown check."""
    if check not in OVERRULES:
        raise ValueError(f"unknown check {check!r}: add it to verify/findings.OVERRULES with what it overrules")
    return {"check": check, "status": status, "message": message or ""}


def derive(findings: list, status: str = "built", message: str = "") -> tuple:
    """(status, status_message) from ``findings`` in the order the checks ran, starting from
    the build's ``status`` and ``message``. A finding with a status replaces the current one
    when its check overrules it; a note (status None) is appended to the message."""
    for found in findings:
        replaces, explains = OVERRULES[found["check"]]
        if found["status"] is None:
            if found["message"]:
                message = f"{message}; {found['message']}" if message else found["message"]
            continue
        if replaces is not EVERY_STATUS and status not in replaces:
            continue
        if found["check"] == "checks":
            status, message = found["status"], found["message"]
        elif explains:
            before = f" (the checks said {status}" + (f": {message})" if message else ")")
            status, message = found["status"], found["message"] + before
        else:
            status = found["status"]
            message = f"{found['message']}; {message}" if message else found["message"]
    return status, message


def add_finding(row, check: str, status: Optional[str], message: str) -> bool:
    """Records one finding on ``row`` and derives its status again from all of them; True
    when the status changed. A row with no findings yet starts from a "checks" finding of
    the status it has."""
    before = row.status
    if not row.findings and check != "checks":
        row.findings = [finding("checks", row.status, row.status_message)]
    row.findings = list(row.findings or []) + [finding(check, status, message)]
    row.status, row.status_message = derive(row.findings)
    return row.status != before
