"""``ptxds rewrite``: add rewritten members and mutants to a dataset's existing groups.

For every group, base members (rows that built or passed, neither rewrites nor mutants)
take turns: a rewritten member applies a few semantics-preserving rewrites chosen by the
seed; a mutant applies one mutation, the operators with a site in the group taking turns
(``mutant_plan``) so that every applicable operator gets mutants. Each new row is finalised like a built row (parsed,
launch-checked, assembled by ptxas) and appended to the dataset as new part files; nothing
already there is changed. A mutant that ptxas rejects is discarded and counted; a rewrite
that ptxas rejects is an engine bug and is reported. The verifier later labels them.
"""
from __future__ import annotations

import copy
import difflib
import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from builders import source_credits
from dataset_spec.store.dataset import Dataset
from dataset_spec.model import SpecError, make_build_key, unverified
from ptx_tools import parse_ptx
from ptx_tools.analysis.equivalence import PROOF, static_reason
from ptx_tools.rewrite import MUTATIONS, REWRITES, Context, NotApplicable, apply_mutation, apply_rewrites

from .finalize import finalize_record

SOURCE = "rewrite"
REWRITES_PER_MEMBER = 3   # operators tried per rewritten member
MUTATION_TRIES = 12       # sites/operators tried before a mutant slot is given up
BASE_STATUSES = ("built", "passed")


@dataclass
class RewriteSummary:
    """What one ``ptxds rewrite`` did."""
    groups: int = 0
    rewrites_written: int = 0
    mutants_written: int = 0
    already_present: int = 0
    mutants_rejected: Counter = field(default_factory=Counter)  # operator -> ptxas rejections
    # "operator: reason" -> mutants the PTX proved equivalent (redrawn)
    mutants_equivalent: Counter = field(default_factory=Counter)
    # reason -> barriers drop_barrier may not take, summed over its mutants
    barriers_excluded: Counter = field(default_factory=Counter)
    rewrite_failures: list = field(default_factory=list)        # (row name, operators, message)
    by_operator: Counter = field(default_factory=Counter)


def context_for(record) -> Context:
    """Read-only and address-holding parameters of each entry, from the launch (a buffer
    counts as read-only when its role is ``in`` and no other parameter of the launch
    passes the same buffer), and each entry's threads per CTA where all its launches agree."""
    module = parse_ptx(record.ptx)
    params = {f.name: f.params for f in module.entries}
    roles = {b.name: b.role for b in record.buffers()}
    readonly, address, blocks = defaultdict(set), defaultdict(set), defaultdict(set)
    for launch in record.launches:
        blocks[launch.entry].add(math.prod(launch.block))
        uses = Counter(a.buffer for a in launch.args if a.kind == "buffer")
        for arg, param in zip(launch.args, params.get(launch.entry, [])):
            if arg.kind in ("buffer", "null", "blob"):
                address[launch.entry].add(param.name)
            if arg.kind == "buffer" and roles.get(arg.buffer) == "in" and uses[arg.buffer] == 1:
                readonly[launch.entry].add(param.name)
    block_threads = {entry: sizes.pop() for entry, sizes in blocks.items() if len(sizes) == 1}
    return Context(dict(readonly), dict(address), block_threads)


def _derived_row(base, ptx: str, variant: dict, provenance: dict):
    row = unverified(copy.deepcopy(base))
    row.source, row.ptx, row.variant, row.status, row.status_message = SOURCE, ptx, variant, "built", ""
    row.kernel_id, row.ptx_hash, row.sass = "", "", ""
    row.provenance = provenance
    row.build_key = make_build_key(row.source, row.group_id, variant, row.arch, row.name)
    return row


def _diff(before: str, after: str, limit: int = 200) -> str:
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), "base.ptx", "member.ptx",
                                      lineterm="", n=1))
    return "\n".join(lines[:limit]) + ("\n..." if len(lines) > limit else "")


def _new_row(base, ptx: str, variant: dict, provenance: dict, present: set, summary: RewriteSummary):
    """The finalised row, or None when a rerun finds its build_key already written (checked
    before assembling, so a rerun runs no ptxas for rows it has)."""
    row = _derived_row(base, ptx, variant, provenance)
    if row.build_key in present:
        summary.already_present += 1
        return None
    return finalize_record(row)


def _rewritten(base, context: Context, index: int, seed: int, present: set, summary: RewriteSummary):
    rng = random.Random(f"{seed}:{base.kernel_id}:rewrite:{index}")
    names = rng.sample(sorted(REWRITES), REWRITES_PER_MEMBER)
    ptx, edits = apply_rewrites(base.ptx, names, rng, context)
    if not edits:
        return None
    variant = {"base": base.kernel_id, "base_variant": base.variant, "rewrites": [e.op for e in edits],
               "seed": seed, "index": index}
    provenance = {"generator": "ptxds rewrite", "base_kernel_id": base.kernel_id, "seed": seed,
                  "trace": [e.to_dict() for e in edits], "diff": _diff(base.ptx, ptx)}
    row = _new_row(base, ptx, variant, provenance, present, summary)
    if row is None:
        return None
    if row.status != "built":
        summary.rewrite_failures.append((base.name, variant["rewrites"], row.status_message))
        return None
    summary.by_operator.update(variant["rewrites"])
    return row


