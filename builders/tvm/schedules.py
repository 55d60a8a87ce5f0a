"""Schedules of a TVM workload: MetaSchedule design spaces with seeded sampling, and
TVM's rule-based ``dlight`` GPU schedules.

A MetaSchedule sample is (design space index, rand_state): ``PostOrderApply`` with the
CUDA schedule rules builds the design spaces of the PrimFunc (multi-level tiling with
shared-memory caching and thread binding, cross-thread reduction, auto-inlining, auto
unroll), drawing every sampling instruction's decision from ``rand_state``; the CUDA
postprocessors then rewrite cooperative fetches, bind unbound blocks, apply unrolling and
check the GPU limits. The trace, with its decisions, is the row's ``variant``: replaying
it regenerates the schedule. MetaSchedule's mutators are not needed (no search), and are
not created: constructing them crashes this wheel.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Optional

import tvm
from tvm.target import Target

SHARED_LIMIT = 48 * 1024   # static shared memory per block without an opt-in


@dataclass
class Schedule:
    """A scheduled module, or why none could be made."""
    kind: str                   # metaschedule / dlight
    key: str                    # unique within the workload
    variant: dict
    mod: Optional[object] = None
    error: str = ""


def cuda_target(arch: str) -> Target:
    return Target({"kind": "cuda", "arch": arch.rstrip("a"), "max_threads_per_block": 1024,
                   "max_shared_memory_per_block": SHARED_LIMIT, "thread_warp_size": 32})


def prim_func(tensors: list, symbol: str):
    from tvm import te
    return te.create_prim_func(tensors).with_attr("global_symbol", symbol)


def sample_seed(base_seed: int, index: int) -> int:
    digest = hashlib.sha256(f"tvm-schedule/{base_seed}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def metaschedule(func, target: Target, rand_state: int, space: int) -> Schedule:
    """Design space ``space`` of ``func`` sampled with ``rand_state``, postprocessed."""
    import tvm.s_tir.tensor_intrin  # noqa: F401  (registers the tensor intrinsics rules refer to)
    from tvm.s_tir import meta_schedule as ms
    key = f"ms/{space}/{rand_state}"
    variant = {"generator": "metaschedule", "space": space, "rand_state": rand_state}
    try:
        generator = ms.space_generator.PostOrderApply(sch_rules="cuda", postprocs="cuda", mutator_probs={})
        context = ms.TuneContext(mod=func, target=target, space_generator=generator, num_threads=1,
                                 rand_state=rand_state)
        spaces = context.generate_design_space()
        variant["spaces"] = len(spaces)
        sch = spaces[space % len(spaces)]
        variant["space"] = space % len(spaces)
        variant["trace"] = str(sch.trace)
        for post in context.space_generator.postprocs:
            if not post.apply(sch):
                return Schedule("metaschedule", key, variant,
                                error=f"postprocessor {type(post).__name__} rejected the sample")
        variant["trace"] = str(sch.trace)
        return Schedule("metaschedule", key, variant, sch.mod)
    except Exception as exc:  # TVM raises its own error types
        return Schedule("metaschedule", key, variant, error=f"{type(exc).__name__}: {exc}"[:4000])


DLIGHT_RULES = ("Matmul", "GEMV", "Reduction", "GeneralReduction", "Fallback")


def dlight(func, target: Target, tensor_core_inputs: bool = False) -> Schedule:
    """TVM's rule-based GPU schedule (dlight: Matmul, GEMV, Reduction, GeneralReduction,
    then Fallback), as applied to models by TVM's default pipeline. With float16 matmul
    inputs the Matmul rule is left out: it tensorizes with MMA intrinsics, and this wheel's
    Tensorize crashes the process."""
    from tvm.s_tir import dlight as dl
    rules = [r for r in DLIGHT_RULES if not (tensor_core_inputs and r == "Matmul")]
    variant = {"generator": "dlight", "rules": rules}
    try:
        mod = tvm.IRModule({"main": func})
        with target:
            mod = dl.ApplyDefaultSchedule(*[getattr(dl.gpu, r)() for r in rules])(mod)
        return Schedule("dlight", "dlight", variant, mod)
    except Exception as exc:
        return Schedule("dlight", "dlight", variant, error=f"{type(exc).__name__}: {exc}"[:4000])


def candidates(func, target: Target, base_seed: int, index: int, tensor_core_inputs: bool = False) -> Schedule:
    """The ``index``-th candidate schedule: 0 is dlight, then MetaSchedule samples that
    cycle over the design spaces."""
    if index == 0:
        return dlight(func, target, tensor_core_inputs)
    return metaschedule(func, target, sample_seed(base_seed, index), index - 1)
