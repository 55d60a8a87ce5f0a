"""What a muGraph file's rows need before any of them is built, found once per file content.

Two float64 walks over the file decide its group: every muGraph must compute the reference
muGraph's function (the agreement check), and the reference muGraph's input domain and
typical spread are searched (dataset_spec/mugraph.py). At upstream sizes they take seconds
to minutes a file, so their answers are kept on disk (``<mirage cache>/analysis``), keyed
by the file's bytes and by everything else the answer depends on: the code of the walk,
of the parser and of this module, and numpy's version. The build's main process analyses
the files (several at once on a machine with several cores, each file named as it starts
and ends); its workers then read the answers instead of searching again.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from dataset_spec import mugraph as mugraph_semantics
from dataset_spec.errors import PtxdsError
from ptx_tools.ptx_cache import cache_folder

from . import graph as graph_module, operators as operators_module
from .graph import MuGraph, MuGraphError, MuGraphFileError, load_file

AGREEMENT_RTOL = 1e-9  # float64 evaluations differ only by reassociation (about 1e-15)
AGREEMENT_SEED = 20


class MirageInputError(PtxdsError, ValueError):
    """A muGraph file cannot be used at all (not a muGraph list, or no known operator)."""


@dataclass(frozen=True)
class FileAnalysis:
    """A file's group decisions: the muGraphs that compute another function than the
    reference muGraph (none: the file is labelled), and the reference's input domain
    ``hi`` and typical spread ``std`` (0 when the file is refused)."""
    differ: tuple
    hi: float
    std: float
    seconds: float  # what finding them took, where they were found

    def refusal(self, name: str, reference: int) -> str:
        if not self.differ:
            return ""
        return (f"{name}: muGraphs {list(self.differ)} compute a different function than muGraph "
                f"{reference} (float64 evaluation on seeded inputs); no rows are labelled")


def parsed_file(path: Path) -> tuple:
    """(raw JSON list, one MuGraph or MuGraphError per element); a muGraph whose inputs'
    shapes differ from the first parsed one's is an error. Raises MirageInputError."""
    try:
        graphs = load_file(path)
    except MuGraphFileError as exc:
        raise MirageInputError(str(exc)) from None
    parsed = [g for g in graphs if isinstance(g, MuGraph)]
    if not parsed:
        raise MirageInputError(f"{path.name}: no muGraph could be parsed ({graphs[0]})")
    shapes = [t.shape for t in parsed[0].inputs]
    for i, g in enumerate(graphs):
        if isinstance(g, MuGraph) and [t.shape for t in g.inputs] != shapes:
            graphs[i] = MuGraphError(path.name, g.index, "kn_input_op",
                                     f"inputs {[t.shape for t in g.inputs]} differ from the group's {shapes}")
    return json.loads(path.read_text()), graphs


def disagreeing(raw: list, indices: list, reference: int) -> list:
    """The muGraphs of ``indices`` whose float64 evaluation on seeded inputs differs from
    muGraph ``reference``'s beyond float64 reassociation (their rows would be labelled
    against a wrong reference)."""
    shapes, _ = mugraph_semantics.io_tensors(raw[reference])
    rng = np.random.default_rng(AGREEMENT_SEED)
    inputs = [rng.uniform(-0.1, 0.1, s) for s in shapes]  # small: exp and products stay tame
    want = mugraph_semantics.evaluate(raw[reference], inputs)
    scale = float(np.max(np.abs(want))) or 1.0
    differ = []
    for i in indices:
        if i == reference:
            continue  # the reference agrees with itself: evaluating it again proves nothing
        try:
            got = mugraph_semantics.evaluate(raw[i], inputs)
            ok = got.shape == want.shape and float(np.max(np.abs(got - want))) <= AGREEMENT_RTOL * scale
        except (mugraph_semantics.MuGraphSemanticsError, KeyError, ValueError, IndexError):
            ok = False
        if not ok:
            differ.append(i)
    return differ


@functools.lru_cache(maxsize=1)
def _code_digest() -> bytes:
    """The bytes the analysis's answer depends on besides the file's (read once a process:
    the modules cannot change under it)."""
    modules = (mugraph_semantics, graph_module, operators_module, sys.modules[__name__])
    return b"".join(Path(m.__file__).read_bytes() for m in modules) + np.__version__.encode()


