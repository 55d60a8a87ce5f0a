"""``Dataset``: the operations on a dataset folder that exists, in one place.

Open it (a folder that is not a dataset is one line naming why), read its rows and groups,
the statistics of each group, and append rows: written as one atomic part file, then
published (rows into their canonical splits, pairs regenerated, the card rewritten).
Rows appended must be final (``ptxds.finalize`` normalises and assembles built rows;
verified rows carry the verifier's columns). ``ptxds add``, ``ptxds rewrite``, ``ptxds
build``, ``ptxds verify``'s writer and the report go through it.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .errors import PtxdsError
from .group_stats import GroupStats, group_stats
from .pairs import publish
from .shards import ShardWriter, done_keys, not_a_dataset_reason, read_records


class NotADatasetError(PtxdsError, ValueError):
    """The folder holds no kernels/<split>/part-*.parquet."""


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

    def writer(self, config: str = "kernels") -> ShardWriter:
        """An atomic part-file writer into this folder (for writers that flush as they go)."""
        self._records = None
        return ShardWriter(self.root, config)

    def write(self, rows: list) -> None:
        """Write final rows as one atomic part file (no publish: call ``publish`` after)."""
        if rows:
            self.writer().write(rows)

    def publish(self):
        """Rows into their canonical splits, pairs regenerated, the ``*_by_shape`` configs,
        then the card. Returns ``ResplitSummary``."""
        self._records = None
        return publish(self.root, self.credits)

    def append(self, rows: list):
        """Write final rows, then publish."""
        self.write(rows)
        return self.publish()


__all__ = ["Dataset", "GroupStats", "NotADatasetError", "group_stats"]
