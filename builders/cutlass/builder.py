"""``ptxds build --source cutlass``: CUTLASS profiler GEMMs as runnable equivalence groups.

Enumerates kernels with ``cutlass_library`` (builders/cutlass/catalog.py), compiles only
their instantiations, several per nvcc call (source.py, compile.py), splits
the module per entry (``ptx_tools.split_module``), and packs each kernel's by-value
``Params`` on the CPU with a host packer to get the blob, pointer and CUtensorMap patches,
grid, block, cluster and dynamic shared memory (packer.py). Groups are one function
each (problem.py).

Options (``BuildOptions.extra``): ``family`` (glob or list of globs over procedural names),
``sm_count`` (default 132), ``shapes`` (a shape set name or file, builders/shapes.py;
default: 512x768x520), ``problem`` ((M, N, K): one exact size, instead of ``shapes``),
``alpha``, ``beta``, ``batch_size`` (kernels per nvcc call, default 8), ``per_family`` (at
most N kernels of each family of ``catalog.family_table``, drawn with the sample seed).

Sizes: CUTLASS PTX does not depend on the problem size (M, N, K live in the by-value
Params), so a work item compiles a batch of kernels of one function once and makes one row
per size from the Params, grid and workspace packed for that size; rows of a multi-size
item record it in ``provenance["shared_compile"]``. Sizes of a built-in shape set are
rounded up per group so that every member's alignment divides them (int8 K=520 -> 528);
a size the user gave that a kernel cannot run is a ``not_applicable`` row saying why.
"""
from __future__ import annotations

import shlex
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional

from dataset_spec.model import Arg, Buffer, Distribution, KernelRecord, Launch, SpecError
from ptx_tools import split_module
from builders.base import Builder, BuildOptions, WorkItem
from builders.cutlass import catalog, grouped, mixed_input, sparse
from builders.cutlass.blockwise import BLOCKWISE_DEFAULT_PROBLEM, EXTRA_SLOTS as BLOCKWISE_SLOTS, is_blockwise
from builders.cutlass.kernel_traits import arch_of, entry_params, uses_tma  # noqa: F401 (re-exported)
from builders.cutlass.compile import (BASE_FLAGS, CutlassCompileError, build_packer, compile_to_ptx,
                                      cutlass_version, nvcc_version)
from builders.cutlass.packer import PackError, pack_launch
from builders.cutlass.problem import (DEFAULT_PROBLEM, alignment_misfit, epilogue_alpha, epilogue_misfit, family_id,
                                      fit_to_family, group_id, kernel_gemm, make_problem)
from builders.shapes import ShapeSet, load_shape_set
from builders.cutlass.source import kernel_source, packer_source

LICENCE = "BSD-3-Clause (CUTLASS)"
BLOCKWISE_OP = "blockwise_scaled_gemm"  # the shape sets' list for blockwise-scaled kernels
DEFAULT_SM_COUNT = 132  # H100 SXM; persistent 3.x schedulers size their grid by it
DEFAULT_BATCH = 8


def _families(family) -> tuple:
    if not family:
        return catalog.DEFAULT_FAMILIES
    if isinstance(family, str):
        return tuple(f.strip() for f in family.split(",") if f.strip())
    return tuple(family)


def cutlass_shape_set(shapes, problem=None) -> ShapeSet:
    """``problem`` (one exact size) wins over ``shapes``; the default set is 512x768x520."""
    if problem is not None:
        size = tuple(int(v) for v in problem)
        return ShapeSet(name="problem", gemm=(size,), exact=True)
    shape_set = load_shape_set(shapes)
    if shape_set.is_default:
        return ShapeSet(name="default", gemm=(DEFAULT_PROBLEM,), is_default=True,
                        per_op={BLOCKWISE_OP: (BLOCKWISE_DEFAULT_PROBLEM,)})
    if not shape_set.sizes_for("gemm"):
        raise SpecError(f"shape set {shape_set.name!r} names no gemm sizes; CUTLASS builds GEMMs")
    return shape_set


