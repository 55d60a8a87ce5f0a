"""The inductor source: every Triton kernel of a capture folder (builders/inductor/capture.py)
is one group; its members are the configs Inductor's autotuner would consider for it (the
heuristics' default list and its max-autotune list), each compiled for every target arch.

Each kernel folder is a triton-jit call description (call.json, kernel.py, reference.py),
so members compile, specialise and launch exactly as triton-jit rows do
(builders/triton_jit); the rows say ``source: inductor``, their group is
``inductor/<model>/<kernel>`` and their provenance names the model, the ATen ops and the
config lists. ``ptxds capture --source inductor`` writes the folder (no GPU needed).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from builders.base import WorkItem
from builders.triton_jit.builder import TritonJitBuilder, member_items
from builders.triton_jit.description import load_description
from dataset_spec.errors import PtxdsError
from dataset_spec.one_problem import check_joins
from dataset_spec.store.shards import problems_in_folder

SOURCE_NAME = "inductor"
CAPTURE_VERSION = 2  # what a capture folder's capture.json must say; 2: portable references, input domains


REFERENCES = {"fx": "the kernel's post-grad FX subgraph in float64",
              "ir": "Inductor's IR of the buffers the kernel computes, traced to ATen ops, in float64"}


class CaptureError(PtxdsError, ValueError):
    """A capture folder or model list is unusable; the message names it and the fix."""


@dataclass(frozen=True)
class InductorOptions:
    """The capture folder the kernels come from."""
    captured: Optional[str] = field(default=None, metadata={
        "flag": "--captured", "path": "dir", "required": "DIR (see docs/inductor.md)",
        "help": "folder written by ptxds capture --source inductor (inductor source)"})


# ATen ops that test for infinities or NaN: a graph holding one defines every output for them
SPECIAL_TESTS = ("aten.isinf.", "aten.isnan.", "aten.isfinite.", "aten.isposinf.", "aten.isneginf.",
                 "aten.nan_to_num.")
# graph inputs (a model's state, role ``weight:<name>``) whose values have one sign: a
# BatchNorm's running variance
NONNEGATIVE_STATE = (".running_var",)


def with_graph_params(problem, info: dict) -> None:
    """What the kernel's graph says about its problem, added to the call's params: a graph
    that tests for infinities or NaN (T5's float16 overflow guard) has stress rows holding
    them (``stress_specials``), or its flag is 0 on every draw and no trial checks it; a
    BatchNorm's running variance is drawn as magnitudes (``nonnegative_inputs``): a
    negative one is no variance, and its NaN is a value two sources need not agree on."""
    if any(str(op).startswith(SPECIAL_TESTS) for op in info.get("aten_ops") or ()):
        problem.params["stress_specials"] = True
    magnitudes = sorted(name for name, role in (info.get("graph_inputs") or {}).items()
                        if str(role or "").endswith(NONNEGATIVE_STATE)
                        and name in {b.name for b in problem.buffers})
    if magnitudes:
        problem.params["nonnegative_inputs"] = magnitudes


def kernel_folders(root: Path) -> list:
    """Every kernel folder (one holding call.json) under a capture folder, sorted, each
    checked by ``check_kernel_folder``."""
    folders = sorted(p.parent for p in root.glob("*/*/call.json"))
    if not folders:
        raise CaptureError(f"{root}: no captured kernels (<model>/<kernel>/call.json); "
                           f"write one with ptxds capture --source inductor --out {root}")
    for folder in folders:
        check_kernel_folder(folder)
    return folders


def check_kernel_folder(folder: Path) -> None:
    """Refuses a kernel whose capture predates CAPTURE_VERSION or whose reference calls an op
    that a verifier's torch (the minimum, portable_ops.MINIMUM_TORCH) may lack."""
    from builders.inductor.portable_ops import MINIMUM_TORCH, missing_ops

    summary = folder.parent / "capture.json"
    version = json.loads(summary.read_text()).get("capture_version", 0) if summary.exists() else 0
    if version < CAPTURE_VERSION:
        raise CaptureError(f"{folder.parent}: capture version {version} predates portable references and input "
                           f"domains (version {CAPTURE_VERSION}); capture it again with ptxds capture --source inductor")
    missing = missing_ops((folder / "reference.py").read_text())
    if missing:
        raise CaptureError(f"{folder}/reference.py calls {', '.join(missing)}, which torch {MINIMUM_TORCH} (the "
                           f"oldest a verifier may run) lacks; capture it again with this ptxds, which "
                           f"decomposes such ops")


class InductorBuilder(TritonJitBuilder):
    """Source ``inductor``: one group per captured kernel, one row per config and arch."""
    name = SOURCE_NAME
    Options = InductorOptions
    pip_extra = "triton"
    credit = "PyTorch Inductor (BSD-3-Clause): Triton kernels torch.compile writes for model graphs"
    cpu_seconds_per_row = 0.6

    def capture_root(self) -> Path:
        if not self.settings.captured:
            raise CaptureError("source inductor needs --captured DIR; write one with "
                               "ptxds capture --source inductor --models LIST --out DIR")
        return Path(self.settings.captured)

    def check_output(self, out_dir) -> None:
        """Refuses a folder whose rows of a group carry another problem."""
        for folder in kernel_folders(self.capture_root()):
            description = load_description(folder / "call.json")
            with_graph_params(description.problem, json.loads((folder / "inductor.json").read_text()))
            group_id = f"{SOURCE_NAME}/{description.problem.problem_id}"
            clash = check_joins(group_id, description.problem, problems_in_folder(out_dir, group_id), str(out_dir))
            if clash:
                raise CaptureError(f"{folder}: {clash}")

    def work_items(self) -> list:
        items = []
        for folder in kernel_folders(self.capture_root()):
            description = load_description(folder / "call.json")
            info = json.loads((folder / "inductor.json").read_text())
            group_id = f"{SOURCE_NAME}/{description.problem.problem_id}"
            items += member_items(description, group_id, group_id, self.options.archs, SOURCE_NAME, inductor=info)
        return items

    def build(self, item: WorkItem) -> list:
        [record] = super().build(item)
        info = item.payload["inductor"]
        record.source, record.group_id = SOURCE_NAME, item.group_id
        with_graph_params(record.problem, info)
        record.variant["config_lists"] = info["config_lists"][item.payload["plan"]["config"]]
        record.provenance.update(
            generator="ptxds builders.inductor", model=info["model"], kernel=info["kernel"],
            aten_ops=info["aten_ops"], layers=info["layers"], graph_inputs=info["graph_inputs"],
            heuristic=info["heuristic"], inductor_source_sha256=info["inductor_source_sha256"],
            reference=REFERENCES[info.get("reference", "fx")], licence="BSD-3-Clause (PyTorch)")
        return [record]
