"""``ptxds add``: register a hand-edited PTX as a new member of an existing group.

The new row inherits the group's problem (a group whose rows already carry different
problems is refused: one problem per group) and its base member's launch sequence (entry,
grid, block, args, scratch); ``launch`` overrides any of a launch's fields (for example
more ``dynamic_smem`` or another ``block``). The row is normalised, checked against the
launch and assembled with ptxas *before* anything is written; any failure raises
``AddError`` and leaves the dataset folder untouched. On success the row is appended
through ``Dataset`` (one atomic part file; then its by-shape row and the card's counts:
an unverified row changes no pair, and every other file stays as it was).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

from builders import source_credits
from builders.handhack.builder import ptx_diff
from dataset_spec.store.dataset import Dataset
from dataset_spec.documents import load_document
from dataset_spec.errors import PtxdsError
from dataset_spec.model import KernelRecord, Launch, SpecError, make_build_key
from dataset_spec.one_problem import check_joins
from ptx_tools import PtxError, parse_ptx

from .finalize import finalize_record

SOURCE = "handhack"


class AddError(PtxdsError, ValueError):
    """The PTX, the launch or the group given to ``add`` is unusable; nothing was written."""


def load_launch_override(path: Optional[str]) -> dict:
    """A JSON or YAML mapping of Launch fields (``entry``, ``grid``, ``block``, ``cluster``,
    ``dynamic_smem``, ``args``) that replace the base launch's."""
    if not path:
        return {}
    try:
        data = load_document(path)
    except SpecError as exc:
        raise AddError(f"--launch {exc}; give a mapping such as {{\"dynamic_smem\": 4096}}") from None
    if not isinstance(data, dict):
        raise AddError(f"--launch {path}: expected a mapping of launch fields, got {type(data).__name__}")
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(Launch)})
    if unknown:
        raise AddError(f"--launch {path}: unknown launch field(s) {unknown}; "
                       f"known: entry, grid, block, cluster, dynamic_smem, args")
    for key in ("dynamic_smem", "grid", "block", "cluster"):
        if key not in data:
            continue
        value = data[key]
        numbers = value if key != "dynamic_smem" and isinstance(value, list) else [value]
        if not numbers or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in numbers):
            want = "a number of bytes, e.g. 4096" if key == "dynamic_smem" else "a list of up to 3 integers, e.g. [128, 1, 1]"
            raise AddError(f"--launch {path}: {key} must be {want}, got {value!r}")
    return data


def pick_base(records: list, group: str, arch: Optional[str]) -> KernelRecord:
    """The group's base member: its first built row (by name, then kernel_id) for ``arch``."""
    members = [r for r in records if r.group_id == group]
    if not members:
        known = sorted({r.group_id for r in records})
        hint = f"known groups: {', '.join(known[:5])}{' ...' if len(known) > 5 else ''}" if known else "the dataset is empty"
        raise AddError(f"group {group!r} is not in the dataset; {hint}")
    usable = [r for r in members if r.status not in ("build_failed", "no_problem", "not_applicable")
              and (arch is None or r.arch == arch)]
    if not usable:
        raise AddError(f"group {group!r} has no built member{f' for {arch}' if arch else ''} to inherit "
                       f"a launch from")
    usable.sort(key=lambda r: (r.base_kernel_id is not None, r.name, r.kernel_id))
    return usable[0]


def ptx_target(ptx: str) -> Optional[str]:
    """The ``.target`` arch of a PTX module (sm_XX), or None."""
    arch = parse_ptx(ptx).arch  # malformed text raises PtxError here
    return arch if arch.startswith("sm_") else None


def build_added_record(dataset, group: str, ptx_path: str, launch_path: Optional[str] = None,
                       name: Optional[str] = None) -> KernelRecord:
    """The new row, finalised (assembled) in memory; raises AddError on any problem."""
    ptx = Path(ptx_path).read_text()
    try:
        arch = ptx_target(ptx)
    except PtxError as exc:
        raise AddError(f"{ptx_path}: malformed PTX: {str(exc).splitlines()[0]}") from None
    if arch is None:
        raise AddError(f"{ptx_path}: no .target directive; the PTX must name its arch (e.g. .target sm_90a)")
    records = Dataset(dataset).records()
    base = pick_base(records, group, arch)
    override = load_launch_override(launch_path)
    if override and len(base.launches) != 1:
        raise AddError(f"group {group!r}: the base member has {len(base.launches)} launches; "
                       f"--launch overrides a single-launch member only")
    try:
        launches = [Launch(**dict(dataclasses.asdict(l), **override)) if override else l for l in base.launches]
    except (ValueError, TypeError) as exc:  # SpecError, or a field of the wrong type ("lots" bytes)
        raise AddError(f"--launch {launch_path}: {str(exc).splitlines()[0]}; give numbers such as "
                       "dynamic_smem: 4096, block: [128, 1, 1]") from None
    name = name or Path(ptx_path).stem
    variant = {"member": name, "base_member": base.name, "base_kernel_id": base.kernel_id, "hand_edited": True}
    provenance = {"generator": "ptxds add", "ptx_file": Path(ptx_path).name, "base_kernel_id": base.kernel_id,
                  "base_name": base.name, "launch_override": override,
                  "licence": f"derived from {base.name} ({base.provenance.get('licence', 'unknown')})",
                  "diff": ptx_diff(base.ptx, ptx, f"{base.name}.ptx", Path(ptx_path).name)}
    record = KernelRecord(group_id=group, source=SOURCE, variant=variant, name=name, arch=arch, ptx=ptx,
                          launches=launches, problem=base.problem, scratch=list(base.scratch),
                          toolchain=dict(base.toolchain, edit="by hand"), provenance=provenance,
                          build_key=make_build_key(SOURCE, group, variant, arch, name))
    clash = check_joins(group, record.problem, [r.problem for r in records if r.group_id == group and r.problem],
                        f"{dataset}")
    if clash:
        raise AddError(f"group {group!r}: {clash}")
    existing = {r.build_key for r in records}
    if record.build_key in existing:
        raise AddError(f"{name!r} is already a member of {group!r} for {arch}; pick another --name")
    finalize_record(record)
    if record.status != "built":
        raise AddError(f"{ptx_path}: {record.status_message}; fix the PTX or pass --launch")
    if record.kernel_id in {r.kernel_id for r in records}:
        raise AddError(f"{ptx_path}: the group already has this exact program and launch "
                       f"(kernel_id {record.kernel_id})")
    return record


def add_member(dataset, group: str, ptx_path: str, launch_path: Optional[str] = None,
               name: Optional[str] = None, progress: bool = False) -> KernelRecord:
    """Build the row (see ``build_added_record``), then append it to the dataset (written,
    then what it changes published: ``Dataset.append``; ``progress``: a bar of the publish's
    steps, should it need the whole publish)."""
    if not (Path(dataset) / "kernels").is_dir():
        raise AddError(f"{dataset} has no kernels/ folder; build a dataset first with ptxds build")
    record = build_added_record(dataset, group, ptx_path, launch_path, name)
    Dataset(dataset, credits=source_credits).append([record], progress)
    return record
