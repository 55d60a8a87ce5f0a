"""The ``ptx`` source's builder: each member of a manifest (read by ``read.py``) x target arch
is one row; a CUDA member is compiled to PTX here, and a compile error is a ``build_failed``
row naming the user's file.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from builders.base import Builder, WorkItem
from builders.manifest.read import (SOURCE_NAME, Manifest, ManifestError, Member, _FieldError, _load_cached,
                                    load_manifest, resolve_launches)
from dataset_spec.model import KernelRecord, make_build_key
from dataset_spec.one_problem import check_joins
from dataset_spec.store.shards import problems_in_folder


def _runs_on(target: str, arch: str) -> bool:
    """Whether PTX written for ``.target`` ``target`` can be assembled for ``arch``:
    newer archs accept older targets; an arch-specific target (sm_90a) only its own arch."""
    t, a = re.fullmatch(r"sm_(\d+)([af]?)", target), re.fullmatch(r"sm_(\d+)([af]?)", arch)
    if not t or not a:
        return target == arch
    if t.group(2):
        return target == arch
    return int(a.group(1)) >= int(t.group(1))


@dataclass(frozen=True)
class ManifestOptions:
    """The manifest file naming the members (docs/manifest.md)."""
    manifest: Optional[str] = field(default=None, metadata={
        "flag": "--manifest", "path": "file", "required": "FILE (see docs/manifest.md)", "help": "manifest file"})


class ManifestBuilder(Builder):
    """Source ``ptx``: the members of one manifest (``options.extra["manifest"]``), one row
    per member and target arch."""
    name = SOURCE_NAME
    Options = ManifestOptions

    def manifest(self) -> Manifest:
        path = self.settings.manifest
        if not path:
            raise ManifestError("source ptx needs a manifest: pass --manifest FILE")
        return load_manifest(path)

    def work_items(self) -> list:
        manifest = self.manifest()
        items = []
        for member in manifest.members:
            for arch in self.options.archs:
                if member.archs is not None and arch not in member.archs:
                    continue
                if member.kind == "ptx" and not _runs_on(_ptx_target(member.ptx), arch):
                    continue  # hand-written PTX for a newer or arch-specific target
                key = make_build_key(SOURCE_NAME, manifest.group_id,
                                     {"variant": member.variant, "fingerprint": member.fingerprint},
                                     arch, member.name)
                items.append(WorkItem(key=key, group_id=manifest.group_id, label=f"{member.name} {arch}",
                                      payload={"manifest": str(manifest.path), "member": member.name,
                                               "arch": arch, "problem_digest": manifest.problem.digest()}))
        return items[: self.options.limit] if self.options.limit else items

    def check_output(self, out_dir) -> None:
        """Refuses to build into a folder whose rows of this group carry another problem
        (say a second manifest with the same problem_id and another tolerance)."""
        manifest = self.manifest()
        clash = check_joins(manifest.group_id, manifest.problem, problems_in_folder(out_dir, manifest.group_id),
                            f"{out_dir}")
        if clash:
            raise ManifestError(f"{manifest.path.name}: {clash}")

    def build(self, item: WorkItem) -> list:
        path = item.payload["manifest"]
        manifest = _load_cached(path, Path(path).stat().st_mtime_ns)
        wanted = item.payload.get("problem_digest")
        if wanted and manifest.problem.digest() != wanted:
            # The file changed between listing and building: its rows would carry two problems.
            raise ManifestError(f"{Path(path).name}: problem {manifest.problem.problem_id!r} changed during the build "
                                f"(digest {wanted} when the build started, {manifest.problem.digest()} now); one "
                                "problem per group: run the build again once the manifest is final")
        member = manifest.member(item.payload["member"])
        arch = item.payload["arch"]
        record = KernelRecord(
            group_id=manifest.group_id, source=SOURCE_NAME, variant=dict(member.variant),
            name=member.name, arch=arch, ptx="", launches=[], problem=manifest.problem,
            build_key=item.key, scratch=list(member.scratch), toolchain=_toolchain(member),
            provenance=_provenance(manifest, member, arch))
        if member.kind == "ptx":
            record.ptx, record.launches = member.ptx, list(member.launches)
            return [record]
        return [_compile_member(record, member, arch)]


def _compile_member(record: KernelRecord, member: Member, arch: str) -> KernelRecord:
    """Compile a CUDA member; a compile error or a launch/param mismatch gives a
    ``build_failed`` row with the message, never an exception."""
    from ptx_tools import CompileError, compile_cuda
    source = member.source_file.read_text()
    include_dirs = [str(member.source_file.parent)] + list(member.include_dirs)
    try:
        ptx = compile_cuda(source, arch, flags=tuple(member.nvcc_flags), include_dirs=tuple(include_dirs))
    except CompileError as exc:
        # The compiler saw a temporary copy called kernel.cu; name the user's file instead.
        message = str(exc).replace("kernel.cu", member.source_as_written)
        return dataclasses.replace(record, status="build_failed", status_message=message)
    record.ptx = ptx
    try:
        record.launches = resolve_launches(member, ptx)
    except _FieldError as exc:
        return dataclasses.replace(record, status="build_failed",
                                   status_message=f"{record.provenance['manifest']}: {exc}")
    return record


def _ptx_target(ptx: str) -> str:
    match = re.search(r"^\s*\.target\s+(\w+)", ptx, re.M)
    return match.group(1) if match else ""


def _toolchain(member: Member) -> dict:
    try:
        from ptx_tools import toolchain_versions
        versions = dict(toolchain_versions())
    except Exception:  # versions are provenance only; a missing tool fails later, loudly
        versions = {}
    if member.kind == "cuda":
        return {"compiler": "nvcc", **versions, "nvcc_flags": list(member.nvcc_flags)}
    return {"compiler": "none (PTX from the manifest)", **versions}


def _provenance(manifest: Manifest, member: Member, arch: str) -> dict:
    provenance = {
        "generator": "ptxds manifest", "manifest": str(manifest.path),
        "manifest_sha256": manifest.sha256, "member": member.name,
        "source_file": member.source_as_written, "source_sha256": member.source_sha256,
    }
    if member.kind == "cuda":
        provenance["command"] = " ".join(["nvcc", "-ptx", f"-arch={arch}", *member.nvcc_flags,
                                          member.source_as_written])
    return provenance
