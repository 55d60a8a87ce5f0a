"""``ptxds merge A B ... --out C``: datasets of several sources into one, one group per function.

Every row whose problem has a canonical form (dataset_spec/canonical.py) moves into the
canonical group of its function, whatever its source, so one group holds the Triton,
CUTLASS and TVM members of one GEMM and the verifier runs them together: the same inputs,
one reference, one agreement check. Other rows keep their source's group. Build keys stay
as built (they hash the source, so they are unique across sources); a build key met
twice (the same row in two inputs, or already in OUT) is written once, and so is a kernel
id (the same code, launches and canonical problem for one arch). One input is fine too: a
folder built from several sources, merged into a new one. Rows derived from
a member (rewrites, mutants) follow their base's new kernel id. The rows are written and
published by the Dataset layer: splits, pairs (across sources too) and the card.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from dataset_spec.canonical import canonical_record, unify_network_groups
from dataset_spec.store.card import check_card_replaceable
from dataset_spec.store.dataset import Dataset
from dataset_spec.errors import PtxdsError


class MergeError(PtxdsError, ValueError):
    """The inputs of a merge cannot be merged as given."""


@dataclass
class MergeSummary:
    rows: int = 0
    duplicates: int = 0
    moved: int = 0                       # rows now in a canonical group
    groups: dict = field(default_factory=dict)   # canonical group -> Counter of sources
    pairs: int = 0

    @property
    def cross_source_groups(self) -> dict:
        return {g: c for g, c in self.groups.items() if len(c) > 1}


def _follow_bases(rows: list, new_ids: dict) -> None:
    """Derived rows name their base by kernel id; point them at the base's new id."""
    for row in rows:
        if isinstance(row.variant, dict) and row.variant.get("base") in new_ids:
            row.variant = dict(row.variant, base=new_ids[row.variant["base"]])
        for key in ("base_kernel_id", "base"):
            if row.provenance.get(key) in new_ids:
                row.provenance = dict(row.provenance, **{key: new_ids[row.provenance[key]]})


def merge_rows(inputs: list, present: list = (), progress: bool = False) -> tuple:
    """(rows to write, summary) for the rows of ``inputs`` (lists of KernelRecord), less
    those ``present`` (rows already in the target) has: by build key, or by kernel id (the
    same code run the same way on the same function, e.g. one Triton kernel of a default
    and of a shape-set build at one size)."""
    summary = MergeSummary()
    seen = {r.build_key for r in present}
    seen_ids = {r.kernel_id for r in present}
    rows, new_ids = [], {}
    bar = tqdm(total=sum(len(records) for records in inputs), desc="merge", unit="row", disable=not progress)
    for records in inputs:
        for record in records:
            bar.update(1)
            if record.build_key in seen:
                summary.duplicates += 1
                continue
            seen.add(record.build_key)
            row = canonical_record(record)
            if row is not record:
                new_ids[record.kernel_id] = row.kernel_id
            if row.kernel_id in seen_ids and not row.kernel_id.startswith("unbuilt-"):
                summary.duplicates += 1
                continue
            seen_ids.add(row.kernel_id)
            summary.moved += row is not record
            rows.append(row)
    bar.close()
    try:  # a function of networks that several sources state: one problem for its group
        unified = unify_network_groups(rows, present)
    except ValueError as exc:
        raise MergeError(str(exc)) from None
    new_ids = {old: unified.get(new, new) for old, new in new_ids.items()}
    _follow_bases(rows, new_ids)
    for row in rows:
        if row.group_id.startswith("function/"):
            summary.groups.setdefault(row.group_id, Counter())[row.source] += 1
    summary.rows = len(rows)
    return rows, summary


def merge_datasets(inputs: list, out_dir, credits=None, progress: bool = False) -> MergeSummary:
    """Merge the dataset folders ``inputs`` into ``out_dir`` (new, or a dataset to add to);
    ``progress``: a bar of the rows merged."""
    out = Path(out_dir).resolve()
    if any(Path(i).resolve() == out for i in inputs):
        raise MergeError(f"--out {out_dir} is one of the inputs; merge into a new folder")
    datasets = [Dataset.open(i) for i in inputs]
    check_card_replaceable(out)  # the merged card must not replace the user's README.md
    target = Dataset(out_dir, credits=credits)
    present = Dataset.open(out_dir).records() if target.done_keys() else []
    rows, summary = merge_rows([d.records() for d in datasets], present, progress)
    if rows:
        summary.pairs = target.append(rows, progress).pairs
    return summary
