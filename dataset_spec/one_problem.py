"""One problem per group: every member of a group is judged against the same Problem.

The builders (a manifest built into a folder, ``ptxds add``) and the verifier share these
helpers, so a group whose rows carry different problems is refused with the same one-line
message wherever it is found: which problem ids and digests differ, in which fields, and
how to fix it.
"""
from __future__ import annotations

import json
from typing import Iterable

from .model import Problem, to_plain

PROBLEM_FIELDS = ("problem_id", "op", "buffers", "params", "tolerance", "trial_kinds")


def differing_fields(a: Problem, b: Problem) -> list:
    """The Problem fields whose values differ between ``a`` and ``b`` (compared as JSON)."""
    return [name for name in PROBLEM_FIELDS
            if json.dumps(to_plain(getattr(a, name)), sort_keys=True)
            != json.dumps(to_plain(getattr(b, name)), sort_keys=True)]


def distinct_problems(problems: Iterable[Problem]) -> list:
    """The distinct problems among ``problems`` (by digest), in first-seen order."""
    seen: dict = {}
    for problem in problems:
        if problem is not None:
            seen.setdefault(problem.digest(), problem)
    return list(seen.values())


def describe_mismatch(group_id: str, problems: list) -> str:
    """One line naming the differing problems of a group and the fix."""
    first = problems[0]
    shown = ", ".join(f"{p.problem_id} (digest {p.digest()})" for p in problems[:4])
    more = f" and {len(problems) - 4} more" if len(problems) > 4 else ""
    fields = sorted({f for p in problems[1:] for f in differing_fields(first, p)})
    return (f"group {group_id} carries {len(problems)} different problems: {shown}{more}, differing in "
            f"{', '.join(fields)}; a group's members must share one problem: rebuild them from one problem "
            "definition, or give the other problem its own problem_id (its own group)")


def check_joins(group_id: str, problem: Problem, existing: list, where: str) -> str:
    """'' when ``problem`` may join a group whose rows carry ``existing`` problems, else one
    line naming the clash (``where`` says where the existing rows are) and the fix."""
    others = [p for p in distinct_problems(existing) if p.digest() != problem.digest()]
    if not others:
        return ""
    fields = sorted({f for p in others for f in differing_fields(p, problem)})
    shown = ", ".join(f"digest {p.digest()}" for p in others[:3])
    return (f"problem_id {problem.problem_id!r} (group {group_id}) already has a different problem in {where} "
            f"({shown}; this one is digest {problem.digest()}), differing in {', '.join(fields)}; a group's members "
            "must share one problem: use the same problem definition, give this problem another problem_id, "
            "or build into another folder")
