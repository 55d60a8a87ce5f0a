"""The builder interface: options, work items, and the ``Builder`` base class.

A builder lists cheap, deterministic, picklable ``WorkItem``s; the pipeline sends each one
to ``build`` in a worker process, which returns ``KernelRecord`` rows (a compile failure is
a row with status ``build_failed``, never an exception).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from dataset_spec.model import KernelRecord

from .options import NoOptions, given_values, typed_options

# Dynamic shared memory one block may opt into (cudaFuncAttributeMaxDynamicSharedMemorySize)
MAX_DYNAMIC_SMEM = {"sm_80": 163 * 1024, "sm_90": 227 * 1024, "sm_90a": 227 * 1024}


def shared_memory_misfit(arch: str, dynamic_smem: int) -> str:
    """Why a launch with ``dynamic_smem`` bytes cannot run on ``arch``'s GPUs, or ""."""
    limit = MAX_DYNAMIC_SMEM.get(arch)
    if limit is not None and dynamic_smem > limit:
        return (f"needs {dynamic_smem / 1024:g} KiB of dynamic shared memory per block; "
                f"{arch} allows {limit // 1024} KiB")
    return ""


@dataclass
class BuildOptions:
    """What the user asked for: target archs, a row limit (whole work items, see
    ``ptxds.pipeline.select_items``), a sampling seed, and the source's own settings:
    ``settings``, its typed ``Options`` (what the CLI gives, coerced once), or from a
    library caller plain values in ``extra``, coerced once when the builder is made
    (``builders.options.typed_options``). ``Builder.settings`` is the typed object."""
    archs: list = field(default_factory=lambda: ["sm_80", "sm_90a"])
    limit: Optional[int] = None
    sample_seed: int = 0
    extra: dict = field(default_factory=dict)
    settings: object = None


@dataclass
class WorkItem:
    """One unit of build work. ``key`` is unique within the builder; ``payload`` is
    picklable and holds whatever ``build`` needs; ``rows`` is how many rows ``build`` will
    return (what ``--limit`` and the progress bar count)."""
    key: str
    group_id: str
    label: str
    payload: dict = field(default_factory=dict)
    rows: int = 1


class Builder:
    """Base class: subclasses set ``name`` and implement ``work_items`` and ``build``.

    A source declares its settings as ``Options`` (a frozen dataclass; builders/options.py
    says how the CLI draws flags from it), ``pip_extra`` (the ``ptxds[...]`` extra its
    dependencies come with, None: none), ``takes_shapes`` (``--shapes`` applies) and
    ``credit`` (the dataset card's credit line for rows of this source, '' for none)."""
    name = "base"
    Options = NoOptions
    pip_extra: Optional[str] = None
    takes_shapes = False
    credit = ""
    # ``(source, option)``: this source builds ``source``'s requests that set ``option``
    # (``--source triton --from-dump DIR`` is the triton-dump source)
    serves: Optional[tuple] = None
    # The source's own ``ptxds`` commands: "module:function" paths, each function taking a
    # ``builders.commands.CommandHost`` and returning a click command (builders/commands.py)
    commands: tuple = ()
    # Peak memory of one item's build, a scheduling hint for cluster executors (0: small).
    task_memory_bytes = 0
    # CPU seconds one row costs to build with cold caches, for ``ptxds build --dry-run``'s
    # estimate (each source sets what was measured on a 2-core machine; README's table).
    cpu_seconds_per_row = 1.0

    def __init__(self, options: Optional[BuildOptions] = None):
        self.options = options or BuildOptions()
        given = self.options.settings
        if isinstance(given, self.Options):
            self.settings = given
        else:  # plain values, or a source handing its Options on (triton to triton-dump)
            values = given_values(given) if given is not None else self.options.extra
            self.settings = typed_options(self.Options, values, self.name)

    def cpu_seconds(self, item: WorkItem) -> float:
        """Estimated CPU seconds to build ``item`` with cold caches (``build --dry-run``); a
        source whose items differ in cost by more than their row count says so here."""
        return item.rows * self.cpu_seconds_per_row

    def work_items(self) -> list:
        raise NotImplementedError

    def plan_batches(self, items: list) -> None:
        """Called by a build with the work items it will run (after ``--limit`` and what a
        resume skips), before any is built: a source that compiles several items' code in
        one compiler run marks them here (in their payloads). Default: nothing."""

    def check_output(self, out_dir) -> None:
        """Called before building into ``out_dir`` (which may hold rows already): raise an
        error whose one-line message names the clash when the build cannot join them."""

    def build(self, item: WorkItem) -> list[KernelRecord]:
        raise NotImplementedError
