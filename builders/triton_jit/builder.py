"""The triton-jit source: a user's ``@triton.jit`` kernel, compiled ahead of time for each target
arch with Triton's public API (``triton.compile(ASTSource(fn, signature, constexprs, attrs),
target=GPUTarget("cuda", cc, 32))``; no GPU needed), one row per config and arch.

The call description (``--call FILE``, description.py) gives the problem, the arguments by
parameter name, the grid and the configs (the kernel's ``@triton.autotune`` list unless the
file gives its own). Arguments are specialised as Triton 3.6's JIT does (specialize.py); the
launch then follows the compiled kernel itself: its arguments are the compiled signature's
non-constexpr entries in order, as Triton's launcher passes them, then the two scratch
pointers; block = 32 x num_warps, cluster = num_ctas and dynamic shared memory = the
compiled metadata's ``shared`` (``builders.triton.compile.make_launch``, as the suite's rows).
The argument list is checked against the PTX entry's parameters before the row is kept.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from builders.base import Builder, WorkItem
from builders.triton.compile import (ARCH_CC, PTX_ISA, SCALAR_TYPES, check_shared_memory, config_label,
                                     make_launch, metadata_dict, one_line, toolchain)
from builders.triton_jit.description import (CallDescription, CallDescriptionError, cached_description,
                                             load_description, resolve_member)
from builders.triton_jit.specialize import ArgPlan, compile_inputs, specialize, summary
from dataset_spec.model import Arg, KernelRecord, Problem
from dataset_spec.one_problem import check_joins
from dataset_spec.store.shards import problems_in_folder

SOURCE_NAME = "triton-jit"


@dataclass(frozen=True)
class TritonJitOptions:
    """The call description of one @triton.jit kernel (docs/triton-jit.md)."""
    call: Optional[str] = field(default=None, metadata={
        "flag": "--call", "path": "file", "required": "FILE (see docs/triton-jit.md)",
        "help": "call description of a @triton.jit kernel (triton-jit source)"})


def member_plan(description: CallDescription, index: int) -> dict:
    """Everything one member's compile and launch need, as plain values."""
    config = description.configs[index]
    constexprs, args, grid = resolve_member(description, config)
    try:
        plans = specialize(description.kernel.params, args, constexprs)
    except ValueError as exc:  # names the field: args.<parameter>
        raise CallDescriptionError(f"{description.path}: {exc}") from None
    return {"config": index, "kwargs": dict(config.kwargs), "options": config.options(), "grid": grid,
            "plans": [asdict(p) for p in plans],
            "specialization": summary(plans, description.kernel.params)}


def member_items(description: CallDescription, group_id: str, key_prefix: str, archs, source: str,
                 **payload) -> list:
    """One work item per config of ``description`` and target arch, keyed
    ``<key_prefix>/<config index>_<label>/<arch>``; ``payload`` joins each item's payload."""
    plans = [member_plan(description, index) for index in range(len(description.configs))]
    items = []
    for plan in plans:
        config = description.configs[plan["config"]]
        label = config_label({**config.kwargs, **config.options()})
        for arch in archs:
            if arch not in ARCH_CC:
                raise CallDescriptionError(f"--arch {arch}: {source} compiles for {', '.join(ARCH_CC)}")
            if config.num_ctas > 1 and not arch.startswith("sm_90"):
                continue  # thread-block clusters need sm_90
            key = f"{key_prefix}/{plan['config']}_{label}/{arch}"
            items.append(WorkItem(key=key, group_id=group_id, label=key, payload={
                "call": str(description.path), "sha256": description.sha256, "arch": arch, "plan": plan,
                **payload}))
    return items


