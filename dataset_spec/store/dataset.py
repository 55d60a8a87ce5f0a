"""``Dataset``: the operations on a dataset folder that exists, in one place.

Open it (a folder that is not a dataset is one line naming why; so is a damaged part
file, ``damaged_parts``), read its rows and groups,
the statistics of each group, and append rows: written as one atomic part file, then
published (dataset_spec/store/publish.py: pairs regenerated, the card rewritten; rows keep the
split their writer fixed).
Rows appended must be final (``ptxds.finalize`` normalises and assembles built rows;
verified rows carry the verifier's columns). ``ptxds add``, ``ptxds rewrite``, ``ptxds
build``, ``ptxds verify``'s writer and the report go through it.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq

from .card import check_card_replaceable
from ..errors import PtxdsError
from .group_stats import GroupStats, group_stats
from .publish import publish, publish_added
from ..schema import SCHEMAS
from .shards import ShardWriter, done_keys, key_splits, not_a_dataset_reason, part_files, read_records


class NotADatasetError(PtxdsError, ValueError):
    """The folder holds no kernels/<split>/part-*.parquet."""


class DamagedPartError(PtxdsError, ValueError):
    """A part file of a dataset folder is not a whole Parquet file (cut short, emptied)."""


def damaged_parts(root) -> list:
    """(path, reason) of each part file under ``root`` that does not read as Parquet: ptxds
    writes parts whole (temp file, fsync, rename), so such a file was cut short or changed
    by something else (a copy that stopped, a full disk)."""
    found = []
    for config in SCHEMAS:
        for path in part_files(root, config):
            try:
                pq.ParquetFile(path).read()
            except Exception as exc:  # noqa: BLE001 (any reader failure: the file is not whole)
                found.append((path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
    return found


def damaged_message(damaged: list) -> str:
    """One line naming the damaged part files and the way back."""
    path, reason = damaged[0]
    more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
    return (f"{path} is not a whole Parquet file ({reason}){more}; delete it and run the same ptxds build "
            "(or verify) again: it resumes and writes that file's rows anew")


class Dataset:
    """A dataset folder. ``Dataset.open`` insists it holds rows; ``Dataset(root)`` is one
    that may still be empty (a build or verify writing its first rows)."""

    def __init__(self, root, credits=None):
        self.root = Path(root)
        self.credits = credits  # the card's credit lines: see card.write_card
        self._records = None

    @classmethod
    def open(cls, root, credits=None) -> "Dataset":
        reason = not_a_dataset_reason(root)
        if reason:
            raise NotADatasetError(reason)
        return cls(root, credits)

    def records(self) -> list:
        """Every KernelRecord (last write of a build_key wins); read once, then cached."""
        if self._records is None:
            self._records = read_records(self.root)
        return self._records

    def groups(self) -> dict:
        """group_id -> its rows, in the order read."""
        by_group = defaultdict(list)
        for record in self.records():
            by_group[record.group_id].append(record)
        return dict(by_group)

    def group_stats(self) -> dict:
        """group_id -> ``GroupStats`` (fastest member, spread, ...)."""
        return {group: group_stats(rows) for group, rows in self.groups().items()}

    def done_keys(self) -> set:
        """build_keys already written (an empty set for a folder not made yet)."""
        return done_keys(self.root) if self.root.exists() else set()

    def writer(self, config: str = "kernels", carried_splits: dict | None = None) -> ShardWriter:
        """An atomic part-file writer into this folder (for writers that flush as they go);
        ``carried_splits`` (build_key -> split): rows that keep the split they have in
        another folder (``split_of_keys`` of the folder a verify reads)."""
        self._records = None
        return ShardWriter(self.root, config, carried_splits)

    def split_of_keys(self) -> dict:
        """build_key -> the split its row was written to."""
        return key_splits(self.root) if self.root.exists() else {}

    def write(self, rows: list) -> None:
        """Write final rows as one atomic part file (no publish: call ``publish`` once the
        command's writes are done)."""
        if rows:
            self.writer().write(rows)

    def publish(self, progress: bool = False, canonical: bool = False):
        """The derived configs (pairs, ``*_by_shape``) and the card, from one read of the
        rows, which keep their splits (``canonical``: moved into the canonical ones, as
        ``ptxds resplit`` does). Returns ``ResplitSummary``. ``progress``: a bar of these
        steps when they take long. Once per command, after its last write."""
        self._records = None
        check_card_replaceable(self.root)  # before anything is rewritten: the card is written last
        return publish(self.root, self.credits, progress, canonical)

    def append(self, rows: list, progress: bool = False):
        """Write final rows, then publish what they change (``publish_added``: rows that
        change no pair add their by-shape rows and the card's counts; others publish
        whole)."""
        check_card_replaceable(self.root)  # refused before a row is written, not after
        self.write(rows)
        self._records = None
        return publish_added(self.root, rows, self.credits, progress)


__all__ = ["DamagedPartError", "Dataset", "GroupStats", "NotADatasetError", "damaged_message", "damaged_parts",
           "group_stats"]
