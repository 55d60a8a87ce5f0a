"""What a muGraph file's rows need before any of them is built, found once per file content.

Two float64 walks over the file decide its group: every muGraph must compute the reference
muGraph's function (the agreement check), and the reference muGraph's input domain and
typical spread are searched (dataset_spec/mugraph.py). Their answers are kept on disk
(``<mirage cache>/analysis``), keyed by the file's bytes and by everything else the answer
depends on: the code of the walk, of the parser and of this module, and numpy's version.
The build's main process analyses the files; its workers read the answers.

The work is cut into tasks run by a pool of processes (one per core, each with a
single-threaded BLAS: threads of several processes on few cores wait on each other): per
file, the domain search, and the agreement check in chunks of muGraphs. Where a file's
batch slices are independent (``mugraph.batch_tiles``), the agreement is checked on the
fewest slices every muGraph's tiles allow (the same function on every slice, so agreeing
there is agreeing everywhere). Tasks whose float64 tensors are large run while the others'
fit beside them in ``ANALYSIS_MEMORY_BYTES``. Each file is named as its first task starts
and when its last ends.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import sys
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
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
AGREEMENT_CHUNK = 8  # muGraphs per agreement task (each task walks the reference once more)
# float64 bytes the analysis tasks running at once may hold (estimated from their tensors);
# one task larger than this runs alone
ANALYSIS_MEMORY_BYTES = 5 << 29
BASE_BYTES = 64 << 20
SINGLE_THREADED_BLAS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


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
    seconds: float  # CPU seconds finding them took, where they were found

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


def agreement_slices(raw: list, indices: list) -> "int | None":
    """How many batch slices the agreement of ``indices`` is checked on: the least common
    multiple of their tiles, when every one of them has independent batch slices
    (``mugraph.batch_tiles``) of one batch it divides; None: the whole tensors."""
    found = [mugraph_semantics.batch_tiles(raw[i]) for i in indices]
    if not found or None in found or len({batch for batch, _ in found}) != 1:
        return None
    keep = 1
    for _, tile in found:
        keep = keep * tile // math.gcd(keep, tile)
    return keep if keep < found[0][0] and found[0][0] % keep == 0 else None


def disagreeing(raw: list, indices: list, reference: int, slices: "int | None" = None) -> list:
    """The muGraphs of ``indices`` whose float64 evaluation on seeded inputs differs from
    muGraph ``reference``'s beyond float64 reassociation (their rows would be labelled
    against a wrong reference); on the first ``slices`` batch slices of every muGraph
    (``agreement_slices``) when given."""
    graphs = {i: raw[i] if slices is None else mugraph_semantics.cut_batch(raw[i], slices)
              for i in (reference, *indices)}
    shapes, _ = mugraph_semantics.io_tensors(graphs[reference])
    rng = np.random.default_rng(AGREEMENT_SEED)
    inputs = [rng.uniform(-0.1, 0.1, s) for s in shapes]  # small: exp and products stay tame
    want = mugraph_semantics.evaluate(graphs[reference], inputs)
    scale = float(np.max(np.abs(want))) or 1.0
    differ = []
    for i in indices:
        if i == reference:
            continue  # the reference agrees with itself: evaluating it again proves nothing
        try:
            got = mugraph_semantics.evaluate(graphs[i], inputs)
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


def _kept(target: Path, log=None):
    try:
        text = target.read_text()
    except OSError:  # not kept yet
        return None
    try:
        kept = json.loads(text)
        return FileAnalysis(tuple(kept["differ"]), float(kept["hi"]), float(kept["std"]), float(kept["seconds"]))
    except (ValueError, KeyError, TypeError):
        print(f"mirage: analysis cache file {target} is unreadable; analysing its muGraph file again",
              file=log or sys.stderr, flush=True)
        return None


def _keep(target: Path, found: FileAnalysis) -> None:
    try:  # readers never see half a file; a unique name on a shared folder
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{uuid.uuid4().hex}.partial")
        partial.write_text(json.dumps(asdict(found)))
        os.replace(partial, target)
    except OSError:  # a read-only or full cache costs the next build the search, nothing more
        pass


def cached_analysis(path, log=None) -> "FileAnalysis | None":
    """The kept analysis of ``path``'s current content, or None."""
    return _kept(_cache_file(Path(path).read_bytes()), log)


def analyse(path) -> FileAnalysis:
    """``path``'s analysis: the kept one, else found now in this process (and kept).
    Raises MirageInputError when the file is no muGraph list or has no input domain."""
    path = Path(path)
    target = _cache_file(path.read_bytes())
    kept = _kept(target)
    if kept is not None:
        return kept
    plan = _plan(path)
    results = [_run_task(task) for task in plan.tasks]
    found = _combine(plan, results)
    if isinstance(found, str):
        raise MirageInputError(found)
    _keep(target, found)
    return found


# ----------------------------------------------------------------------------- tasks

@dataclass
class _FilePlan:
    """One file's analysis as tasks: ("domain", path, ()) and ("agree", path, indices,
    slices), with each task's estimated float64 bytes and cost (elements walked)."""
    path: Path
    tasks: list
    memory: list
    cost: list
    error: str = ""


def _elements(shapes) -> int:
    return sum(math.prod(s) for s in shapes)


