"""Publishing a dataset folder, once, at the end of the command that wrote it: the derived
configs (``pairs``, ``kernels_by_shape``, ``pairs_by_shape``) and the card, from one read
of the rows.

The rows' splits are the ones their writer fixed (dataset_spec/store/shards.py); a publish moves
no row, except to repair a folder an older ptxds wrote with one PTX in two splits.
``ptxds resplit`` (``canonical``) moves every row into the canonical assignment.

``publish_added`` is the publish after rows that change no pair were appended (``ptxds
add`` of one hand-edited PTX: an unverified row): their ``kernels_by_shape`` rows are
appended beside the others and the card is rewritten; nothing else is touched. Rows that
would change a pair, or a size their function did not have (which moves other rows of
``kernels_by_shape``), get the whole publish.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from .card import CARD_COLUMNS, write_card
from .lock import FolderLock
from ..model import BUILD_STATUSES
from .pairs import make_pairs, mutation_of
from .resplit import ResplitSummary, plan_layout, read_kernels, write_layout
from ..schema import pair_to_row, row_to_record
from .shards import ShardWriter, latest_rows, part_files
from .splits import SPLITS, function_key, shape_splits, size_key

# A publish shows its steps only when it takes longer than this (a large dataset).
PUBLISH_BAR_DELAY_SECONDS = 2.0


def _pairs_of(records: list, split_of_kernel: dict) -> list:
    """[(Pair, split)] of ``records`` under one split assignment."""
    return [(pair, split_of_kernel[pair.kernel_a]) for pair in make_pairs(records, split_of_kernel)]


def publish(root, credits=None, progress: bool = False, canonical: bool = False) -> ResplitSummary:
    """After a command's writes: the pairs regenerated (they are derived), the
    ``*_by_shape`` configs, then the card, all from one read of ``kernels``. ``canonical``:
    every row into its canonical split first (``ptxds resplit``). ``progress``: a bar of
    these steps, shown once the publish has taken ``PUBLISH_BAR_DELAY_SECONDS``. Holds the
    folder's writer lock throughout."""
    from tqdm import tqdm
    root = Path(root)
    with tqdm(total=3, desc=f"publish {root.name}", unit="step", disable=not progress,
              delay=PUBLISH_BAR_DELAY_SECONDS) as steps, FolderLock(root):
        steps.set_postfix_str("reading rows", refresh=False)
        kernels = read_kernels(root)
        rows = kernels.to_pylist()
        records = [row_to_record(row) for row in latest_rows(rows)]
        steps.update()
        steps.set_postfix_str("splits and pairs", refresh=False)
        layout = plan_layout(kernels, canonical)
        pairs = _pairs_of(records, layout.split_of_kernel())
        summary = write_layout(root, kernels, layout, pairs, _pairs_of(records, layout.shape_of_kernel()))
        steps.update()
        steps.set_postfix_str("card", refresh=False)
        for row, split in zip(rows, layout.splits):
            row["split"] = split
        write_card(root, credits=credits, rows=rows, pairs=[pair_to_row(pair) for pair, _ in pairs])
        steps.set_postfix_str("done", refresh=False)
        steps.update()
    return summary


def changes_no_pair(records: list) -> bool:
    """Rows that take part in no pair: unverified, and no mutant (dataset_spec/store/pairs.py
    pairs verified members and mutants only)."""
    return all(r.status in BUILD_STATUSES and not mutation_of(r) for r in records)


def publish_added(root, added: list, credits=None, progress: bool = False) -> ResplitSummary:
    """After ``added`` (KernelRecords, written) joined the folder: when they change no pair
    and bring no new size to their function, their ``kernels_by_shape`` rows and the card;
    else the whole ``publish``. One read of ``kernels`` (the card's columns) either way."""
    root = Path(root)
    if not added or not changes_no_pair(added) or not part_files(root, "kernels_by_shape"):
        return publish(root, credits, progress)
    with FolderLock(root):
        kernels = read_kernels(root, CARD_COLUMNS)
        rows = kernels.to_pylist()
        keys = {r.build_key for r in added}
        known_sizes = {(function_key(r["problem"]), size_key(r["problem"])) for r in rows
                       if r["build_key"] not in keys}
        if any((function_key(r.problem.to_json()), size_key(r.problem.to_json())) not in known_sizes for r in added):
            return publish(root, credits, progress)
        by_shape = dict(zip((r["build_key"] for r in rows), shape_splits(rows)))
        with ShardWriter(root, "kernels_by_shape") as writer:
            writer.write(added, splits=[by_shape[r.build_key] for r in added])
        write_card(root, credits=credits, rows=rows)
        pairs = sum(pq.read_metadata(path).num_rows for path in part_files(root, "pairs"))
        shape_pairs = sum(pq.read_metadata(path).num_rows for path in part_files(root, "pairs_by_shape"))
        splits = [r["split"] for r in rows]
        return ResplitSummary(rows=len(rows), pairs=pairs, pairs_by_shape=shape_pairs,
                              by_split={s: splits.count(s) for s in SPLITS if s in splits})


def write_pairs(root) -> int:
    """Regenerate DIR/pairs (and the whole derived layout) from DIR/kernels; returns pairs written."""
    return publish(root).pairs
