"""``ptxds build --source mirage``: Mirage's saved muGraphs as equivalence groups.

One file is one group (its muGraphs compute the same operator); one muGraph x arch is one
row, whose PTX holds one entry per kernel of the muGraph and whose launches run them in
order over the problem's buffers and the muGraph's scratch buffers.

Options (``BuildOptions.extra``): ``mugraphs`` (files; default: every ``*.json`` in
``$PTXDS_MIRAGE_DIR``, else ``../shared/mirage/saved_mugraphs`` beside the repository,
else the pinned files downloaded to the cache: fetch.py).
"""
from __future__ import annotations

import functools
import hashlib
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from builders.base import Builder, BuildOptions, WorkItem
from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem

from ptx_tools import CompileError, toolchain_versions
from ptx_tools.ptx_cache import DEFAULT_FLAGS, cached_ptx
from .cuda import PRELUDE, kernel_sources, module_source
from . import kernel_ptx
from .fetch import COMMIT, DIR_ENV, default_files, expand, shared_dir
from .analysis import MirageInputError, analyse, analyse_all, parsed_file
from .graph import MuGraph, MuGraphError
from .operators import make_problem, recognise
from .plan import GraphPlan, lower

SOURCE = "mirage"
UPSTREAM = {"repository": "mirage-project/mirage", "folder": "benchmark/saved_mugraphs",
            "commit": COMMIT, "licence": "Apache-2.0"}
LICENCE = "Apache-2.0 (Mirage muGraphs, mirage-project/mirage)"


def default_dir() -> Path:
    """The local folder tests read: $PTXDS_MIRAGE_DIR, else ../shared beside the repository."""
    env = os.environ.get(DIR_ENV)
    return Path(env) if env else shared_dir()


@dataclass
class FileInfo:
    """A parsed file: its group's problem and, per index, a MuGraph or its error."""
    path: Path
    sha256: str
    group_id: str
    problem: Problem
    input_names: tuple
    output_name: str
    graphs: list
    operator: str = ""  # the shape-recognised name, a label only


def group_of(path: Path) -> str:
    return f"{SOURCE}/{path.stem}"


