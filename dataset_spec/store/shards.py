"""Crash-safe Parquet shard writing and reading.

Layout of a dataset folder::

    DIR/README.md                         dataset card (configs, splits, provenance)
    DIR/kernels/<split>/part-*.parquet    KernelRecord rows
    DIR/pairs/<split>/part-*.parquet      Pair rows

Each ``write`` call lands as whole files: written to a temp name, fsynced, then renamed,
so a build killed at any moment leaves only complete shards, and a rerun skips the
``build_key``s already present. The split of a row is fixed here, when it is written: a row
carried from another folder (a verified row) keeps the split it had there; otherwise its
function's (dataset_spec/store/splits.py), so every size, arch and source of a function sits on
one side, unless its normalised PTX is already in the folder (or earlier in the same
write, rows taken in (group_id, build_key) order as ``splits.default_splits`` takes them):
then it joins that PTX's split, so after every write no PTX text is on two sides. A
publish keeps these splits; ``ptxds resplit`` (dataset_spec/store/resplit.py) rewrites a folder
into the canonical assignment. A writer holds the folder's
writer lock (dataset_spec/store/lock.py) from its creation until ``close``: one writer per folder.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .lock import FolderLock
from ..model import KernelRecord, Pair, Problem
from ..one_problem import distinct_problems
from ..schema import SCHEMAS, pair_to_row, record_to_row, row_to_record, rows_to_table
from .splits import SPLITS, bucket_split, function_key
from ..swap import recover

# A stable 80/10/10 hash of any key (kept under its old name; rows now split by function).
split_of = bucket_split


@contextlib.contextmanager
def _signals_deferred():
    """SIGINT and SIGTERM wait until the block is done: a part file is written and renamed
    whole, never cut inside pyarrow's writer (whose finaliser then printed a traceback at
    exit). Signals reach Python in the main thread only, so other threads need no block."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _atomic_write_table(table: pa.Table, path: Path) -> None:
    with _signals_deferred():
        _write_table_whole(table, path)


def _write_table_whole(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as handle:
            pq.write_table(table, handle, compression="zstd")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)  # a half-written file only holds space a full disk needs
        if exc.errno is not None and exc.filename is None:
            # pyarrow's write errors name no file; the one-line message names the part file
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class ShardWriter:
    """Appends rows of one config to a dataset folder, one atomic part file per split per
    ``write`` call. Holds the folder's writer lock until ``close`` (or until it is dropped);
    a second process's writer raises ``DatasetBusy``."""

    def __init__(self, out_dir, config: str = "kernels", carried_splits: dict | None = None):
        if config not in SCHEMAS:
            raise ValueError(f"unknown config {config!r}; known: {sorted(SCHEMAS)}")
        self.root = Path(out_dir)
        self.config = config
        self._stamp = f"{int(time.time() * 1000):013d}-{os.getpid()}"
        self._count = 0
        self._hash_split = None  # ptx_hash -> split of the rows already in the folder
        self._carried = carried_splits or {}  # build_key -> the split a row had in its own folder
        self._lock = FolderLock(self.root).acquire()  # before anything in the folder changes
        recover(self.root)  # a resplit cut short is finished (or discarded) first

    def close(self) -> None:
        """Release the folder's writer lock (the rows written stay)."""
        self._lock.release()

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _split_of_row(self, row: dict) -> str:
        if self._hash_split is None:
            self._hash_split = hash_splits(self.root, self.config)
        split = (self._carried.get(row["build_key"]) or self._hash_split.get(row["ptx_hash"] or "")
                 or bucket_split(function_key(row["problem"])))
        if row["ptx_hash"]:
            self._hash_split.setdefault(row["ptx_hash"], split)
        return split

    def write(self, items, splits=None) -> int:
        """Write KernelRecords (kernels configs) or Pairs (pairs configs); returns rows
        written. ``splits`` (one per item) overrides the assignment: pairs follow their rows."""
        by_split: dict = {}
        items = list(items)
        order = range(len(items))
        if not splits and not any(isinstance(item, Pair) for item in items):
            order = sorted(order, key=lambda i: (items[i].group_id, items[i].build_key))
        placed = {}
        for index in order:
            item = items[index]
            if isinstance(item, Pair):
                row = pair_to_row(item)
                split = splits[index] if splits else bucket_split(item.group_a or item.kernel_a)
            else:
                row = record_to_row(item)
                split = splits[index] if splits else self._split_of_row(row)
            placed[index] = (split, row)
        for index in range(len(items)):  # each part file keeps the caller's row order
            split, row = placed[index]
            by_split.setdefault(split, []).append(row)
        written = 0
        for split, rows in sorted(by_split.items()):
            self._count += 1
            path = self.root / self.config / split / f"part-{self._stamp}-{self._count:05d}.parquet"
            _atomic_write_table(rows_to_table(rows, self.config), path)
            written += len(rows)
        return written


def hash_splits(root, config: str = "kernels") -> dict:
    """ptx_hash -> split of the first part file holding it."""
    found: dict = {}
    for path in part_files(root, config):
        for value in pq.read_table(path, columns=["ptx_hash"]).column(0).to_pylist():
            if value:
                found.setdefault(value, path.parent.name)
    return found


