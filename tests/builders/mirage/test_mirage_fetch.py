"""The pinned muGraph files fetched like ``datasets`` does: from a local HTTP server (a
real ``python -m http.server`` process) into a cache folder, checked by SHA-256; a
corrupted file is refused with nothing written; no network and no local copy is one
line that names both ways out.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from builders.mirage import fetch
from builders.mirage.builder import default_dir

SHARED = default_dir()
needs_files = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared muGraphs at {SHARED}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(tmp_path):
    """A folder served over HTTP on localhost; yields (folder, base URL)."""
    root = tmp_path / "www"
    root.mkdir()
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield root, f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@needs_files
def test_download_checks_digests_and_fills_the_cache(served, tmp_path):
    root, url = served
    for name in fetch.PINNED:
        shutil.copy(SHARED / name, root / name)
    cache = tmp_path / "cache"
    cache.mkdir()
    files = fetch.fetch_pinned(url, cache)
    assert sorted(f.name for f in files) == sorted(fetch.PINNED)
    assert all(f.read_bytes() == (SHARED / f.name).read_bytes() for f in files)
    (root / "lora.json").unlink()  # a second call reads the cache, not the server
    assert fetch.fetch_pinned(url, cache) == files


@needs_files
def test_corrupted_download_is_one_line_and_writes_nothing(served, tmp_path):
    root, url = served
    for name in fetch.PINNED:
        shutil.copy(SHARED / name, root / name)
    (root / "lora.json").write_bytes((SHARED / "lora.json").read_bytes().replace(b"4096", b"4095", 1))
    cache = tmp_path / "cache"
    cache.mkdir()
    with pytest.raises(fetch.MugraphFetchError) as info:
        fetch.fetch_pinned(url, cache)
    message = str(info.value)
    assert "\n" not in message and "lora.json" in message and "nothing written" in message
    assert not (cache / "lora.json").exists() and not list(cache.glob("*.partial"))


def test_no_network_and_no_local_copy_says_both_ways(tmp_path, monkeypatch):
    from ptxds.cli import cli
    monkeypatch.delenv(fetch.DIR_ENV, raising=False)
    monkeypatch.setenv(fetch.URL_ENV, f"http://127.0.0.1:{_free_port()}")  # nothing listens
    monkeypatch.setenv("PTXDS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fetch, "shared_dir", lambda: tmp_path / "absent")
    result = CliRunner().invoke(cli, ["build", "--source", "mirage", "--out", str(tmp_path / "ds"),
                                      "--arch", "sm_80", "--jobs", "1", "--silent"])
    assert result.exit_code != 0
    line = result.output.strip().splitlines()[-1]
    assert "cannot download Mirage muGraph" in line and "--mugraphs DIR" in line and fetch.DIR_ENV in line


@needs_files
def test_mugraphs_accepts_a_folder():
    from builders.base import BuildOptions
    from builders.mirage import MirageBuilder
    builder = MirageBuilder(BuildOptions(archs=["sm_80"], extra={"mugraphs": [str(SHARED)]}))
    assert sorted(p.name for p in builder.files) == sorted(fetch.PINNED)