def compile_member(description: CallDescription, plan: dict, arch: str):
    """triton.compile of one member for ``arch``; returns the CompiledKernel."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature, constexprs, attrs = compile_inputs([ArgPlan(**p) for p in plan["plans"]])
    source = ASTSource(description.kernel.fn, signature, constexprs, attrs)
    return triton.compile(source, target=GPUTarget("cuda", ARCH_CC[arch], 32),
                          options=dict(plan["options"], ptx_version=PTX_ISA))


def launch_args(compiled, plan: dict) -> list:
    """The kernel's runtime arguments in the compiled kernel's own order: its signature's
    entries that are not constexprs (what Triton's launcher passes), before the scratch pointers."""
    plans = {p["name"]: p for p in plan["plans"]}
    args = []
    for name, kind in compiled.src.signature.items():
        if kind == "constexpr":
            continue
        if kind.startswith("*"):
            args.append(Arg.buf(plans[name]["value"]))
        elif kind in SCALAR_TYPES:
            args.append(Arg.scalar(SCALAR_TYPES[kind], plans[name]["value"]))
        else:
            raise ValueError(f"parameter {name} has type {kind}, which this source does not launch")
    return args


def check_entry(ptx: str, name: str, args: list) -> None:
    """The launch fills the PTX entry's parameters one to one, by size."""
    from ptx_tools.parse import parse_ptx
    [entry] = [f for f in parse_ptx(ptx).functions if f.is_entry and f.name == name] or [None]
    if entry is None:
        raise ValueError(f"the PTX has no entry {name}")
    sizes = [p.size for p in entry.params]
    if [a.size for a in args] != sizes:
        raise ValueError(f"the launch passes {len(args)} arguments of {[a.size for a in args]} bytes; the PTX "
                         f"entry {name} takes {len(sizes)} of {sizes} bytes")


class TritonJitBuilder(Builder):
    """Source ``triton-jit``: one row per config of the described kernel and target arch."""
    name = SOURCE_NAME
    Options = TritonJitOptions
    pip_extra = "triton"
    credit = "Triton (MIT): user @triton.jit kernels compiled ahead of time from a call description"
    # 10 rows (tests/data/triton_jit) in 6 s on a 2-core machine, pipeline and ptxas included
    cpu_seconds_per_row = 0.6

    def description(self) -> CallDescription:
        if not self.settings.call:
            raise CallDescriptionError("source triton-jit needs a call description: pass --call FILE")
        return load_description(self.settings.call)

    def work_items(self) -> list:
        description = self.description()
        # the kernel's name too: several descriptions (Liger's row and block RMSNorm) may
        # fill one group, and a resumed build skips the items whose key it finds
        return member_items(description, description.group_id, f"{description.group_id}/{description.kernel.name}",
                            self.options.archs, SOURCE_NAME)

    def check_output(self, out_dir) -> None:
        """Refuses a folder whose rows of this group carry another problem."""
        description = self.description()
        clash = check_joins(description.group_id, description.problem,
                            problems_in_folder(out_dir, description.group_id), str(out_dir))
        if clash:
            raise CallDescriptionError(f"{description.path.name}: {clash}")

    def build(self, item: WorkItem) -> list:
        path = Path(item.payload["call"])
        description = cached_description(str(path), path.stat().st_mtime_ns)
        if description.sha256 != item.payload["sha256"]:
            raise CallDescriptionError(f"{path.name} changed during the build; run the build again once it is final")
        plan, arch = item.payload["plan"], item.payload["arch"]
        record = self.empty_record(description, plan, arch)
        try:
            compiled = compile_member(description, plan, arch)
            metadata = metadata_dict(compiled.metadata)
            check_shared_memory(metadata, arch)
            if metadata.get("tensordesc_meta"):
                raise ValueError("the kernel takes tensor descriptors, which this source does not launch yet")
            args = launch_args(compiled, plan)
            record.name, record.ptx = metadata["name"], compiled.asm["ptx"]
            launch, scratch = make_launch(metadata["name"], metadata, plan["grid"], args)
            check_entry(record.ptx, record.name, launch.args)
        except Exception as exc:  # a compile failure is a row, never an exception
            record.status, record.status_message = "build_failed", one_line(exc)
            return [record]
        record.launches, record.scratch = [launch], scratch
        record.variant["shared"] = int(metadata.get("shared") or 0)
        return [record]

    @staticmethod
    def empty_record(description: CallDescription, plan: dict, arch: str) -> KernelRecord:
        options = plan["options"]
        variant = dict(plan["kwargs"], **options, config=plan["config"],
                       specialization=plan["specialization"])
        provenance = {"generator": "ptxds builders.triton_jit", "kernel": description.kernel_spec,
                      "kernel_file": description.kernel.module_file,
                      "kernel_file_sha256": description.kernel.module_sha256,
                      "call_description": str(description.path), "call_description_sha256": description.sha256,
                      "configs_from": description.configs_from, "licence": "as the kernel's own module"}
        return KernelRecord(group_id=description.group_id, source=SOURCE_NAME, variant=variant,
                            name=description.kernel.name, arch=arch, ptx="", launches=[],
                            problem=Problem.from_json(description.problem.to_json()), toolchain=toolchain(),
                            provenance=provenance)