def key_splits(root, config: str = "kernels") -> dict:
    """build_key -> the split folder of its last written row (what a verify of this folder
    carries into its output, ``ShardWriter(carried_splits=...)``)."""
    table = read_split_table(root, config, columns=["build_key"])
    return dict(zip(table.column("build_key").to_pylist(), table.column("split").to_pylist()))


def read_split_table(root, config: str = "kernels", columns=None) -> pa.Table:
    """Like ``read_table``, with a ``split`` column naming each row's split folder."""
    files = part_files(root, config)
    wanted = list(columns) if columns is not None else SCHEMAS[config].names
    if not files:
        empty = SCHEMAS[config].empty_table().select(wanted)
        return empty.append_column("split", pa.array([], pa.string()))
    tables = []
    for path in files:
        part = _read_part(path, SCHEMAS[config], wanted)
        tables.append(part.append_column("split", pa.array([path.parent.name] * part.num_rows, pa.string())))
    return pa.concat_tables(tables)


def remove_stale_temp_files(root) -> int:
    """Temp files of a writer that was killed mid-write; only whole parts count. Takes the
    writer lock: a live writer's temp files are not stale (``DatasetBusy``)."""
    if not Path(root).is_dir():
        return 0
    with FolderLock(root):
        stale = list(Path(root).glob("*/*/.part-*.tmp"))
        for path in stale:
            path.unlink(missing_ok=True)
    return len(stale)


def part_files(root, config: str = "kernels") -> list:
    base = Path(root) / config
    if not base.is_dir():
        return []
    return sorted(p for p in base.glob("*/part-*.parquet") if not p.name.startswith("."))


def read_table(root, config: str = "kernels", columns=None) -> pa.Table:
    files = part_files(root, config)
    if not files:
        return SCHEMAS[config].empty_table() if columns is None else \
            SCHEMAS[config].empty_table().select(columns)
    return pa.concat_tables(_read_part(f, SCHEMAS[config], columns) for f in files)


def _read_part(path, schema: pa.Schema, columns=None) -> pa.Table:
    """One part file in the current schema: columns an older schema version lacked (e.g.
    verifier columns added later) read as nulls, so old datasets stay readable."""
    wanted = list(columns) if columns is not None else schema.names
    present = set(pq.read_schema(path).names)
    table = pq.read_table(path, columns=[c for c in wanted if c in present])
    arrays = [table.column(c) if c in present else pa.nulls(table.num_rows, schema.field(c).type)
              for c in wanted]
    return pa.Table.from_arrays(arrays, schema=pa.schema([schema.field(c) for c in wanted]))


def latest_rows(rows: list) -> list:
    """One row per build_key, the last written (as a resumed verify leaves them)."""
    return list({row["build_key"]: row for row in rows}.values())


def read_records(root) -> list:
    """All KernelRecords of a dataset folder (last write of a build_key wins)."""
    return [row_to_record(row) for row in latest_rows(read_table(root, "kernels").to_pylist())]


def read_pairs(root) -> list:
    return [Pair(**{k: v for k, v in row.items() if k != "schema_version"})
            for row in read_table(root, "pairs").to_pylist()]


def done_keys(root) -> set:
    """build_keys already written to a dataset folder."""
    return set(read_table(root, "kernels", columns=["build_key"]).column("build_key").to_pylist())


def shards_fingerprint(root) -> str:
    """A hash of the part files present (names and sizes): what was derived from a dataset
    (the card's plots) can tell whether it still describes the shards."""
    digest = hashlib.sha256()
    for config in SCHEMAS:
        for path in part_files(root, config):
            digest.update(f"{path.relative_to(root)}:{path.stat().st_size}\n".encode())
    return digest.hexdigest()[:24]


def not_a_dataset_reason(root) -> str:
    """Why ``root`` is not a dataset folder ('' when it is one): a dataset folder holds
    kernels/<split>/part-*.parquet. Names datasets found one or two levels below, if any."""
    root = Path(root)
    if part_files(root, "kernels"):
        return ""
    inside = sorted({str(p.parent.parent.parent) for pattern in ("*/kernels/*/part-*.parquet",
                                                                 "*/*/kernels/*/part-*.parquet")
                     for p in root.glob(pattern)})
    if inside:
        return (f"{root} is not a dataset folder (it has no kernels/<split>/part-*.parquet); "
                f"dataset folders inside it: {', '.join(inside[:4])}" + (" ..." if len(inside) > 4 else ""))
    return (f"{root} is not a dataset folder (it has no kernels/<split>/part-*.parquet); "
            "make one with: ptxds build --source triton --out DIR")


def splits_present(root, config: str = "kernels") -> list:
    present = {p.parent.name for p in part_files(root, config)}
    return [s for s in SPLITS if s in present]


def problems_in_folder(root, group_id: str) -> list:
    """The distinct problems that rows of ``group_id`` already in the dataset folder ``root``
    carry (reads only the group_id and problem columns)."""
    if not (Path(root) / "kernels").is_dir():
        return []
    table = read_table(root, "kernels", columns=["group_id", "problem"])
    texts = {text for group, text in zip(table.column("group_id").to_pylist(), table.column("problem").to_pylist())
             if group == group_id and text}
    return distinct_problems(Problem.from_json(text) for text in sorted(texts))