def analyse_file(path) -> FileInfo:
    """Parse ``path``, check that its muGraphs agree in float64 and make the group's
    problem; raises MirageInputError naming the file. The float64 work runs once per file
    content (analysis.py keeps its answer on disk)."""
    path = Path(path)
    raw, graphs = parsed_file(path)
    reference = next(g.index for g in graphs if isinstance(g, MuGraph))
    found = analyse(path)
    refusal = found.refusal(path.name, reference)
    if refusal:
        raise MirageInputError(refusal)
    shapes = [list(t.shape) for t in graphs[reference].inputs]
    operator = recognise(shapes)  # a label for buffers and variant only, never the reference
    input_names = operator.inputs if operator else tuple(f"in{i}" for i in range(len(shapes)))
    output_name = operator.output if operator else "out"
    group = group_of(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    problem = make_problem(raw[reference], reference, digest, input_names, output_name, group,
                           domain=(found.hi, found.std))
    return FileInfo(path, digest, group, problem, input_names, output_name, graphs,
                    operator.op if operator else "")


@functools.lru_cache(maxsize=32)
def _analyse_cached(path: str, mtime_ns: int) -> FileInfo:
    return analyse_file(path)


def _info(path: str) -> FileInfo:
    return _analyse_cached(path, Path(path).stat().st_mtime_ns)


# muGraphs of one file and arch compiled by one nvcc run (builders/mirage/kernel_ptx.py);
# a worker whose chunk another worker is compiling compiles one of the next chunks meanwhile
CHUNK_MUGRAPHS = 32
AHEAD_CHUNKS = 2


def _kernel_key(text: str, arch: str) -> str:
    return kernel_ptx.kernel_key(PRELUDE, text, arch, DEFAULT_FLAGS, toolchain_versions()["nvcc"])


@functools.lru_cache(maxsize=64)
def _chunk(path: str, arch: str, indices: tuple) -> tuple:
    """(lock name, {entry: CUDA text}, {entry: kernel key}) of the chunk's muGraphs, each
    kernel once, in source order; muGraphs the lowering rejects are left out."""
    info = _info(path)
    sources: dict = {}
    for index in indices:
        graph = info.graphs[index]
        if isinstance(graph, MuGraph):
            try:
                sources.update((e, t) for e, t in kernel_sources(plan_of(info, graph, arch)) if e not in sources)
            except MuGraphError:
                continue
    keys = {entry: _kernel_key(text, arch) for entry, text in sources.items()}
    name = hashlib.sha256("".join(sorted(keys.values())).encode()).hexdigest()[:32]
    return name, sources, keys


def _compile_missing(path: str, arch: str, indices: tuple, wait: bool) -> bool:
    """Compile the chunk's kernels not kept yet; False when another process holds the
    chunk and ``wait`` is off."""
    name, sources, keys = _chunk(path, arch, indices)
    missing = {e: t for e, t in sources.items() if kernel_ptx.load_kernel(keys[e]) is None}
    if not missing or kernel_ptx.chunk_failed(name):
        return True
    with kernel_ptx.chunk_lock(name, wait) as held:
        if not held:
            return False
        missing = {e: t for e, t in missing.items() if kernel_ptx.load_kernel(keys[e]) is None}
        if missing and not kernel_ptx.chunk_failed(name):
            kernel_ptx.compile_chunk(name, PRELUDE, missing, keys, arch, DEFAULT_FLAGS)
    return True


def chunked_ptx(plan: GraphPlan, arch: str, payload: dict) -> "str | None":
    """The row's PTX put together from its chunk's kernels (compiling the chunk when they
    are not kept yet), or None: then the row is compiled alone."""
    texts = dict(kernel_sources(plan))
    keys = [_kernel_key(text, arch) for text in texts.values()]
    kernels = [kernel_ptx.load_kernel(k) for k in keys]
    if None in kernels:
        own = (payload["file"], arch, tuple(payload["chunk"]))
        if not _compile_missing(*own, wait=False):
            for path, other_arch, indices in payload.get("ahead", []):
                if _compile_missing(path, other_arch, tuple(indices), wait=False):
                    break
            _compile_missing(*own, wait=True)
        kernels = [kernel_ptx.load_kernel(k) for k in keys]
        if None in kernels:
            return None
    return kernel_ptx.assemble(kernels)


def plan_of(info: FileInfo, graph: MuGraph, arch: str = "sm_80") -> GraphPlan:
    return lower(graph, list(info.input_names), info.output_name, arch)


def launches_of(plan: GraphPlan, entries: list) -> list:
    return [Launch(entry=entry, grid=k.grid, block=k.block, dynamic_smem=k.smem_bytes,
                   args=[Arg.buf(p) for p in k.params])
            for k, entry in zip(plan.kernels, entries)]


def scratch_of(plan: GraphPlan) -> list:
    return [Buffer(b.name, "float16", b.shape, "scratch") for b in plan.buffers if b.role == "scratch"]


@dataclass(frozen=True)
class MirageOptions:
    """The muGraph files to lower (default: $PTXDS_MIRAGE_DIR, else the pinned upstream files)."""
    mugraphs: "tuple[str, ...] | None" = field(default=None, metadata={
        "flag": "--mugraphs", "path": "any", "multiple": True,
        "help": "muGraph JSON file or folder of them (repeatable; default: $PTXDS_MIRAGE_DIR, "
                "else the pinned upstream files, downloaded once to the cache)"})


class MirageBuilder(Builder):
    """Mirage muGraph files -> one group per file, one row per muGraph and arch."""
    name = SOURCE
    Options = MirageOptions
    credit = ("Rows of source `mirage` lower the saved muGraphs of Mirage, the multi-level "
              "superoptimizer (https://github.com/mirage-project/mirage, folder "
              "benchmark/saved_mugraphs, commit de8745d9; Apache-2.0): the schedules are "
              "Mirage's, the lowering to CUDA is ptxds's.")
    # 248 rows in 58 CPU-s (31 s) on 2 cores, analysis and chunked nvcc runs included
    cpu_seconds_per_row = 0.25

    def __init__(self, options: BuildOptions | None = None):
        super().__init__(options)
        files = self.settings.mugraphs
        self.files = expand(files) if files else None

    def work_items(self) -> list:
        files = self.files if self.files is not None else default_files()
        analyse_all(files)  # the float64 work, once per file content and several files at once
        items = []
        for path in files:
            try:
                info = analyse_file(path)
            except MirageInputError as exc:
                items.append(WorkItem(key=f"{group_of(Path(path))}/error", group_id=group_of(Path(path)),
                                      label=Path(path).name, payload={"error": str(exc)}))
                continue
            for arch in self.options.archs:
                for index in range(len(info.graphs)):
                    items.append(WorkItem(
                        key=f"{info.group_id}/{index}/{arch}/{info.sha256[:12]}", group_id=info.group_id,
                        label=f"{info.path.name} muGraph {index} {arch}",
                        payload={"file": str(Path(path).resolve()), "index": index, "arch": arch}))
        return items

    def plan_batches(self, items: list) -> None:
        """Chunks of up to CHUNK_MUGRAPHS muGraphs of one file and arch, in build order:
        each item's payload names its chunk and the next AHEAD_CHUNKS chunks."""
        runs: dict = {}
        for item in items:
            if "error" not in item.payload:
                runs.setdefault((item.payload["file"], item.payload["arch"]), []).append(item)
        chunks = [(path, arch, run[start:start + CHUNK_MUGRAPHS]) for (path, arch), run in runs.items()
                  for start in range(0, len(run), CHUNK_MUGRAPHS)]
        for n, (path, arch, members) in enumerate(chunks):
            ahead = [[p, a, [m.payload["index"] for m in ms]] for p, a, ms in chunks[n + 1:n + 1 + AHEAD_CHUNKS]]
            for item in members:
                item.payload["chunk"] = [m.payload["index"] for m in members]
                item.payload["ahead"] = ahead

    def build(self, item: WorkItem) -> list:
        p = item.payload
        if "error" in p:
            raise MirageInputError(p["error"])
        info = _info(p["file"])
        graph = info.graphs[p["index"]]
        record = KernelRecord(
            group_id=info.group_id, source=SOURCE, variant={"mugraph": p["index"], "file": info.path.name},
            name=f"{info.path.stem}_mugraph{p['index']}", arch=p["arch"], ptx="", launches=[],
            problem=info.problem, toolchain={"compiler": "nvcc", "nvcc": toolchain_versions()["nvcc"], "nvcc_flags": list(DEFAULT_FLAGS)},
            provenance=self._provenance(info, p["index"]))
        if isinstance(graph, MuGraphError):
            record.status, record.status_message = "build_failed", str(graph)
            return [record]
        record.variant = {**graph.knobs(), "file": info.path.name, "operator": info.operator}
        try:
            plan = plan_of(info, graph, p["arch"])
            source, entries = module_source(plan)
            record.ptx = ("chunk" in p and chunked_ptx(plan, p["arch"], p)) or cached_ptx(source, p["arch"], "mirage")
        except MuGraphError as exc:
            record.status, record.status_message = "build_failed", str(exc)
            return [record]
        except CompileError as exc:
            record.status = "build_failed"
            record.status_message = (f"{info.path.name}: muGraph {p['index']}: {str(exc).splitlines()[0]}\n"
                                     f"{exc.log[-20000:]}")[-8000:]
            return [record]
        record.launches = launches_of(plan, entries)
        record.scratch = scratch_of(plan)
        record.variant["smem_bytes"] = [k.smem_bytes for k in plan.kernels]
        record.variant["stages"] = [k.stages for k in plan.kernels]
        return [record]

    def _provenance(self, info: FileInfo, index: int) -> dict:
        return {"generator": "ptxds mirage lowering (builders/mirage)", "upstream": UPSTREAM,
                "licence": LICENCE, "file": info.path.name, "file_sha256": info.sha256,
                "mugraph": index, "command": " ".join(shlex.quote(a) for a in sys.argv)}
