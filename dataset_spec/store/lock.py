"""One writer per dataset folder: every command that writes a folder (build, verify, merge,
rewrite, add, resplit) holds its lock, so a second one stops with one line instead of
deleting the first one's part files mid-write or its resplit half-way through.

The lock is an OS file lock (``filelock``) on ``DIR/.ptxds-writer.lock``, released when
the holder ends, killed ones included; ``DIR/.ptxds-writer.json`` says who holds it, for
the message. Both files are removed on release (a killed holder leaves them, harmless). Within one process the lock is re-entrant: the build's writer, the publish
that ends the build and a resplit it calls share it."""
from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import PtxdsError

LOCK_NAME = ".ptxds-writer.lock"
OWNER_NAME = ".ptxds-writer.json"

_GUARD = threading.Lock()
_HELD: dict = {}  # (pid, folder) -> [FileLock, holders]; the pid: a forked child holds nothing


class DatasetBusy(PtxdsError):
    """Another process is writing the dataset folder."""


def lock_owner(root) -> str:
    """Who holds ``root``'s writer lock, as the holder recorded it ('' when unknown)."""
    try:
        owner = json.loads((Path(root) / OWNER_NAME).read_text())
        return f"pid {owner['pid']}: {owner['command']}"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


class FolderLock:
    """The writer lock of one dataset folder (created if missing). ``acquire`` raises
    ``DatasetBusy`` at once when another process holds it; use as a context manager, or
    ``acquire``/``release``; dropped unreleased, it releases itself."""

    def __init__(self, root):
        self.root = Path(root)
        self._key = None

    @property
    def held(self) -> bool:
        return self._key is not None

    def acquire(self) -> "FolderLock":
        if self._key is not None:
            return self
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            key = (os.getpid(), str(self.root.resolve()))
            with _GUARD:
                entry = _HELD.get(key)
                if entry is None:
                    entry = [self._take(), 0]
                    _HELD[key] = entry
                entry[1] += 1
        except OSError as exc:
            raise PtxdsError(f"cannot lock {self.root} for writing: {exc.strerror or exc}; "
                             "give a folder you can write") from None
        self._key = key
        return self

    def _take(self) -> FileLock:
        lock = FileLock(str(self.root / LOCK_NAME), timeout=0, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            owner = lock_owner(self.root) or "its pid unknown"
            raise DatasetBusy(f"{self.root} is being written by another ptxds process ({owner}); "
                              "wait for it to end, or write to another folder") from None
        command = " ".join([Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:]])
        (self.root / OWNER_NAME).write_text(json.dumps({"pid": os.getpid(), "command": command[:300]}))
        return lock

    def release(self) -> None:
        key, self._key = self._key, None
        if key is None:
            return
        with _GUARD:
            entry = _HELD.get(key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del _HELD[key]
        # both files go while the lock is still held, so the folder is left as it was found;
        # a process that opened the lock file before the unlink sees its link count at 0
        # after flock and does not count that as holding the lock (filelock 4)
        for name in (OWNER_NAME, LOCK_NAME):
            try:
                (self.root / name).unlink(missing_ok=True)
            except OSError:
                pass
        entry[0].release()

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self):
        try:
            self.release()
        except Exception:  # interpreter shutdown: the OS frees the lock with the process
            pass
