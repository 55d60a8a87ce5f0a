"""The triton-dump problem spec file, grouped by function: which entry a dumped variant
belongs to, and so its group.

- An entry's ``kernel`` is one name or a list (kernels that compute one function, such as a
  row and a block RMSNorm chosen by size); its ``problem`` is a problem mapping (read as a
  manifest's problem: one ``init`` syntax, custom references shipped and import-checked,
  every output with a reference) or the ``problem_id`` of another entry's problem.
- A group is ``triton-dump/<problem_id>``: every kernel and variant mapped to one problem
  shares it; entries giving one problem_id two different problems are refused.
- ``fits``: conditions (expressions, all true) a variant must meet to cover the problem,
  e.g. ``max_range >= n_cols`` for a one-block row kernel. A kernel with several entries
  (one per size) lands in the first whose ``fits`` hold; one that fits none of its entries is
  ``not_applicable`` in the first one's group, with the condition that failed. Variants of
  one kernel whose ``tt.make_range`` sizes differ (compiled for several sizes), mapped by an
  entry whose grid does not follow the tile (``grid_follows_ranges``), need ``fits``: without
  it they would all join a problem only some of them cover.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from builders.manifest import ManifestError, read_problem
from builders.triton.expressions import check_spec_entries, evaluate
from dataset_spec.documents import load_document
from dataset_spec.model import SpecError


@dataclass
class Match:
    """Where a variant goes: ``entry`` (index into the specs) or None, its group, and why it
    cannot run there ('' when it can)."""
    entry: Optional[int]
    group_id: str
    not_applicable: str = ""
    no_problem: str = ""


def group_of(problem_id: str) -> str:
    return f"triton-dump/{problem_id}"


def entry_kernels(entry: dict) -> list:
    kernel = entry["kernel"]
    return list(kernel) if isinstance(kernel, list) else [kernel]


def entry_fits(entry: dict) -> list:
    fits = entry.get("fits") or []
    return list(fits) if isinstance(fits, list) else [fits]


def load_problem_specs(path: Optional[str]) -> list[dict]:
    """The user's problem spec file (JSON or YAML list), its entries' fields checked, or []
    when none is given."""
    if not path:
        return []
    specs = load_document(path)
    if not isinstance(specs, list):
        raise SpecError(f"{path}: a problem spec file holds a list of entries, got {type(specs).__name__}")
    check_spec_entries(specs, path)
    return specs


def load_specs(path: Optional[str]) -> list:
    """The entries of the spec file with ``entry["problem"]`` a checked Problem ([] without a
    file). Raises SpecError naming the file, the entry and the field."""
    specs = load_problem_specs(path)
    problems: dict = {}
    for index, entry in enumerate(specs):
        where = f"{path}: entry {index + 1} ({', '.join(entry_kernels(entry))})"
        if isinstance(entry["problem"], dict):
            try:
                problem = read_problem(entry, Path(path).parent)
            except ManifestError as exc:
                raise SpecError(f"{where}: {exc}") from None
            known = problems.get(problem.problem_id)
            if known is not None and known.digest() != problem.digest():
                raise SpecError(f"{where}: problem_id {problem.problem_id!r} is already a different problem "
                                f"(entry {known_index(specs, problem.problem_id) + 1}); give one problem one "
                                f"problem_id, or name the other entry's problem by its id (problem: "
                                f"{problem.problem_id})")
            problems[problem.problem_id] = problem
    resolved = []
    for index, entry in enumerate(specs):
        entry = dict(entry)
        if isinstance(entry["problem"], str):
            if entry["problem"] not in problems:
                raise SpecError(f"{path}: entry {index + 1}: problem {entry['problem']!r} names no problem_id of "
                                f"the file's entries ({', '.join(problems) or 'none'})")
            entry["problem"] = problems[entry["problem"]]
        else:
            entry["problem"] = problems[entry["problem"]["problem_id"]]
        resolved.append(entry)
    return resolved


def known_index(specs: list, problem_id: str) -> int:
    return next(i for i, e in enumerate(specs) if isinstance(e["problem"], dict)
                and e["problem"].get("problem_id") == problem_id)


def grid_follows_ranges(entry: dict) -> bool:
    """Whether the entry's grid adapts to each variant's tile (it reads ranges, max_range or
    min_range, or gives per-variant grids): then a variant of any block size covers the
    problem. A grid that does not (one program per row) needs each variant's block to cover
    the row by itself, which only ``fits`` can say."""
    return bool(entry.get("grid_by_hash")) or any("range" in str(g) for g in entry.get("grid") or [])


def fit_failure(entry: dict, scope: dict) -> str:
    """'' when every ``fits`` condition holds over ``scope``, else the first that does not,
    with the values it saw."""
    for condition in entry_fits(entry):
        if not evaluate(condition, scope):
            shown = ", ".join(f"{k} = {scope[k]}" for k in sorted(scope) if isinstance(condition, str)
                              and k in condition and not isinstance(scope[k], list))
            return f"{condition} is false ({shown})"
    return ""


def match_variant(specs: list, variant: dict, scope_of, ranges_of_kernel: list) -> Match:
    """The entry and group of one variant. ``scope_of(entry)`` gives the expression scope for
    an entry; ``ranges_of_kernel``: the distinct max ranges among the dump's variants of this
    kernel and signature."""
    candidates = [(i, e) for i, e in enumerate(specs) if variant["name"] in entry_kernels(e)
                  and (not e.get("signature") or e["signature"].replace(" ", "") == variant["signature"])]
    if not candidates:
        return Match(None, "")
    failures = []
    for index, entry in candidates:
        if not entry_fits(entry) and len(ranges_of_kernel) > 1 and not grid_follows_ranges(entry):
            return Match(index, group_of(entry["problem"].problem_id), no_problem=(
                f"variants of {variant['name']} were compiled for several sizes (make_range sizes "
                f"{', '.join(str(r) for r in ranges_of_kernel)}; this one {max(variant['ranges'] or [1])}) and "
                f"entry {index + 1} (problem {entry['problem'].problem_id}) does not say which it covers: "
                f"add fits, e.g. fits: [\"max_range >= N\"] with N the size the kernel must cover"))
        try:
            failure = fit_failure(entry, scope_of(entry))
        except SpecError as exc:
            return Match(index, group_of(entry["problem"].problem_id),
                         no_problem=f"entry {index + 1}: fits: {exc}")
        if not failure:
            return Match(index, group_of(entry["problem"].problem_id))
        failures.append(f"problem {entry['problem'].problem_id}: {failure}")
    first = candidates[0][0]
    return Match(first, group_of(specs[first]["problem"].problem_id), not_applicable=(
        f"variant {variant['folder']} of {variant['name']} (make_range sizes {variant['ranges']}) covers no "
        f"problem of its entries: {'; '.join(failures)}"))


def problems_by_group(specs: list) -> dict:
    """group id -> the Problem its rows carry."""
    return {group_of(e["problem"].problem_id): e["problem"] for e in specs}
