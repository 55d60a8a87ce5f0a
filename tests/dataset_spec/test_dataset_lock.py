"""One writer per dataset folder: while one process writes a folder, another process's
writer, stale-temp cleanup and resplit stop with one line naming the holder, and touch
nothing; the lock is re-entrant within a process, leaves no file behind once released, and
is free again when its holder is killed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dataset_spec.store.lock import LOCK_NAME, OWNER_NAME, DatasetBusy, FolderLock
from dataset_spec.store.resplit import resplit
from dataset_spec.store.shards import ShardWriter, read_records, remove_stale_temp_files
from dataset_spec.swap import NEW

ROOT = Path(__file__).resolve().parents[2]
HOLD = ("import sys; from dataset_spec.store.shards import ShardWriter; w = ShardWriter(sys.argv[1]); "
        "print('held', flush=True); sys.stdin.readline(); w.close(); print('closed', flush=True)")
TRY = ("import sys; from dataset_spec.store.shards import ShardWriter; from dataset_spec.errors import PtxdsError\n"
       "try:\n    ShardWriter(sys.argv[1]).close()\nexcept PtxdsError as exc:\n    print(exc); sys.exit(3)\n"
       "print('wrote')")


def python(code: str, *args, **kwargs):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=ROOT, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


@pytest.fixture
def holder(tmp_path):
    """Another process holding a writer on ``tmp_path/ds``."""
    proc = python(HOLD, tmp_path / "ds")
    assert proc.stdout.readline().strip() == "held", proc.stderr.read()
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


def test_a_second_writer_stops_with_one_line_naming_the_first(tmp_path, holder):
    folder = tmp_path / "ds"
    with pytest.raises(DatasetBusy) as caught:
        ShardWriter(folder)
    message = str(caught.value)
    assert "\n" not in message
    assert f"{folder} is being written by another ptxds process (pid {holder.pid}: " in message
    assert "write to another folder" in message
    # the holder's temp file is not stale while it writes, and its resplit-in-progress stays
    temp = folder / "kernels" / "train" / ".part-1-1-00001.parquet.tmp"
    temp.parent.mkdir(parents=True)
    temp.write_bytes(b"half a part")
    (folder / NEW).mkdir()
    with pytest.raises(DatasetBusy):
        remove_stale_temp_files(folder)
    with pytest.raises(DatasetBusy):
        resplit(folder)
    with pytest.raises(DatasetBusy):
        ShardWriter(folder)  # its recover() would discard the resplit folder
    assert temp.read_bytes() == b"half a part" and (folder / NEW).is_dir()
    # the first writer ends: the folder is free, and no lock file is left in it
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == "closed"
    assert not (folder / LOCK_NAME).exists() and not (folder / OWNER_NAME).exists()
    assert remove_stale_temp_files(folder) == 1 and not temp.exists()
    ShardWriter(folder).write([])


def test_a_killed_holder_frees_the_folder(tmp_path, holder):
    try_again = python(TRY, tmp_path / "ds")
    out, _ = try_again.communicate(timeout=120)
    assert try_again.returncode == 3 and "being written by another ptxds process" in out
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    try_again = python(TRY, tmp_path / "ds")
    out, err = try_again.communicate(timeout=120)
    assert try_again.returncode == 0 and out.strip() == "wrote", err


def test_writers_of_one_process_share_the_lock(tmp_path):
    folder = tmp_path / "ds"
    with ShardWriter(folder) as first:
        second = ShardWriter(folder)  # the build's writer and a publish's resplit, say
        assert (folder / LOCK_NAME).exists()
        assert remove_stale_temp_files(folder) == 0
        second.close()
        other = python(TRY, folder)
        out, _ = other.communicate(timeout=120)
        assert other.returncode == 3, out  # still held by ``first``
        assert first._lock.held
    assert not first._lock.held
    assert sorted(p.name for p in folder.iterdir()) == []  # released: nothing left behind
    other = python(TRY, folder)
    out, err = other.communicate(timeout=120)
    assert other.returncode == 0, err
    assert read_records(folder) == []


def test_a_dropped_lock_releases_itself(tmp_path):
    FolderLock(tmp_path / "ds").acquire()  # no reference kept
    other = python(TRY, tmp_path / "ds")
    out, err = other.communicate(timeout=120)
    assert other.returncode == 0, out + err
