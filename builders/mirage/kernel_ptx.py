"""Many muGraphs' kernels compiled by one nvcc run, and each row's PTX put together from
them exactly as nvcc writes that row's own module.

One nvcc run per muGraph spends most of its second on what every run repeats (the host
preprocessor, parsing the CUDA headers); a chunk of muGraphs compiled together spends it
once, and a kernel several muGraphs share is compiled once. Each kernel's PTX is kept on
disk (``<mirage cache>/kernels``), keyed by its CUDA text, the prelude, arch, flags, the
nvcc version and this module's code.

NVVM writes a module as: its header; ``// .globl`` of the first entry; the demoted static
shared arrays of every entry (one comment line each, in entry order) and the dynamic shared
array's declaration; then the entries, each after its ``// .globl`` line, with block
labels numbered by the entry's position (``$L__BB<position>_<n>``); and one blank line at
the end. ``split_module`` takes a module apart into those pieces and ``assemble`` puts a
row's entries back together; a module with anything else in it (a device function, a
global, a local stack) is not split, and its rows are compiled alone.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import sys
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from ptx_tools import CompileError
from ptx_tools.ptx_cache import cache_folder
from ptx_tools.toolchain import compile_cuda

GLOBL = "\t// .globl\t"
SMEM_DECL = ".extern .shared .align 16 .b8 smem_raw[];\n\n"
_GLOBL_LINE = re.compile(r"^\t// \.globl\t(\S+)\n", re.M)
_DEMOTED = re.compile(r"// _ZZ(\d+)(\w+) has been demoted\n")
_LABEL = re.compile(r"\$L__BB(\d+)_")
_HEADER_LINE = re.compile(r"(//.*|\.version \S+|\.target \S+|\.address_size \d+|)")
# what an entry's text may not hold for the split to be exact: module-level objects
# another entry may share, or names numbered across the module
_SHARED = re.compile(r"^(\.func|\.visible \.func|\.weak|\.global|\.const|\.shared|\.extern|\.local)|"
                     r"__local_depot|\$str", re.M)


@dataclass(frozen=True)
class KernelPtx:
    """One entry's share of a module: the module header, the entry's demoted-array lines,
    and its text from ``.visible .entry`` to the closing brace with its block labels
    numbered 0."""
    header: str
    demoted: tuple
    body: str

    @property
    def uses_smem(self) -> bool:
        return "smem_raw" in self.body


def split_module(ptx: str, entries: list) -> "dict | None":
    """{entry: KernelPtx} of a module nvcc wrote from ``entries`` (in source order), or
    None when the module is not laid out as the module docstring says."""
    first = _GLOBL_LINE.search(ptx)
    if first is None or not entries:
        return None
    header = ptx[:first.start()]
    if not header.endswith("\n\n") or not all(_HEADER_LINE.fullmatch(line) for line in header.split("\n")):
        return None
    marks = list(_GLOBL_LINE.finditer(ptx))
    if [m.group(1) for m in marks] != list(entries) or not ptx.endswith("}\n\n"):
        return None
    texts = [ptx[m.end():(marks[i + 1].start() if i + 1 < len(marks) else len(ptx) - 1)] for i, m in enumerate(marks)]
    start = texts[0].find(".visible .entry ")
    module_level, texts[0] = texts[0][:start], texts[0][start:]
    demoted = _DEMOTED.findall(module_level)
    if _DEMOTED.sub("", module_level) not in ("", SMEM_DECL):
        return None
    out = {}
    for position, (entry, text) in enumerate(zip(entries, texts)):
        if not text.startswith(f".visible .entry {entry}(") or not text.endswith("}\n") or _SHARED.search(text):
            return None
        if any(int(n) != position for n in _LABEL.findall(text)):
            return None
        own = tuple(f"// _ZZ{n}{name} has been demoted\n" for n, name in demoted if name.startswith(entry + "E"))
        out[entry] = KernelPtx(header, own, _LABEL.sub("$L__BB0_", text))
    if sum(len(k.demoted) for k in out.values()) != len(demoted):
        return None
    if bool(SMEM_DECL in module_level) != any(k.uses_smem for k in out.values()):
        return None
    return out


def assemble(kernels: list) -> "str | None":
    """The module nvcc writes for these entries (in order, each once), or None where the
    pieces cannot say it (an entry set that declares no dynamic shared array)."""
    if not kernels or len({k.header for k in kernels}) != 1 or not any(k.uses_smem for k in kernels):
        return None
    names = [k.body[len(".visible .entry "):k.body.index("(")] for k in kernels]
    parts = [kernels[0].header, GLOBL, names[0], "\n", *[line for k in kernels for line in k.demoted], SMEM_DECL]
    for position, (name, kernel) in enumerate(zip(names, kernels)):
        if position:
            parts += [GLOBL, name, "\n"]
        parts.append(kernel.body.replace("$L__BB0_", f"$L__BB{position}_"))
    return "".join(parts) + "\n"


# ----------------------------------------------------------------------------- the kernel cache

def _code_digest() -> bytes:
    return Path(__file__).read_bytes()


def kernel_key(prelude: str, text: str, arch: str, flags: tuple, nvcc: str) -> str:
    material = json.dumps([prelude, text, arch, list(flags), nvcc]).encode()
    return hashlib.sha256(_code_digest() + b"\0" + material).hexdigest()[:32]


def _folder() -> Path:
    return cache_folder("mirage") / "kernels"


def load_kernel(key: str, log=None) -> "KernelPtx | None":
    """The kept kernel of ``key``, or None; a kept file that cannot be read is noted in one
    line on ``log`` (stderr) and its kernel made again."""
    path = _folder() / f"{key}.json"
    try:
        text = path.read_text()
    except OSError:
        return None
    try:
        kept = json.loads(text)
        return KernelPtx(kept["header"], tuple(kept["demoted"]), kept["body"])
    except (ValueError, KeyError, TypeError):
        print(f"mirage: kernel cache file {path} is unreadable; compiling its kernel again",
              file=log or sys.stderr, flush=True)
        path.unlink(missing_ok=True)  # said once: the next reader finds it missing, not unreadable
        return None


def keep_kernel(key: str, kernel: KernelPtx) -> None:
    folder = _folder()
    try:  # a unique temporary name, then one rename: readers never see half a file
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{key}.{uuid.uuid4().hex}.partial"
        partial.write_text(json.dumps(asdict(kernel)))
        os.replace(partial, folder / f"{key}.json")
    except OSError:  # a read-only or full cache costs a later build the compile, nothing more
        pass


# ----------------------------------------------------------------------------- compiling a chunk

def _locks() -> Path:
    folder = _folder() / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def chunk_lock(name: str, wait: bool = True):
    """Held while the chunk ``name`` is compiled, so two build workers never compile it
    both. Yields False when ``wait`` is off and another process holds it; where the folder
    takes no lock (some network file systems) it yields True and both may compile."""
    with open(_locks() / f"{name}.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        except OSError:
            pass
        yield True  # closing the file lets the lock go


def chunk_failed(name: str) -> bool:
    return (_locks() / f"{name}.failed").exists()


def compile_chunk(name: str, prelude: str, sources: dict, keys: dict, arch: str, flags: tuple,
                  timeout: float = 600) -> bool:
    """Compile ``sources`` ({entry: CUDA text}, in source order) after ``prelude`` in one
    nvcc run and keep each kernel under ``keys[entry]``. False (and the chunk marked, so no
    other worker tries again) when nvcc rejects the chunk or its module cannot be split:
    its rows are then compiled alone, each with its own compiler log."""
    module = "\n\n".join([prelude, *sources.values()]) + "\n"
    try:
        pieces = split_module(compile_cuda(module, arch, flags=list(flags), timeout=timeout), list(sources))
    except CompileError:
        pieces = None
    if pieces is None:
        (_locks() / f"{name}.failed").touch()
        return False
    for entry, kernel in pieces.items():
        keep_kernel(keys[entry], kernel)
    return True