@dataclass(frozen=True)
class CutlassOptions:
    """Which kernels (``family`` globs, ``per_family``), their epilogue (``alpha``, ``beta``),
    the SM count persistent schedulers size their grid by, and the sizes (``shapes``, or one
    exact ``problem`` M, N, K; ``batch_size`` kernels per nvcc call)."""
    family: Optional[str] = field(default=None, metadata={
        "flag": "--family", "help": "kernel name glob (like the profiler's --kernels)"})
    per_family: Optional[int] = field(default=None, metadata={
        "flag": "--per-family", "min": 1,
        "help": "at most N kernels of each family (docs/cutlass.md), drawn with --sample-seed"})
    alpha: Optional[float] = field(default=None, metadata={"flag": "--alpha", "help": "epilogue alpha (default 1)"})
    beta: Optional[float] = field(default=None, metadata={
        "flag": "--beta", "help": "epilogue beta (default 0); nonzero gives the problem a C operand"})
    sm_count: int = field(default=DEFAULT_SM_COUNT, metadata={
        "flag": "--sm-count", "min": 1, "show_default": True,
        "help": "SM count persistent schedulers size their grid by"})
    shapes: Optional[str] = None
    problem: Optional[tuple[int, ...]] = None
    batch_size: int = DEFAULT_BATCH


def _is_tma_name(name: str) -> bool:
    """A 3.x SM90 kernel with a TMA mainloop, by its name (``uses_tma`` without the manifest;
    the 2.x-API SM90 DMMA kernels are ``cutlass_sm90_*``, not ``cutlass3x_``)."""
    return name.startswith("cutlass3x_sm90") and "cpasync" not in name.lower()


