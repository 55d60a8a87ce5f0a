"""Float64 references kept on disk by the content of what made them, so a group verified
again (a resumed run, another member set, the same group and seed in another dataset)
computes no reference.

An entry's key is a digest of the function's identity (its code), the problem and every
input array's name, dtype, shape and bytes: the inputs a group and seed draw, whatever drew
them. The folder is ``$PTXDS_REFERENCES_CACHE``, else ``$PTXDS_CACHE/references``, else
``~/.cache/ptxds/references``; it holds at most ``$PTXDS_REFERENCES_CACHE_BYTES`` bytes
(default 16 GiB; 0 turns the cache off), the least recently used entries going first.
"""
from __future__ import annotations

import hashlib
import os
import threading
import uuid
from pathlib import Path
from typing import Optional

import numpy as np

from ptx_tools.ptx_cache import cache_folder

CACHE_NAME = "references"
LIMIT_ENV = "PTXDS_REFERENCES_CACHE_BYTES"
DEFAULT_LIMIT = 16 << 30
# Inputs smaller than this are computed again: a lookup would cost about what it saves.
MIN_CACHED_ELEMENTS = 1 << 16

_TRIM_LOCK = threading.Lock()


def limit_bytes() -> int:
    raw = os.environ.get(LIMIT_ENV, "")
    try:
        return int(raw) if raw.strip() else DEFAULT_LIMIT
    except ValueError:
        raise ValueError(f"{LIMIT_ENV}={raw!r} is not a byte count; set a whole number (0 turns the "
                         f"reference cache off)") from None


def worth_keeping(values: dict) -> bool:
    return limit_bytes() > 0 and sum(np.size(v) for v in values.values()) >= MIN_CACHED_ELEMENTS


def entry_key(identity: str, problem_json: str, values: dict) -> str:
    """The digest naming one reference: function, problem and every input's exact bytes."""
    h = hashlib.sha256()
    for part in (identity, problem_json):
        h.update(part.encode())
        h.update(b"\0")
    for name in sorted(values):
        array = np.ascontiguousarray(values[name])
        h.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        h.update(memoryview(array).cast("B"))
    return h.hexdigest()[:40]


def _path(key: str) -> Path:
    return cache_folder(CACHE_NAME) / key[:2] / f"{key}.npz"


def load(key: str) -> Optional[dict]:
    """The outputs kept under ``key`` ({name: float64 array}), or None."""
    path = _path(key)
    try:
        with np.load(path, allow_pickle=False) as kept:
            out = {name: kept[name] for name in kept.files}
    except (OSError, ValueError, KeyError):  # absent, or half-written by a process that died
        return None
    try:
        os.utime(path)  # recently used: trimmed last
    except OSError:
        pass
    return out


def store(key: str, outputs: dict) -> None:
    """Keep ``outputs`` under ``key`` (atomically: readers never see half an entry), then
    trim the folder to its byte limit. A full or read-only disk costs the next run the
    computation, nothing more."""
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{key}.{uuid.uuid4().hex}.partial.npz")
        np.savez(partial, **{name: np.asarray(value, dtype=np.float64) for name, value in outputs.items()})
        os.replace(partial, path)
    except OSError:
        return
    trim(limit_bytes())


def trim(limit: int) -> None:
    """Remove the least recently used entries until the folder holds at most ``limit`` bytes."""
    with _TRIM_LOCK:
        entries = []
        for path in cache_folder(CACHE_NAME).glob("*/*.npz"):
            try:
                stat = path.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries, key=lambda e: e[0]):
            if total <= limit:
                break
            try:
                path.unlink()
                total -= size
            except OSError:
                pass
