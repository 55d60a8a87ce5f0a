"""The ``pairs`` config, derived from verified rows.

Positives: two members of one group that both passed (``label_source="verified"``).
Negatives: a passing member and a member of the same group the verifier proved wrong
(``wrong_result``, ``verified``); and passing members of two groups whose buffers have the
same signature (names, dtypes, shapes) but whose problems compute different functions,
e.g. GEMM ``nt`` against ``tn`` over the same buffers (``constructed``).

Mutants (rows of ``ptxds rewrite`` whose variant names a ``mutation``): a mutant the
verifier proved different (any status in KILLED_STATUSES) is a negative against the group's
passing non-mutant members, ``verified``, with the operator in ``mutation``; as many such
negatives as the group has positive pairs (each killed mutant at least once), so the
classes stay balanced. A mutant that passed but that ``ptxds verify --sanitize`` found
racy (racecheck hazards its base has not: a data race makes its result undefined, so it
is not equivalent) counts as killed too. A surviving mutant (it passed every trial, which
proves nothing: a dropped barrier that did not race here is still undefined behaviour) is
paired with the group's passing members as ``label_source="survived"``, ``equivalent``
null: no positive. Only a mutant shown equivalent for its problem (a status in
SHOWN_EQUIVALENT_STATUSES: ``unexercised``, its changed instruction never ran) joins the
positives, with that status as ``label_source``. Verified negatives carry the wrong
member's ``witness``.

Splits: pairs follow their rows (dataset_spec/store/splits.py). A pair whose two rows sit in
different splits is not made (it would put a row of one split into another); constructed
negatives pair groups of one split.
"""
from __future__ import annotations

import itertools
import json
import random
from collections import defaultdict

from ..labels import KILLED_STATUSES, mutant_class, mutant_killed  # noqa: F401 (KILLED_STATUSES: re-exported)
from ..model import Pair

MAX_PAIRS_PER_GROUP = 2000
MAX_CROSS_PAIRS = 200


def mutation_of(record):
    return record.variant.get("mutation") if isinstance(record.variant, dict) else None


def classify_mutant(mutant, by_id: dict):
    """killed / survived / equivalent / None (dataset_spec.labels.mutant_class)."""
    base = by_id.get(mutant.variant.get("base"))
    return mutant_class(mutant.status, mutant.sanitizer, base.sanitizer if base else None, base is not None)


def _positive_source(a, b, classes: dict) -> str:
    """A positive with a mutant shown equivalent for the problem says how (its status,
    e.g. ``unexercised``); two passing members are ``verified``."""
    return next((m.status for m in (a, b) if classes.get(m.kernel_id) == "equivalent"), "verified")


def is_killed(mutant, by_id: dict) -> bool:
    """The verifier proved the mutant differs from its base (dataset_spec.labels)."""
    return classify_mutant(mutant, by_id) == "killed"


def _base_first(partners: list, mutant) -> list:
    base = mutant.variant.get("base")
    return sorted(partners, key=lambda p: (p.kernel_id != base, p.kernel_id))


def _mutant_negatives(killed: list, partners: list, target: int, group: str) -> list:
    """Round-robin over killed mutants, each paired first with its own base."""
    queues = []
    for mutant in killed:
        queues.append([Pair(p.kernel_id, mutant.kernel_id, False, "verified", group, group,
                            mutation_of(mutant), mutant.witness) for p in _base_first(partners, mutant)])
    chosen = []
    while len(chosen) < target and any(queues):
        for queue in queues:
            if queue and len(chosen) < target:
                chosen.append(queue.pop(0))
    return chosen


def _signature(record) -> str:
    return json.dumps(sorted((b.name, b.dtype, list(b.shape)) for b in record.problem.buffers))


def _function(record) -> str:
    p = record.problem
    return json.dumps([p.op, p.params], sort_keys=True)


def _capped(pairs: list, limit: int, seed: str) -> list:
    if len(pairs) <= limit:
        return pairs
    return random.Random(seed).sample(pairs, limit)


def make_pairs(records: list, split_of_kernel: dict = None) -> list:
    """Every pair of ``records``; with ``split_of_kernel`` (kernel_id -> split) only pairs
    whose two rows share a split."""
    def split(kernel_id):
        return split_of_kernel.get(kernel_id) if split_of_kernel is not None else ""

    by_group = defaultdict(list)
    for record in records:
        if record.kernel_id and not record.kernel_id.startswith("unbuilt-"):
            by_group[record.group_id].append(record)
    pairs = []
    passing_by_group = {}
    for group, members in sorted(by_group.items()):
        members.sort(key=lambda r: r.kernel_id)
        by_id = {m.kernel_id: m for m in members}
        classes = {m.kernel_id: classify_mutant(m, by_id) for m in members if mutation_of(m)}
        plain = [m for m in members if m.status == "passed" and not mutation_of(m)]
        wrong = [m for m in members if m.status == "wrong_result" and not mutation_of(m)]
        killed = [m for m in members if classes.get(m.kernel_id) == "killed"]
        survived = [m for m in members if classes.get(m.kernel_id) == "survived"]
        passing = sorted(plain + [m for m in members if classes.get(m.kernel_id) == "equivalent"],
                         key=lambda r: r.kernel_id)
        passing_by_group[group] = plain
        group_pairs = [Pair(a.kernel_id, b.kernel_id, True, _positive_source(a, b, classes), group, group,
                            mutation_of(a) or mutation_of(b))
                       for a, b in itertools.combinations(passing, 2)]
        positives = len(group_pairs)
        group_pairs += [Pair(a.kernel_id, b.kernel_id, False, "verified", group, group, None, b.witness)
                        for a in plain for b in wrong]
        group_pairs += _mutant_negatives(killed, plain, max(positives, len(killed)), group)
        group_pairs += [Pair(p.kernel_id, m.kernel_id, None, "survived", group, group, mutation_of(m))
                        for m in survived for p in _base_first(plain, m)]
        group_pairs = [p for p in group_pairs if split(p.kernel_a) == split(p.kernel_b)]
        pairs += _capped(group_pairs, MAX_PAIRS_PER_GROUP, group)
    by_signature = defaultdict(list)
    for group, passing in passing_by_group.items():
        by_split = defaultdict(list)
        for member in passing:
            by_split[split(member.kernel_id)].append(member)
        for side, members in by_split.items():
            by_signature[(_signature(members[0]), side or "")].append(members)
    for (signature, side), groups in sorted(by_signature.items()):
        cross = []
        for left, right in itertools.combinations(groups, 2):
            if _function(left[0]) == _function(right[0]):
                continue
            cross += [Pair(a.kernel_id, b.kernel_id, False, "constructed", a.group_id, b.group_id)
                      for a, b in itertools.product(left, right)]
        pairs += _capped(cross, MAX_CROSS_PAIRS, signature + side)
    return pairs