def applicable_mutations(bases: list, contexts: dict) -> dict:
    """Mutation operator -> the bases (in order) that have a site for it."""
    where = {}
    for name in sorted(MUTATIONS):
        for base in bases:
            try:
                apply_mutation(base.ptx, name, random.Random(0), contexts[base.kernel_id])
            except NotApplicable:
                continue
            where.setdefault(name, []).append(base)
    return where


def mutant_plan(group: str, bases: list, contexts: dict, count: int, seed: int) -> list:
    """(base, operator) per mutant slot: the operators with a site in some base take turns,
    from a start drawn per group (so with fewer slots than operators each still appears across
    groups), and each slot's base is one that has a site for its operator; every applicable
    operator gets a slot once ``count`` reaches their number."""
    where = applicable_mutations(bases, contexts)
    names = sorted(where)
    if not names:
        return []
    start = random.Random(f"{seed}:{group}:plan").randrange(len(names))
    plan = []
    for index in range(count):
        name = names[(start + index) % len(names)]
        candidates = where[name]
        plan.append((candidates[(index // len(names)) % len(candidates)], name))
    return plan


def _mutant(base, context: Context, index: int, seed: int, present: set, summary: RewriteSummary,
            operator: str, made: set = None):
    """One mutant of ``base`` for slot ``index``; ``made`` holds the PTX of the group's
    mutants so far, so no two slots write the same program."""
    made = set() if made is None else made
    rng = random.Random(f"{seed}:{base.kernel_id}:mutant:{index}")
    others = [name for name in sorted(MUTATIONS) if name != operator]
    # the planned operator first, at other sites if ptxas rejects one; then the others
    order = [operator] * 3 + others
    excluded = []  # mutants drawn and left out because the PTX proves them equivalent
    for attempt in range(MUTATION_TRIES):
        name = order[attempt % len(order)]
        try:
            ptx, edit = apply_mutation(base.ptx, name, rng, context)
        except NotApplicable:
            continue
        if ptx == base.ptx or ptx in made:
            continue
        proof = static_reason(base.ptx, ptx, name)
        if proof is not None and proof.kind == PROOF:
            summary.mutants_equivalent[f"{name}: {proof.reason}"] += 1
            excluded.append({"op": name, "edit": edit.detail, "reason": proof.reason, "detail": proof.detail})
            continue
        variant = {"base": base.kernel_id, "base_variant": base.variant, "mutation": name,
                   "seed": seed, "index": index}
        provenance = {"generator": "ptxds rewrite", "base_kernel_id": base.kernel_id, "seed": seed,
                      "trace": [edit.to_dict()], "diff": _diff(base.ptx, ptx),
                      **({"excluded": excluded} if excluded else {})}
        summary.barriers_excluded.update(e["reason"] for e in edit.excluded)
        row = _new_row(base, ptx, variant, provenance, present, summary)
        if row is None:  # written by an earlier run: later slots must avoid it as they did then
            made.add(ptx)
            return None
        if row.status != "built":
            summary.mutants_rejected[name] += 1
            continue
        summary.by_operator[name] += 1
        made.add(ptx)
        return row
    return None


def rewrite_dataset(root, rewrites: int = 2, mutants: int = 4, seed: int = 0, groups=None,
                    progress: bool = False) -> RewriteSummary:
    """Append ``rewrites`` rewritten members and ``mutants`` mutants to every group of
    ``root`` (per group, bases taking turns). Safe to rerun: rows already present (same
    base, operators, seed and index) are skipped. ``progress``: a bar of groups done."""
    if rewrites < 0 or mutants < 0:
        raise SpecError(f"--rewrites and --mutants must be >= 0, got {rewrites} and {mutants}")
    root = Path(root)
    dataset = Dataset(root, credits=source_credits)
    records = dataset.records()
    if not records:
        raise SpecError(f"{root} holds no kernel rows; build one with ptxds build first")
    present = {r.build_key for r in records}
    by_group = defaultdict(list)
    for record in records:
        if record.status in BASE_STATUSES and record.base_kernel_id is None and record.ptx:
            if groups is None or record.group_id in groups:
                by_group[record.group_id].append(record)
    summary = RewriteSummary(groups=len(by_group))
    for group, bases in tqdm(sorted(by_group.items()), desc="rewrite", unit="group", disable=not progress):
        bases.sort(key=lambda r: r.kernel_id)
        contexts = {}  # one parse of each base, however many rows it gives
        new, made = [], set()
        for base in bases:
            contexts[base.kernel_id] = context_for(base)
        slots = [(index, bases[index % len(bases)], None) for index in range(rewrites)]
        plan = mutant_plan(group, bases, contexts, mutants, seed) if mutants else []
        slots += [(index, base, operator) for index, (base, operator) in enumerate(plan)]
        for index, base, operator in slots:
            if operator is None:
                row = _rewritten(base, contexts[base.kernel_id], index, seed, present, summary)
            else:
                row = _mutant(base, contexts[base.kernel_id], index, seed, present, summary, operator, made)
            if row is None:
                continue
            new.append(row)
            present.add(row.build_key)
        summary.rewrites_written += sum(1 for r in new if "rewrites" in r.variant)
        summary.mutants_written += sum(1 for r in new if "mutation" in r.variant)
        dataset.write(new)  # group by group: an interrupted run keeps the groups done
    dataset.publish(progress)
    return summary
