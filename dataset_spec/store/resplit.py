"""Write a dataset folder's layout: its rows' split folders, the derived ``kernels_by_shape``
config and the pairs of both, atomically and without losing a row. ``resplit`` moves every
row into the canonical split assignment (dataset_spec/store/splits.py); a publish
(dataset_spec/store/publish.py) keeps the splits the writer fixed.

The new tree is written whole under ``DIR/.resplit-new``; a ``COMPLETE`` marker (written
atomically, listing the configs it holds) commits it; then each config folder is swapped
in (configs left with no rows are removed; ``kernels`` is rewritten only when a row
changes split). A crash before the marker leaves the old folders untouched (the half-written tree is
discarded by the next ``recover``); a crash after it is rolled forward by ``recover``,
which every writer and ``ptxds info`` call first.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import PtxdsError
from .lock import FolderLock
from ..schema import SCHEMAS, pair_to_row, rows_to_table
from .shards import _atomic_write_table, read_split_table, remove_stale_temp_files
from ..swap import COMPLETE, NEW, recover  # noqa: F401 (recover: importable from here too)
from .splits import SPLITS, crossing_hashes, default_splits, moved_by_hash, shape_splits

CONFIGS = ("kernels", "pairs", "kernels_by_shape", "pairs_by_shape")
ROWS_PER_PART = 256
SPLIT_COLUMNS = ["group_id", "build_key", "problem", "ptx_hash", "kernel_id"]

# kernel_id -> split  ->  [(Pair, split)]: how pairs are made for one split assignment
PairMaker = Callable[[dict], list]


_move = os.replace  # one name for the swap's renames, so a test can interrupt it


class CrossSplitLeak(PtxdsError, RuntimeError):
    """A normalised PTX text sits in more than one split after a resplit (a bug)."""


@dataclass
class ResplitSummary:
    rows: int = 0
    moved: int = 0            # rows whose split folder changed
    moved_by_hash: int = 0    # rows not in their function's split: their PTX serves another function
    crossing_before: int = 0  # ptx_hash values in more than one split before
    pairs: int = 0
    pairs_by_shape: int = 0
    pairs_dropped: int = 0    # existing pairs whose two rows now sit in different splits
    by_split: dict = field(default_factory=dict)
    by_shape: dict = field(default_factory=dict)


def _write_config(base: Path, config: str, table: pa.Table, splits: list, stamp: str) -> dict:
    counts = {}
    column = pa.array(splits, pa.string())
    for split in SPLITS:
        part = table.filter(pc.equal(column, split))
        counts[split] = part.num_rows
        for index, begin in enumerate(range(0, part.num_rows, ROWS_PER_PART)):
            chunk = part.slice(begin, ROWS_PER_PART).cast(SCHEMAS[config])
            _atomic_write_table(chunk, base / config / split / f"part-{stamp}-{index:05d}.parquet")
    return {k: v for k, v in counts.items() if v}


def _follow_rows(pairs: pa.Table, split_of_kernel: dict) -> tuple:
    """Existing pairs placed by their rows' split; a pair whose rows now differ is dropped."""
    keep, splits = [], []
    for index, (a, b) in enumerate(zip(pairs.column("kernel_a").to_pylist(), pairs.column("kernel_b").to_pylist())):
        split = split_of_kernel.get(a)
        if split is not None and split_of_kernel.get(b, split) == split:
            keep.append(index)
            splits.append(split)
    return pairs.take(pa.array(keep, pa.int64())), splits, pairs.num_rows - len(keep)


def _pairs_table(made: list) -> tuple:
    table = rows_to_table([pair_to_row(pair) for pair, _ in made], "pairs")
    return table, [split for _, split in made]


def resplit(root, pair_maker: Optional[PairMaker] = None) -> ResplitSummary:
    """Rewrite ``root``'s configs into the canonical splits. ``pair_maker`` regenerates
    pairs for a split assignment; without it existing pairs follow their rows. Holds the
    folder's writer lock throughout (``DatasetBusy`` while another process writes it)."""
    with FolderLock(root):
        root = Path(root)
        kernels = read_kernels(root)
        layout = plan_layout(kernels, canonical=True)
        if pair_maker is not None:
            pairs, shape_pairs = pair_maker(layout.split_of_kernel()), pair_maker(layout.shape_of_kernel())
            return write_layout(root, kernels, layout, pairs, shape_pairs)
        return write_layout(root, kernels, layout)


def read_kernels(root: Path, columns=None) -> pa.Table:
    """The ``kernels`` config (whole, or ``columns``) with each row's ``split`` folder, after
    finishing a resplit cut short and removing a killed writer's temp files (the caller
    holds the lock)."""
    recover(root, _move)
    remove_stale_temp_files(root)
    return read_split_table(root, "kernels", columns=columns)


