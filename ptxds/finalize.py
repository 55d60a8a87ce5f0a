"""Turn a builder's raw row into a dataset row: normalise and parse the PTX, check every
Launch against its entry's parameter list, assemble with ptxas for the row's arch, tag
features and set the content ids. Any failure becomes ``status=build_failed`` with the
reason; the row is kept."""
from __future__ import annotations

import copy
import hashlib

from dataset_spec.errors import PtxdsError
from dataset_spec.model import KernelRecord, make_kernel_id
from ptx_tools import (AssemblyError, PtxError, assemble, feature_tags, normalize_ptx,
                       parse_ptx, ptx_hash)


class LaunchMismatch(PtxdsError, ValueError):
    """A Launch does not fit its PTX entry."""


def check_launches(record: KernelRecord, module) -> None:
    """Each launch names an entry of the module and fills its params one-to-one by size;
    the block matches .reqntid when the entry declares one."""
    entries = {f.name: f for f in module.entries}
    for i, launch in enumerate(record.launches):
        entry = entries.get(launch.entry)
        if entry is None:
            raise LaunchMismatch(f"launches[{i}].entry {launch.entry!r} is not an entry of the PTX "
                                 f"(entries: {', '.join(entries) or 'none'})")
        if len(launch.args) != len(entry.params):
            raise LaunchMismatch(f"launches[{i}] ({launch.entry}) has {len(launch.args)} args, "
                                 f"the entry takes {len(entry.params)} params")
        for j, (arg, param) in enumerate(zip(launch.args, entry.params)):
            if arg.size != param.size:
                raise LaunchMismatch(f"launches[{i}].args[{j}] is {arg.size} bytes ({arg.kind}), "
                                     f"param {param.name} is {param.size} bytes")
        reqntid = getattr(entry, "reqntid", None)
        if reqntid:
            want = tuple(reqntid) + (1,) * (3 - len(reqntid))
            if tuple(launch.block) != want:
                raise LaunchMismatch(f"launches[{i}].block {launch.block} differs from the entry's "
                                     f".reqntid {want}")


# Rows of one work item often share their PTX (one compile, a row per problem size):
# assemble each distinct (PTX, arch) once per process. Small, since items are.
ASSEMBLY_MEMO_SIZE = 32
_assembly_memo: dict = {}


def assemble_once(ptx: str, arch: str, sass: bool):
    key = (hashlib.sha256(ptx.encode()).hexdigest(), arch, sass)
    if key not in _assembly_memo:
        if len(_assembly_memo) >= ASSEMBLY_MEMO_SIZE:
            _assembly_memo.pop(next(iter(_assembly_memo)))
        _assembly_memo[key] = assemble(ptx, arch, sass=sass)
    return copy.deepcopy(_assembly_memo[key])


def failure_line(exc) -> str:
    """One line for a failed step (an exception or its text): its first line, and when that
    only announces a tool's log ("ptxas failed (exit 255):"), the log's first line naming an
    error (ptxas's own line with the PTX line number and the reason)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0]
    if first.endswith(":") and len(lines) > 1:
        detail = next((line for line in lines[1:] if "error" in line.lower()), lines[1])
        first = f"{first} {' '.join(detail.split())}"
    return first


def finalize_record(record: KernelRecord, sass: bool = False) -> KernelRecord:
    if record.status != "built" or not record.ptx:
        if record.ptx:
            record.ptx_hash = ptx_hash(record.ptx)
        if record.status == "built":
            record.status, record.status_message = "build_failed", "the builder produced no PTX"
        record.kernel_id = record.kernel_id or f"unbuilt-{record.build_key}"
        return record
    try:
        record.ptx = normalize_ptx(record.ptx)
        module = parse_ptx(record.ptx)
        check_launches(record, module)
        assembly = assemble_once(record.ptx, record.arch, sass)
    except (PtxError, LaunchMismatch, AssemblyError) as exc:
        record.status = "build_failed"
        record.status_message = f"{type(exc).__name__}: {failure_line(exc)}"
        record.ptx_hash = ptx_hash(record.ptx)
        record.kernel_id = f"unbuilt-{record.build_key}"
        return record
    record.resources = assembly.resources
    record.sass = (assembly.sass or "") if sass else ""
    record.features = feature_tags(record.ptx)
    # record.ptx is normalised already, and normalising is idempotent: hash the text as it is
    record.ptx_hash = hashlib.sha256(record.ptx.encode()).hexdigest()
    record.kernel_id = make_kernel_id(record.ptx_hash, record.launches, record.problem, record.arch)
    return record