def _cache_file(data: bytes) -> Path:
    key = hashlib.sha256(_code_digest() + b"\0" + data).hexdigest()[:32]
    return cache_folder("mirage") / "analysis" / f"{key}.json"


def _kept(target: Path):
    try:
        kept = json.loads(target.read_text())
        return FileAnalysis(tuple(kept["differ"]), float(kept["hi"]), float(kept["std"]), float(kept["seconds"]))
    except (OSError, ValueError, KeyError, TypeError):  # not kept yet, or unreadable: analyse again
        return None


def _keep(target: Path, found: FileAnalysis) -> None:
    try:  # readers never see half a file; a unique name on a shared folder
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{uuid.uuid4().hex}.partial")
        partial.write_text(json.dumps(asdict(found)))
        os.replace(partial, target)
    except OSError:  # a read-only or full cache costs the next build the search, nothing more
        pass


def cached_analysis(path) -> "FileAnalysis | None":
    """The kept analysis of ``path``'s current content, or None."""
    return _kept(_cache_file(Path(path).read_bytes()))


def analyse(path) -> FileAnalysis:
    """``path``'s analysis: the kept one, else found now (and kept). Raises
    MirageInputError when the file is no muGraph list."""
    path = Path(path)
    target = _cache_file(path.read_bytes())
    kept = _kept(target)
    if kept is not None:
        return kept
    start = time.perf_counter()
    raw, graphs = parsed_file(path)
    indices = [g.index for g in graphs if isinstance(g, MuGraph)]
    reference = indices[0]
    differ = disagreeing(raw, indices, reference)
    hi = std = 0.0
    if not differ:
        hi = mugraph_semantics.find_domain(raw[reference])
        std = mugraph_semantics.find_typical_std(raw[reference], hi)
    found = FileAnalysis(tuple(differ), hi, std, round(time.perf_counter() - start, 3))
    _keep(target, found)
    return found


def _analyse_quietly(path: str) -> "FileAnalysis | str":
    """analyse() for a pool worker: a bad file's message instead of its exception."""
    try:
        return analyse(path)
    except MirageInputError as exc:
        return str(exc)


def analyse_all(paths: list, jobs: int = 0, log=None) -> None:
    """Analyse the files of ``paths`` whose analysis is not kept yet, ``jobs`` at a time
    (0: one per core) in fresh processes, each named on ``log`` (stderr by default) as it
    starts and ends, so a build says what it does from its first second. Bad files are
    left for the caller, which names them."""
    log = log or sys.stderr
    todo = [Path(p) for p in paths if Path(p).is_file() and cached_analysis(p) is None]
    if not todo:
        return
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
    print(f"mirage: analysing {len(todo)} muGraph file(s) ({len(paths) - len(todo)} kept), {jobs} at a time: "
          f"float64 agreement of each file's muGraphs and its input domain", file=log, flush=True)
    start = time.perf_counter()
    if jobs == 1:
        for n, path in enumerate(todo, 1):
            print(f"mirage: [{n}/{len(todo)}] {path.name} ...", file=log, flush=True)
            _report(path, _analyse_quietly(str(path)), start, log)
        return
    # spawn: the parent may hold threads (a fork would copy their locks)
    with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        futures = [(path, pool.submit(_analyse_quietly, str(path))) for path in todo]
        for n, (path, future) in enumerate(futures, 1):
            print(f"mirage: [{n}/{len(todo)}] {path.name} ...", file=log, flush=True)
            _report(path, future.result(), start, log)


def _report(path: Path, found, start: float, log) -> None:
    if isinstance(found, str):
        what = f"refused: {found}"
    elif found.differ:
        what = f"refused: muGraphs {list(found.differ)} disagree"
    else:
        what = f"domain {found.hi:.4g}, std {found.std:g}"
    seconds = "" if isinstance(found, str) else f" in {found.seconds:.1f} s"
    print(f"mirage:     {path.name}: {what}{seconds} ({time.perf_counter() - start:.0f} s so far)",
          file=log, flush=True)