def _plan(path: Path) -> _FilePlan:
    try:
        raw, graphs = parsed_file(path)
    except MirageInputError as exc:
        return _FilePlan(path, [], [], [], str(exc))
    indices = [g.index for g in graphs if isinstance(g, MuGraph)]
    shapes, out_shape = mugraph_semantics.io_tensors(raw[indices[0]])
    whole = _elements(shapes) + _elements([out_shape])
    slices = agreement_slices(raw, indices)
    per_check = whole if slices is None else whole * slices // shapes[0][0]
    # peaks measured on the shared files and batch-8 stand-ins: 1.3 to 2.7 times the
    # float64 inputs and output, over a 50 MB interpreter; costs in elements walked
    tasks, memory, cost = [("domain", str(path), (), None)], [BASE_BYTES + 16 * whole], [24 * whole]
    others = indices[1:]
    for start in range(0, len(others), AGREEMENT_CHUNK):
        chunk = tuple(others[start:start + AGREEMENT_CHUNK])
        tasks.append(("agree", str(path), chunk, slices))
        memory.append(BASE_BYTES + 12 * per_check)
        cost.append((len(chunk) + 1) * per_check)
    return _FilePlan(path, tasks, memory, cost)


def _run_task(task: tuple) -> tuple:
    """(answer, seconds) of one task: the differing indices of an agreement chunk, (hi,
    std) of a domain search, or a one-line message naming why the file cannot be used."""
    kind, path, indices, slices = task
    start = time.process_time()  # CPU seconds: on a busy machine the wall clock says little
    try:
        raw, graphs = parsed_file(Path(path))
        reference = next(g.index for g in graphs if isinstance(g, MuGraph))
        if kind == "agree":
            answer = disagreeing(raw, list(indices), reference, slices)
        else:
            hi = mugraph_semantics.find_domain(raw[reference])
            answer = (hi, mugraph_semantics.find_typical_std(raw[reference], hi))
    except MirageInputError as exc:
        answer = str(exc)
    except mugraph_semantics.MuGraphSemanticsError as exc:
        answer = f"{Path(path).name}: muGraph {reference}: {exc}; no rows are labelled"
    return answer, time.process_time() - start


def _combine(plan: _FilePlan, results: list) -> "FileAnalysis | str":
    if plan.error:
        return plan.error
    differ, domain, seconds = [], None, 0.0
    for (kind, *_), (answer, spent) in zip(plan.tasks, results):
        seconds += spent
        if isinstance(answer, str):
            if kind == "domain":
                domain = answer
                continue
            return answer
        if kind == "agree":
            differ += answer
        else:
            domain = answer
    if differ:
        return FileAnalysis(tuple(sorted(differ)), 0.0, 0.0, round(seconds, 3))
    if isinstance(domain, str):
        return domain
    return FileAnalysis((), domain[0], domain[1], round(seconds, 3))


@contextlib.contextmanager
def _environment(values: dict):
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def analyse_all(paths: list, jobs: int = 0, log=None, memory_bytes: int = ANALYSIS_MEMORY_BYTES) -> None:
    """Analyse the files of ``paths`` whose analysis is not kept yet: their tasks run
    ``jobs`` at a time (0: one per core) in fresh processes, the costliest first, while
    their estimated memory fits ``memory_bytes`` (a larger one alone). Each file is named
    on ``log`` (stderr by default) as its first task starts and when its last ends, so a
    build says what it does from its first second. Bad files are left for the caller,
    which names them."""
    log = log or sys.stderr
    todo = [Path(p) for p in paths if Path(p).is_file() and cached_analysis(p, log) is None]
    if not todo:
        return
    start = time.perf_counter()
    plans = [_plan(path) for path in todo]
    tasks = [(n, k) for n, plan in enumerate(plans) for k in range(len(plan.tasks))]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(tasks) or 1))
    print(f"mirage: analysing {len(todo)} muGraph file(s) ({len(paths) - len(todo)} kept) in {len(tasks)} "
          f"task(s), {jobs} at a time: float64 agreement of each file's muGraphs and its input domain",
          file=log, flush=True)
    results = [[None] * len(plan.tasks) for plan in plans]
    left = [len(plan.tasks) for plan in plans]
    begun: set = set()

    def started(n: int) -> None:
        if n not in begun:
            begun.add(n)
            print(f"mirage: [{len(begun)}/{len(plans)}] {plans[n].path.name} ...", file=log, flush=True)

    def finished(n: int, k: int, answer) -> None:
        results[n][k] = answer
        left[n] -= 1
        if not left[n]:
            _finish(plans[n], results[n], start, log)

    for n, plan in enumerate(plans):
        if not plan.tasks:  # a file that does not parse: its message comes with its rows
            started(n)
            _finish(plan, [], start, log)
    tasks.sort(key=lambda t: -plans[t[0]].cost[t[1]])  # the costliest first: the last to end are short
    if jobs == 1:
        for n, k in tasks:
            started(n)
            finished(n, k, _run_task(plans[n].tasks[k]))
        return
    running: dict = {}
    used = 0
    # spawn: the parent may hold threads (a fork would copy their locks)
    with _environment(SINGLE_THREADED_BLAS), \
            ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        while tasks or running:
            for task in list(tasks):
                if len(running) >= jobs:
                    break
                memory = plans[task[0]].memory[task[1]]
                if running and used + memory > memory_bytes:
                    continue
                tasks.remove(task)
                started(task[0])
                running[pool.submit(_run_task, plans[task[0]].tasks[task[1]])] = (task, memory)
                used += memory
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                (n, k), memory = running.pop(future)
                used -= memory
                finished(n, k, future.result())


def _finish(plan: _FilePlan, results: list, start: float, log) -> None:
    found = _combine(plan, results)
    if isinstance(found, str):
        what, seconds = f"refused: {found}", ""
    else:
        _keep(_cache_file(plan.path.read_bytes()), found)
        what = (f"refused: muGraphs {list(found.differ)} disagree" if found.differ
                else f"domain {found.hi:.4g}, std {found.std:g}")
        seconds = f" in {found.seconds:.1f} CPU-s"
    print(f"mirage:     {plan.path.name}: {what}{seconds} ({time.perf_counter() - start:.0f} s so far)",
          file=log, flush=True)
