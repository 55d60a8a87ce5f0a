"""Rewrite a dataset folder's split folders into the canonical split assignment
(dataset_spec/splits.py) and write the derived ``kernels_by_shape`` / ``pairs_by_shape``
configs, atomically and without losing a row.

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

from .errors import PtxdsError
from .lock import FolderLock
from .schema import SCHEMAS, pair_to_row, rows_to_table
from .shards import _atomic_write_table, read_split_table, remove_stale_temp_files
from .swap import COMPLETE, NEW, recover  # noqa: F401 (recover: importable from here too)
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
        return _resplit(Path(root), pair_maker)


def _resplit(root: Path, pair_maker: Optional[PairMaker]) -> ResplitSummary:
    recover(root, _move)
    remove_stale_temp_files(root)
    kernels = read_split_table(root, "kernels")
    light = kernels.select(SPLIT_COLUMNS).to_pylist()
    before = kernels.column("split").to_pylist()
    default, by_shape = default_splits(light), shape_splits(light)
    summary = ResplitSummary(rows=len(light), moved=sum(a != b for a, b in zip(before, default)),
                             moved_by_hash=moved_by_hash(light, default),
                             crossing_before=len(crossing_hashes(light, before)))
    leaks = crossing_hashes(light, default)
    if leaks:
        raise CrossSplitLeak(f"{len(leaks)} ptx_hash values cross splits after resplit, e.g. {next(iter(leaks))}")
    kernels = kernels.drop_columns(["split"])
    default_of = {r["kernel_id"]: s for r, s in zip(light, default)}
    shape_of = {r["kernel_id"]: s for r, s in zip(light, by_shape)}
    if pair_maker is not None:
        pairs, pair_splits = _pairs_table(pair_maker(default_of))
        shape_pairs, shape_pair_splits = _pairs_table(pair_maker(shape_of))
    else:
        existing = read_split_table(root, "pairs").drop_columns(["split"])
        pairs, pair_splits, summary.pairs_dropped = _follow_rows(existing, default_of)
        shape_pairs, shape_pair_splits, _ = _follow_rows(existing, shape_of)
    stamp = f"{int(time.time() * 1000):013d}-{os.getpid()}"
    new = root / NEW
    written, dropped = [], []
    # kernels are rewritten only when a row changes split: an append-only writer (rewrite,
    # add) leaves the part files it found as they were
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
