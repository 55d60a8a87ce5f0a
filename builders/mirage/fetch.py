"""Where the Mirage muGraph files come from: a folder the user names, or the pinned files
downloaded once from the upstream repository into ptxds' cache, each checked against the
SHA-256 digest kept here (the way ``datasets`` fetches data).

Order: ``--mugraphs`` (files or folders), ``$PTXDS_MIRAGE_DIR``, ``../shared/mirage/
saved_mugraphs`` beside the repository (development checkouts), the cache
(``$PTXDS_CACHE/mirage-mugraphs``), then a download from ``$PTXDS_MIRAGE_URL`` (default:
raw.githubusercontent.com at the pinned commit). A file failing its digest is never written.
"""
from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from dataset_spec.errors import PtxdsError
from ptx_tools.ptx_cache import cache_folder

DIR_ENV = "PTXDS_MIRAGE_DIR"
URL_ENV = "PTXDS_MIRAGE_URL"
COMMIT = "de8745d9"
UPSTREAM_URL = f"https://raw.githubusercontent.com/mirage-project/mirage/{COMMIT}/benchmark/saved_mugraphs"
CACHE_NAME = "mirage-mugraphs"
TIMEOUT_S = 60

# file -> SHA-256 of the copy read from ../shared/mirage (folder of commit de8745d9).
# Only these digests were checked here; docs/mirage.md says which commit last touched each.
PINNED = {
    "gated_mlp.json": "1d4155be91263bb2d41b4fb6b73e5b4fa0a1003b66efc6ccdd312179118bed10",
    "gqa_bs1.json": "c0fe6920ce9bbb8cd6b13f90a93453f9e330f27be50e5013359b5d86938f576e",
    "lora.json": "8b8f4b0cd9b8d7b189cc28823e7f65bdcac5ea175a2f01666891ce59503c9257",
    "mha_bs1.json": "aa1bb1e30c30eb96ff411afe5360fc02d92399b5ecb0902f89a6fb113bd694b5",
    "mqa_bs1.json": "dfcc560a8902d252d82a427700c7acbcce2164748dce426d956c035710fc1a43",
    "ntrans_bs1.json": "85c68b0c80a34d9a697e8c93fb02f1fdc02802fbd43e1b82a3dabfff5ddce8e4",
    "rmsnorm_bs1.json": "bfd900359dd68b6c75f65102b7d5f3c59a7d2f413bb298d7e3f439cb119c9d32",
}


class MugraphFetchError(PtxdsError, RuntimeError):
    """The muGraph files can be neither found nor downloaded; one line saying both ways."""


def shared_dir() -> Path:
    return Path(__file__).resolve().parents[2] / ".." / "shared" / "mirage" / "saved_mugraphs"


def expand(paths) -> list:
    """Files named, and every ``*.json`` of folders named."""
    out = []
    for p in map(Path, paths):
        out += sorted(p.glob("*.json")) if p.is_dir() else [p]
    return out


def default_files() -> list:
    """The muGraph files to build when ``--mugraphs`` names none."""
    env = os.environ.get(DIR_ENV)
    if env:
        folder = Path(env)
        if not folder.is_dir():
            raise MugraphFetchError(f"{DIR_ENV}={env} is not a folder; point it at a folder of muGraph JSON files")
        return sorted(folder.glob("*.json"))
    if shared_dir().is_dir():
        return sorted(shared_dir().glob("*.json"))
    return fetch_pinned()


def fetch_pinned(base_url: str | None = None, folder: Path | None = None) -> list:
    """The pinned files in the cache, downloading (and checking) the missing ones."""
    base_url = (base_url or os.environ.get(URL_ENV) or UPSTREAM_URL).rstrip("/")
    folder = Path(folder) if folder is not None else cache_folder(CACHE_NAME)
    out = []
    for name, digest in sorted(PINNED.items()):
        target = folder / name
        if not (target.exists() and _sha256(target.read_bytes()) == digest):
            _download(f"{base_url}/{name}", name, digest, target)
        out.append(target)
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _download(url: str, name: str, digest: str, target: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            data = response.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise MugraphFetchError(
            f"cannot download Mirage muGraph {name} from {url} ({reason}) and no local copy: pass "
            f"--mugraphs DIR (a folder of the saved muGraph JSON files) or set {DIR_ENV}=DIR") from None
    got = _sha256(data)
    if got != digest:
        raise MugraphFetchError(f"downloaded {name} from {url} has SHA-256 {got}, not the pinned {digest}; "
                                f"nothing written")
    partial = target.with_suffix(f".{uuid.uuid4().hex}.partial")
    partial.write_bytes(data)
    os.replace(partial, target)
