"""``ptxds build --source cutlass``: CUTLASS profiler GEMMs as runnable equivalence groups.

Enumerates kernels with ``cutlass_library`` (builders/cutlass_catalog.py), compiles only
their instantiations, several per nvcc call (cutlass_source.py, cutlass_compile.py), splits
the module per entry (``ptx_tools.split_module``), and packs each kernel's by-value
``Params`` on the CPU with a host packer to get the blob, pointer and CUtensorMap patches,
grid, block, cluster and dynamic shared memory (cutlass_packer.py). Groups are one function
each (cutlass_problem.py).

Options (``BuildOptions.extra``): ``family`` (glob or list of globs over procedural names),
``sm_count`` (default 132), ``problem`` ((M, N, K), default 512x768x520), ``alpha``,
``beta``, ``batch_size`` (kernels per nvcc call, default 8).
"""
from __future__ import annotations

import shlex
import sys
from collections import defaultdict

from dataset_spec.model import Arg, Buffer, Distribution, KernelRecord, Launch
from ptx_tools import parse_ptx, split_module
from builders.base import Builder, BuildOptions, WorkItem
from builders import cutlass_catalog as catalog
from builders.cutlass_compile import (BASE_FLAGS, CutlassCompileError, build_packer, compile_to_ptx,
                                      cutlass_version, nvcc_version)
from builders.cutlass_packer import PackError, pack_launch
from builders.cutlass_problem import DEFAULT_PROBLEM, check_alignment, group_id, kernel_gemm, make_problem
from builders.cutlass_source import kernel_source, packer_source

LICENCE = "BSD-3-Clause (CUTLASS)"
DEFAULT_SM_COUNT = 132  # H100 SXM; persistent 3.x schedulers size their grid by it
DEFAULT_BATCH = 8


def arch_of(spec) -> str:
    return "sm_90a" if spec.sm == 90 else f"sm_{spec.sm}"


def uses_tma(spec) -> bool:
    """3.x kernels load through TMA unless their mainloop is the cp.async one."""
    return spec.generation == 3 and "cpasync" not in spec.name.lower()


def entry_params(ptx: str, entry: str) -> list:
    """The entry's ``.param`` declarations (``.size``, ``.align``) as ptx_tools parses them."""
    return parse_ptx(ptx).function(entry).params


def _families(extra: dict) -> tuple:
    family = extra.get("family")
    if not family:
        return catalog.DEFAULT_FAMILIES
    if isinstance(family, str):
        return tuple(f.strip() for f in family.split(",") if f.strip())
    return tuple(family)