@dataclass
class Layout:
    """Where every physical row of ``kernels`` goes: ``splits`` (the kernels config) and
    ``by_shape`` (kernels_by_shape), in the table's row order, with ``rows`` the columns the
    assignment reads and ``before`` the split folders the rows were found in."""
    rows: list
    before: list
    splits: list
    by_shape: list

    def split_of_kernel(self) -> dict:
        return {r["kernel_id"]: s for r, s in zip(self.rows, self.splits)}

    def shape_of_kernel(self) -> dict:
        return {r["kernel_id"]: s for r, s in zip(self.rows, self.by_shape)}


def plan_layout(kernels: pa.Table, canonical: bool = False) -> Layout:
    """The layout of ``kernels`` (a table with ``split``). A row keeps the split it was
    written to (the writer fixes it: its function's, or that of its PTX already in the
    folder), unless ``canonical`` (``ptxds resplit``) or the splits found put one PTX on
    two sides (a folder written by an older ptxds): then every row gets the canonical one
    (dataset_spec/store/splits.py)."""
    rows = kernels.select(SPLIT_COLUMNS).to_pylist()
    before = kernels.column("split").to_pylist()
    keep = not canonical and not crossing_hashes(rows, before)
    return Layout(rows, before, before if keep else default_splits(rows), shape_splits(rows))


def write_layout(root: Path, kernels: pa.Table, layout: Layout, pairs: Optional[list] = None,
                 shape_pairs: Optional[list] = None) -> ResplitSummary:
    """Write ``layout`` atomically: ``kernels`` only where a row changes split, the
    ``kernels_by_shape`` config, and the pairs of each (``pairs``/``shape_pairs``: [(Pair,
    split)]; None: the existing pairs follow their rows). The caller holds the lock."""
    light, before, default, by_shape = layout.rows, layout.before, layout.splits, layout.by_shape
    summary = ResplitSummary(rows=len(light), moved=sum(a != b for a, b in zip(before, default)),
                             moved_by_hash=moved_by_hash(light, default),
                             crossing_before=len(crossing_hashes(light, before)))
    leaks = crossing_hashes(light, default)
    if leaks:
        raise CrossSplitLeak(f"{len(leaks)} ptx_hash values cross splits after resplit, e.g. {next(iter(leaks))}")
    kernels = kernels.drop_columns(["split"])
    if pairs is not None:
        pairs, pair_splits = _pairs_table(pairs)
        shape_pairs, shape_pair_splits = _pairs_table(shape_pairs)
    else:
        existing = read_split_table(root, "pairs").drop_columns(["split"])
        pairs, pair_splits, summary.pairs_dropped = _follow_rows(existing, layout.split_of_kernel())
        shape_pairs, shape_pair_splits, _ = _follow_rows(existing, layout.shape_of_kernel())
    stamp = f"{int(time.time() * 1000):013d}-{os.getpid()}"
    new = root / NEW
    written, dropped = [], []
    # kernels are rewritten only when a row changes split: the part files a writer left
    # stay as they were
    summary.by_split = {split: before.count(split) for split in SPLITS if split in before}
    for config, table, splits in (("kernels", kernels, default), ("kernels_by_shape", kernels, by_shape),
                                  ("pairs", pairs, pair_splits), ("pairs_by_shape", shape_pairs, shape_pair_splits)):
        if config == "kernels" and not summary.moved:
            continue
        if not table.num_rows:
            dropped.append(config)
        else:
            counts = _write_config(new, config, table, splits, stamp)
            written.append(config)
            if config == "kernels":
                summary.by_split = counts
            elif config == "kernels_by_shape":
                summary.by_shape = counts
    summary.pairs, summary.pairs_by_shape = pairs.num_rows, shape_pairs.num_rows
    marker = new / COMPLETE
    new.mkdir(parents=True, exist_ok=True)
    tmp = new / f".{COMPLETE}.tmp"
    tmp.write_text(json.dumps({"replace": written, "drop": dropped}))
    os.replace(tmp, marker)
    recover(root, _move)
    return summary


def split_check(root) -> dict:
    """What ``ptxds info`` says of the splits: rows per split of both configs, ptx_hash
    values in more than one split of ``kernels`` (0 after a build or a resplit), and rows
    moved off their function's split to keep a PTX on one side."""
    recover(root, _move)
    table = read_split_table(root, "kernels", columns=SPLIT_COLUMNS)
    rows, splits = table.select(SPLIT_COLUMNS).to_pylist(), table.column("split").to_pylist()
    shape = read_split_table(root, "kernels_by_shape", columns=["kernel_id"]).column("split").to_pylist()
    count = {s: splits.count(s) for s in SPLITS if s in splits}
    return {"kernels": count, "kernels_by_shape": {s: shape.count(s) for s in SPLITS if s in shape},
            "crossing_ptx_hashes": len(crossing_hashes(rows, splits)),
            "moved_by_hash": moved_by_hash(rows, splits)}
