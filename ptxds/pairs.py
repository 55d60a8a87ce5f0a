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
is not equivalent) counts as killed too. A surviving mutant (it passed every trial) stays a positive,
``verified``, and its pairs carry the operator too. Pairs never cross splits: a pair's
split is its group's.
"""
from __future__ import annotations

import itertools
import json
import random
from collections import defaultdict

from dataset_spec.labels import KILLED_STATUSES, mutant_killed  # noqa: F401 (KILLED_STATUSES: re-exported)
from dataset_spec.model import Pair
from dataset_spec.shards import ShardWriter, part_files, read_records

MAX_PAIRS_PER_GROUP = 2000
MAX_CROSS_PAIRS = 200
def mutation_of(record):
    return record.variant.get("mutation") if isinstance(record.variant, dict) else None


def is_killed(mutant, by_id: dict) -> bool:
    """The verifier proved the mutant differs from its base (dataset_spec.labels)."""
    base = by_id.get(mutant.variant.get("base"))
    return mutant_killed(mutant.status, mutant.sanitizer, base.sanitizer if base else None, base is not None)


def _mutant_negatives(killed: list, partners: list, target: int, group: str) -> list:
    """Round-robin over killed mutants, each paired first with its own base."""
    queues = []
    for mutant in killed:
        base = mutant.variant.get("base")
        ordered = sorted(partners, key=lambda p: (p.kernel_id != base, p.kernel_id))
        queues.append([Pair(p.kernel_id, mutant.kernel_id, False, "verified", group, group,
                            mutation_of(mutant)) for p in ordered])
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


def make_pairs(records: list) -> list:
    by_group = defaultdict(list)
    for record in records:
        if record.kernel_id and not record.kernel_id.startswith("unbuilt-"):
            by_group[record.group_id].append(record)
    pairs = []
    passing_by_group = {}
    for group, members in sorted(by_group.items()):
        members.sort(key=lambda r: r.kernel_id)
        passing = [m for m in members if m.status == "passed"]
        wrong = [m for m in members if m.status == "wrong_result" and not mutation_of(m)]
        by_id = {m.kernel_id: m for m in members}
        killed = [m for m in members if mutation_of(m) and is_killed(m, by_id)]
        passing = [m for m in passing if m not in killed]
        passing_by_group[group] = [m for m in passing if not mutation_of(m)]
        group_pairs = [Pair(a.kernel_id, b.kernel_id, True, "verified", group, group,
                            mutation_of(a) or mutation_of(b))
                       for a, b in itertools.combinations(passing, 2)]
        positives = len(group_pairs)
        group_pairs += [Pair(a.kernel_id, b.kernel_id, False, "verified", group, group)
                        for a in passing_by_group[group] for b in wrong]
        group_pairs += _mutant_negatives(killed, passing_by_group[group], max(positives, len(killed)), group)
        pairs += _capped(group_pairs, MAX_PAIRS_PER_GROUP, group)
    by_signature = defaultdict(list)
    for group, passing in passing_by_group.items():
        if passing:
            by_signature[_signature(passing[0])].append(passing)
    for signature, groups in sorted(by_signature.items()):
        cross = []
        for left, right in itertools.combinations(groups, 2):
            if _function(left[0]) == _function(right[0]):
                continue
            cross += [Pair(a.kernel_id, b.kernel_id, False, "constructed", a.group_id, b.group_id)
                      for a, b in itertools.product(left, right)]
        pairs += _capped(cross, MAX_CROSS_PAIRS, signature)
    return pairs


def write_pairs(root) -> int:
    """Regenerate DIR/pairs from DIR/kernels (pairs are derived, so they are replaced)."""
    stale = part_files(root, "pairs")
    pairs = make_pairs(read_records(root))
    written = ShardWriter(root, "pairs").write(pairs) if pairs else 0
    for path in stale:
        path.unlink(missing_ok=True)
    return written