class CutlassBuilder(Builder):
    """CUTLASS GEMM kernels -> rows with PTX, Params blob launches and a GEMM problem."""
    name = "cutlass"

    def __init__(self, options: BuildOptions | None = None):
        super().__init__(options)
        extra = self.options.extra
        self.families = _families(extra)
        self.sm_count = int(extra.get("sm_count", DEFAULT_SM_COUNT))
        self.problem_size = tuple(int(v) for v in extra.get("problem", DEFAULT_PROBLEM))
        self.alpha = float(extra.get("alpha", 1.0))
        self.beta = float(extra.get("beta", 0.0))
        self.batch_size = int(extra.get("batch_size", DEFAULT_BATCH))

    # -- enumeration -------------------------------------------------------------------
    def kernels(self) -> list:
        specs = catalog.enumerate_kernels(self.families, tuple(self.options.archs))
        return catalog.sample_kernels(specs, self.options.limit, self.options.sample_seed)

    def work_items(self) -> list[WorkItem]:
        m, n, k = self.problem_size
        groups = defaultdict(list)
        for spec in self.kernels():
            groups[(group_id(spec, m, n, k, self.alpha, self.beta), arch_of(spec))].append(spec)
        items = []
        for (gid, arch), specs in sorted(groups.items()):
            for start in range(0, len(specs), self.batch_size):
                chunk = specs[start:start + self.batch_size]
                items.append(WorkItem(
                    key=f"{gid}/{arch}/{start // self.batch_size}",
                    group_id=gid,
                    label=f"{len(chunk)} CUTLASS kernel(s) for {gid} on {arch}",
                    payload={"names": [s.name for s in chunk], "sm": chunk[0].sm, "arch": arch,
                             "problem": [m, n, k], "alpha": self.alpha, "beta": self.beta,
                             "sm_count": self.sm_count, "families": list(self.families),
                             "limit": self.options.limit, "sample_seed": self.options.sample_seed}))
        return items

    # -- building ----------------------------------------------------------------------
    def build(self, item: WorkItem) -> list[KernelRecord]:
        p = item.payload
        ops = catalog.load_manifest_operations(p["sm"])
        specs = [catalog.describe_operation(ops[name]) for name in p["names"]]
        m, n, k = p["problem"]
        ptx_by_name, failures = self._compile(specs, p["arch"])
        built = [s for s in specs if s.name in ptx_by_name]
        packer = None
        if built:
            try:
                packer = build_packer(packer_source(built), p["arch"])
            except CutlassCompileError as exc:
                for s in built:
                    failures[s.name] = f"packer build failed: {exc}\n{exc.log}"
        rows = []
        for spec in specs:
            if spec.name in failures:
                rows.append(self._record(spec, item, "", [], [], "build_failed", failures[spec.name]))
                continue
            entry, ptx = ptx_by_name[spec.name]
            try:
                check_alignment(spec, m, n, k)
                launch, scratch = self._launch(spec, packer, entry, ptx, p)
            except (PackError, ValueError) as exc:
                rows.append(self._record(spec, item, ptx, [], [], "build_failed", str(exc)))
                continue
            rows.append(self._record(spec, item, ptx, [launch], scratch, "built", ""))
        return rows

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
            if arch == "sm_90a" and "wgmma" not in ptx:
                raise CutlassCompileError(f"{spec.name}: no wgmma in sm_90a PTX (kernel body compiled out)")
            if uses_tma(spec) and "cp.async.bulk.tensor" not in ptx:
                raise CutlassCompileError(f"{spec.name}: a TMA kernel without cp.async.bulk.tensor in its PTX")
            found[spec.name] = (entries[0], ptx)
        return found

    def _launch(self, spec, packer, entry, ptx, p):
        m, n, k = p["problem"]
        use_c = p["beta"] != 0
        packed = pack_launch(packer, spec.name, m, n, k, p["alpha"], p["beta"], p["sm_count"], use_c,
                             alias_c_to_d=spec.generation == 3)
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

    def _record(self, spec, item, ptx, launches, scratch, status, message) -> KernelRecord:
        p = item.payload
        m, n, k = p["problem"]
        g = kernel_gemm(spec)
        variant = dict(spec.knobs)
        variant.update({"generation": spec.generation, "kernel_layouts": [g.layout_a, g.layout_b, g.layout_c],
                        "problem_transposed": g.swapped})
        return KernelRecord(
            group_id=item.group_id, source="cutlass", variant=variant, name=spec.name,
            arch=p["arch"], ptx=ptx, launches=launches,
            problem=make_problem(spec, m, n, k, p["alpha"], p["beta"]), scratch=scratch,
            toolchain={"nvcc": nvcc_version(), "nvcc_flags": BASE_FLAGS + [f"-arch={p['arch']}", "-ptx"],
                       "cutlass": cutlass_version()},
            provenance={"generator": "cutlass_library (GenerateSM%d)" % spec.sm,
                        "package": f"nvidia-cutlass=={cutlass_version()}",
                        "cutlass_version": cutlass_version(), "licence": LICENCE,
                        "families": p["families"], "limit": p["limit"], "sample_seed": p["sample_seed"],
                        "sm_count": p["sm_count"], "batch": p["names"],
                        "c_aliases_d": spec.generation == 3 and p["beta"] == 0,
                        "command": " ".join(shlex.quote(a) for a in sys.argv)},
            status=status, status_message=message[-8000:] if message else "")
