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
from .cuda import module_source
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
    # 248 rows in 175 s on 2 cores
    cpu_seconds_per_row = 1.4

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

    def build(self, item: WorkItem) -> list:
        p = item.payload
        if "error" in p:
            raise MirageInputError(p["error"])
        info = _analyse_cached(p["file"], Path(p["file"]).stat().st_mtime_ns)
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
            record.ptx = cached_ptx(source, p["arch"], "mirage")
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