class CutlassBuilder(Builder):
    """CUTLASS GEMM kernels -> rows with PTX, Params blob launches and a GEMM problem."""
    name = "cutlass"
    Options = CutlassOptions
    pip_extra = "cutlass"
    takes_shapes = True
    # 822 default kernels in 33 min on 2 cores, the default mix's average (SM90 TMA kernels
    # cost about 5x an SM80 one: 92 s for a batch of 4 against 37 s for a batch of 8)
    cpu_seconds_per_row = 4.8
    # Per kernel, packer included: those 3960 CPU-s over the 756 SM80 and 66 SM90 TMA kernels
    # of that mix at the 5x ratio. A size beyond the first costs a Params pack, next to nothing.
    cpu_seconds_per_kernel = 3.6
    cpu_seconds_per_tma_kernel = 18.0
    # cicc peaked at 3.0 GiB compiling one SM90a TMA kernel; a cluster scheduler packs
    # fewer such items per node than it has cores. A hint, not the hard limit (that is
    # ptx_tools' PTXDS_COMPILER_MEMORY_GB).
    task_memory_bytes = 4 << 30

    def __init__(self, options: BuildOptions | None = None):
        super().__init__(options)
        settings = self.settings
        self.families = _families(settings.family)
        # the settings arrive typed (builders/options.py); None alpha/beta: not given
        self.sm_count = settings.sm_count
        self.shape_set = cutlass_shape_set(settings.shapes, settings.problem)
        self.alpha = 1.0 if settings.alpha is None else settings.alpha
        self.alpha_given = settings.alpha is not None
        self.beta = 0.0 if settings.beta is None else settings.beta
        self.batch_size = settings.batch_size
        self.per_family = settings.per_family

    # -- enumeration -------------------------------------------------------------------
    def kernels(self) -> list:
        specs = catalog.enumerate_kernels(self.families, tuple(self.options.archs))
        if not specs:
            raise SpecError(catalog.no_match_message(self.families, tuple(self.options.archs)))
        specs = catalog.per_family(specs, self.per_family, self.options.sample_seed)
        return catalog.sample_kernels(specs, self.kernel_limit(), self.options.sample_seed)

    def kernel_limit(self):
        """``--limit`` counts rows, and each kernel gives one row per size."""
        if self.options.limit is None:
            return None
        sizes = max(1, len(self.shape_set.sizes_for("gemm")))
        return max(1, self.options.limit // sizes)

    def sizes_for(self, specs: list) -> list:
        """The (M, N, K)s one group of kernels is built at: a built-in set's sizes fitted to
        the group's alignments (duplicates after rounding dropped), or the user's exactly."""
        op = ("mixed_input_gemm" if any(mixed_input.is_scaled(s) for s in specs)
              else BLOCKWISE_OP if any(is_blockwise(s) for s in specs)
              else "sparse_gemm" if any(sparse.is_sparse(s) for s in specs) else "gemm")
        sizes = [tuple(int(v) for v in size) for size in self.shape_set.sizes_for(op)]
        if not self.shape_set.exact:
            sizes = [fit_to_family(specs, *size) for size in sizes]
        return list(dict.fromkeys(sizes))

    def cpu_seconds(self, item: WorkItem) -> float:
        """Each kernel compiles once whatever its sizes; an SM90 TMA one at its own rate."""
        names = (item.payload or {}).get("names")
        if not names:
            return super().cpu_seconds(item)
        return sum(self.cpu_seconds_per_tma_kernel if _is_tma_name(name) else self.cpu_seconds_per_kernel
                   for name in names)

    def work_items(self) -> list[WorkItem]:
        families = defaultdict(list)
        specs = self.kernels()
        items = grouped.work_items(self, [s for s in specs if grouped.is_grouped(s)])
        for spec in (s for s in specs if not grouped.is_grouped(s)):
            families[(family_id(spec, self.alpha, self.beta), arch_of(spec))].append(spec)
        planned = []
        for (family, arch), specs in families.items():
            sizes = self.sizes_for(specs)
            planned.append((f"{family}/M{sizes[0][0]}N{sizes[0][1]}K{sizes[0][2]}", arch, family, sizes, specs))
        for first_gid, arch, family, sizes, specs in sorted(planned, key=lambda p: (p[0], p[1])):
            gids = [group_id(specs[0], *size, epilogue_alpha(specs[0], *size, self.alpha, self.alpha_given),
                             self.beta) for size in sizes]
            for start in range(0, len(specs), self.batch_size):
                chunk = specs[start:start + self.batch_size]
                if len(sizes) == 1:  # the key every single-size build has always used
                    key = f"{gids[0]}/{arch}/{start // self.batch_size}"
                    label = f"{len(chunk)} CUTLASS kernel(s) for {gids[0]} on {arch}"
                else:
                    labels = "+".join(f"M{m}N{n}K{k}" for m, n, k in sizes)
                    key = f"{family}/{labels}/{arch}/{start // self.batch_size}"
                    label = f"{len(chunk)} CUTLASS kernel(s) x {len(sizes)} sizes for {family} on {arch}"
                items.append(WorkItem(
                    key=key, group_id=gids[0], label=label,
                    payload={"names": [s.name for s in chunk], "sm": chunk[0].sm, "arch": arch,
                             "problems": [list(size) for size in sizes], "exact": self.shape_set.exact,
                             "shape_set": self.shape_set.name, "alpha": self.alpha,
                             "alpha_given": self.alpha_given, "beta": self.beta,
                             "sm_count": self.sm_count, "families": list(self.families),
                             "per_family": self.per_family,
                             "limit": self.options.limit, "sample_seed": self.options.sample_seed},
                    rows=len(chunk) * len(sizes)))
        return items

    # -- building ----------------------------------------------------------------------
    def compile_batch(self, payload: dict) -> tuple:
        """A work item's kernels compiled once, with one packer for those that compiled:
        (specs, PTX by name, failure message by name, packer or None)."""
        ops = catalog.load_manifest_operations(payload["sm"])
        specs = [catalog.describe_operation(ops[name]) for name in payload["names"]]
        ptx_by_name, failures = self._compile(specs, payload["arch"])
        built = [s for s in specs if s.name in ptx_by_name]
        packer = None
        if built:
            try:
                packer = build_packer(packer_source(built), payload["arch"])
            except CutlassCompileError as exc:
                for s in built:
                    failures[s.name] = f"packer build failed: {exc}\n{exc.log}"
        return specs, ptx_by_name, failures, packer

    def build(self, item: WorkItem) -> list[KernelRecord]:
        """Compile the batch once, then one row per (size, kernel), sizes outermost."""
        p = item.payload
        if p.get("kind") == grouped.KIND:
            return grouped.build(self, item)
        specs, ptx_by_name, failures, packer = self.compile_batch(p)
        problems = [tuple(size) for size in p["problems"]]
        # one family per item, so one alpha per size for every kernel of it
        alphas = [_row_alpha(specs[0], p, size) for size in problems]
        gids = [group_id(specs[0], *size, alpha, p["beta"]) for size, alpha in zip(problems, alphas)]
        rows = []
        for index, (size, alpha) in enumerate(zip(problems, alphas)):
            shared = ({"groups": gids, "sizes": [list(s) for s in problems], "reused": index > 0}
                      if len(problems) > 1 else None)
            for spec in specs:
                rows.append(self._row(spec, item, size, alpha, ptx_by_name, failures, packer, shared))
        return rows

    def _row(self, spec, item, size, alpha, ptx_by_name, failures, packer, shared) -> KernelRecord:
        """One kernel at one size: built, build_failed (compile/pack) or not_applicable."""
        p = item.payload
        if spec.name in failures:
            return self._record(spec, item, size, alpha, "", [], [], "build_failed", failures[spec.name], shared)
        entry, ptx = ptx_by_name[spec.name]
        size_misfit = alignment_misfit(spec, *size)
        misfit = size_misfit or epilogue_misfit(spec, alpha, p["beta"])
        if misfit:  # built-in sizes are fitted per group; a user's size, alpha or beta may miss
            status = "not_applicable" if p["exact"] or not size_misfit else "build_failed"
            return self._record(spec, item, size, alpha, ptx, [], [], status, misfit, shared)
        try:
            launch, scratch = self._launch(spec, packer, entry, ptx, p, size, alpha)
        except (PackError, ValueError) as exc:
            return self._record(spec, item, size, alpha, ptx, [], [], "build_failed", str(exc), shared)
        return self._record(spec, item, size, alpha, ptx, [launch], scratch, "built", "", shared)

    def _compile(self, specs, arch):
        """name -> (entry, standalone PTX), and name -> error message for failures."""
        try:
            return self._compile_batch(specs, arch), {}
        except CutlassCompileError as exc:
            if len(specs) == 1:
                return {}, {specs[0].name: f"{exc}\n{exc.log}"}
        found, failures = {}, {}
        for spec in specs:  # isolate the kernel(s) that break the batch
            try:
                found.update(self._compile_batch([spec], arch))
            except CutlassCompileError as exc:
                failures[spec.name] = f"{exc}\n{exc.log}"
        return found, failures

    def _compile_batch(self, specs, arch):
        result = compile_to_ptx(kernel_source(specs), arch)
        modules = split_module(result.ptx)
        found = {}
        for spec in specs:
            token = f"{len(spec.name)}{spec.name}E"
            entries = [e for e in modules if token in e]
            if len(entries) != 1:
                raise CutlassCompileError(f"expected one entry for {spec.name}, found {entries}")
            ptx = modules[entries[0]]
            if spec.generation == 3 and arch == "sm_90a" and "wgmma" not in ptx:
                raise CutlassCompileError(f"{spec.name}: no wgmma in sm_90a PTX (kernel body compiled out)")
            if uses_tma(spec) and "cp.async.bulk.tensor" not in ptx:
                raise CutlassCompileError(f"{spec.name}: a TMA kernel without cp.async.bulk.tensor in its PTX")
            found[spec.name] = (entries[0], ptx)
        return found

    def _launch(self, spec, packer, entry, ptx, p, size, alpha):
        m, n, k = size
        use_c = p["beta"] != 0
        packed = pack_launch(packer, spec.name, m, n, k, alpha, p["beta"], p["sm_count"], use_c,
                             alias_c_to_d=spec.generation == 3,
                             extra_slots=(BLOCKWISE_SLOTS if is_blockwise(spec) else
                                          sparse.extra_slots(spec) or mixed_input.extra_slots(spec)),
                             params=mixed_input.pack_params(spec))
        params = entry_params(ptx, entry)
        if len(params) != 1 or params[0].size != len(packed.blob):
            raise PackError(f"entry params {[(q.name, q.size) for q in params]} do not match the "
                            f"{len(packed.blob)}-byte Params blob")
        tensormaps = [q for q in packed.patches if q.kind == "tensormap"]
        if uses_tma(spec) and not tensormaps:
            raise PackError(f"{spec.name}: a TMA kernel whose Params hold no CUtensorMap")
        if tensormaps and params[0].align < 64:
            raise PackError(f"Params hold CUtensorMaps but the entry param is only .align {params[0].align}")
        blob = bytearray(packed.blob)
        for patch in packed.patches:  # addresses and descriptors are written at launch time
            blob[patch.offset:patch.offset + patch.size] = bytes(patch.size)
        scratch = []
        if packed.workspace_bytes:
            scratch.append(Buffer("workspace", "uint8", (packed.workspace_bytes,), "scratch",
                                  init=Distribution("zeros")))
        launch = Launch(entry=entry, grid=packed.grid, block=packed.block, cluster=packed.cluster,
                        dynamic_smem=packed.dynamic_smem,
                        args=[Arg("blob", blob=bytes(blob), patches=packed.patches)])
        return launch, scratch

    def _record(self, spec, item, size, alpha, ptx, launches, scratch, status, message, shared) -> KernelRecord:
        p = item.payload
        m, n, k = size
        g = kernel_gemm(spec)
        variant = dict(spec.knobs)
        variant.update({"generation": spec.generation, "kernel_layouts": [g.layout_a, g.layout_b, g.layout_c],
                        "problem_transposed": g.swapped})
        provenance = self.provenance(spec, p, shared)
        provenance["c_aliases_d"] = spec.generation == 3 and p["beta"] == 0
        return KernelRecord(
            group_id=group_id(spec, m, n, k, alpha, p["beta"]), source="cutlass", variant=variant, name=spec.name,
            arch=p["arch"], ptx=ptx, launches=launches,
            problem=make_problem(spec, m, n, k, alpha, p["beta"]), scratch=scratch,
            toolchain=self.toolchain(p), provenance=provenance,
            status=status, status_message=message[-8000:] if message else "")

    @staticmethod
    def toolchain(p) -> dict:
        return {"nvcc": nvcc_version(), "nvcc_flags": BASE_FLAGS + [f"-arch={p['arch']}", "-ptx"],
                "cutlass": cutlass_version()}

    @staticmethod
    def provenance(spec, p, shared) -> dict:
        """Where a row comes from: generator, package, selection, SM count, batch, command."""
        provenance = {"generator": "cutlass_library (GenerateSM%d)" % spec.sm,
                      "package": f"nvidia-cutlass=={cutlass_version()}",
                      "cutlass_version": cutlass_version(), "licence": LICENCE,
                      "families": p["families"], "limit": p["limit"], "sample_seed": p["sample_seed"],
                      "per_family": p.get("per_family"), "family": catalog.family_key(spec),
                      "sm_count": p["sm_count"], "batch": p["names"],
                      "command": " ".join(shlex.quote(a) for a in sys.argv)}
        if p.get("shape_set", "default") != "default":
            provenance["shape_set"] = p["shape_set"]
        if shared:  # the PTX is one compile for every size of this item
            provenance["shared_compile"] = shared
        return provenance


def _row_alpha(spec, payload: dict, size) -> float:
    """The epilogue alpha of ``spec``'s row at ``size`` (problem.epilogue_alpha); payloads
    written before ``alpha_given`` existed keep their alpha."""
    return epilogue_alpha(spec, *size, payload["alpha"], payload.get("alpha_given", True))
