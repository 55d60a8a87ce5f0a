"""Schedules of a TVM workload: MetaSchedule design spaces with seeded sampling, and
TVM's rule-based ``dlight`` GPU schedules.

A MetaSchedule sample is (design space index, rand_state): ``PostOrderApply`` with the
CUDA schedule rules builds the design spaces of the PrimFunc once (multi-level tiling
with shared-memory caching and thread binding, cross-thread reduction, auto-inlining,
auto unroll); a sample replays one space's trace with its decisions removed in a
``Schedule`` seeded with rand_state, as MetaSchedule's replay-trace strategy does, so
every sampling instruction draws its decision from ``rand_state``; the CUDA
postprocessors then rewrite cooperative fetches, bind unbound blocks, apply unrolling and
check the GPU limits. The trace, with its decisions, is the row's ``variant``: replaying
it regenerates the schedule. MetaSchedule's mutators are not needed here (no search); the
measured search that uses them is tuning.py's.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Optional

import tvm
from tvm.target import Target

from .workloads import TENSOR_CORE_SCHEDULES

SHARED_LIMIT = 48 * 1024   # static shared memory per block without an opt-in


@dataclass
class Schedule:
    """A scheduled module, or why none could be made."""
    kind: str                   # metaschedule / dlight / mma
    key: str                    # unique within the workload
    variant: dict
    mod: Optional[object] = None
    error: str = ""
    pass_config: dict = field(default_factory=dict)   # lowering options the schedule needs (cp.async)


def cuda_target(arch: str) -> Target:
    return Target({"kind": "cuda", "arch": arch.rstrip("a"), "max_threads_per_block": 1024,
                   "max_shared_memory_per_block": SHARED_LIMIT, "thread_warp_size": 32})


def prim_func(tensors: list, symbol: str):
    from tvm import te
    return te.create_prim_func(tensors).with_attr("global_symbol", symbol)


def sample_seed(base_seed: int, index: int) -> int:
    digest = hashlib.sha256(f"tvm-schedule/{base_seed}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


class DesignSpaces:
    """MetaSchedule's design spaces of one PrimFunc for one target, generated once: the
    traces of ``PostOrderApply`` with the CUDA rules, and the CUDA postprocessors."""

    def __init__(self, func, target: Target):
        import tvm.s_tir.tensor_intrin  # noqa: F401  (registers the tensor intrinsics rules refer to)
        from tvm.s_tir import meta_schedule as ms
        generator = ms.space_generator.PostOrderApply(sch_rules="cuda", postprocs="cuda", mutator_probs={})
        self.context = ms.TuneContext(mod=func, target=target, space_generator=generator, num_threads=1,
                                      rand_state=1)
        self.traces = [space.trace for space in self.context.generate_design_space()]
        self.postprocs = list(self.context.space_generator.postprocs)

    def sample(self, space: int, rand_state: int):
        """Replay design space ``space`` with every decision drawn afresh from ``rand_state``."""
        from tvm import s_tir
        trace = self.traces[space % len(self.traces)]
        sch = s_tir.Schedule(self.context.mod, seed=rand_state, debug_mask="none")
        s_tir.Trace(trace.insts, {}).apply_to_schedule(sch, remove_postproc=True)
        return sch


def metaschedule(spaces: DesignSpaces, rand_state: int, space: int) -> Schedule:
    """Design space ``space`` sampled with ``rand_state``, postprocessed."""
    space = space % len(spaces.traces)
    key = f"ms/{space}/{rand_state}"
    variant = {"generator": "metaschedule", "space": space, "spaces": len(spaces.traces),
               "rand_state": rand_state}
    try:
        sch = spaces.sample(space, rand_state)
        for post in spaces.postprocs:
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
    inputs the Matmul rule is left out: it tensorizes with WMMA intrinsics, which is what the
    tensor-core members (``tensor_core``) are for; these members stay on CUDA cores."""
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


FFI_PROBE = "import tvm, tvm.tirx as t; tvm.ir.save_json(t.IntImm('int32', 3))"


@functools.lru_cache(maxsize=1)
def tensorize_blocker() -> str:
    """Why this TVM install cannot tensorize, or "". Tensorize serialises the intrinsic
    with ``tvm.ir.save_json``, which segfaults with some apache-tvm-ffi releases (0.1.15.post2
    with apache-tvm 0.27.0.post1): probed in a child process so the crash stays there."""
    import subprocess
    import sys
    probe = subprocess.run([sys.executable, "-c", FFI_PROBE], capture_output=True, text=True, timeout=120)
    if probe.returncode == 0:
        return ""
    import tvm_ffi
    return (f"apache-tvm-ffi {tvm_ffi.__version__} crashes TVM {tvm.__version__}'s save_json (exit "
            f"{probe.returncode}), and so Tensorize: install apache-tvm-ffi==0.1.14.post0 (pip install -e '.[tvm]')")


def _retile(trace, tile):
    """dlight MatmulTensorization's trace with its block tile set to ``tile`` (warps M, warps
    N, fragments M, fragments N, k steps): the rule's splits of i, j and k, the cooperative
    fetches' thread count and the einsum padding."""
    from tvm import s_tir
    import tvm.s_tir.schedule  # noqa: F401
    from tvm.tirx import IntImm
    wi, wj, fi, fj, kk = tile
    factors = {0: [None, 1, wi, fi], 1: [1, None, wj, fj], 2: [None, kk]}
    insts, four_way, seen_k = [], 0, False
    for inst in trace.insts:
        inputs, attrs = list(inst.inputs), list(inst.attrs)
        name = inst.kind.name
        if name == "PadEinsum":
            attrs = [[1, 16 * wi * fi, 16 * wj * fj, 16 * kk]]
        elif name == "Split":
            given = [None if x is None else int(x) for x in inputs[1:]]
            if len(given) == 4 and four_way < 2 and given[1:] in ([1, 4, 2], [None, 4, 2]):
                given, four_way = factors[four_way], four_way + 1
            elif four_way == 2 and not seen_k and given == [None, 4]:
                given, seen_k = factors[2], True
            elif len(given) == 4 and given[0] is None and given[2:] == [32, 4]:
                given = [None, wi * wj, 32, 4]    # cooperative fetch: one thread row per warp
            inputs = [inputs[0]] + [None if x is None else IntImm("int32", x) for x in given]
        insts.append(s_tir.schedule.Instruction(inst.kind, inputs, attrs, inst.outputs))
    if four_way != 2 or not seen_k:
        raise RuntimeError("dlight's MatmulTensorization trace no longer has the splits this retiling edits")
    return s_tir.Trace(insts, {})


def tensor_core(func, target: Target, key: str) -> Schedule:
    """The tensor-core schedule ``key`` of TENSOR_CORE_SCHEDULES (float16 operands, float32
    accumulation): a dlight rule that tensorizes the matmul with the named intrinsic, at the
    rule's block tile or at another one (its trace replayed with the tile's split factors)."""
    from tvm import s_tir
    import tvm.s_tir.schedule  # noqa: F401
    from tvm.s_tir.dlight.gpu import matmul as dlight_matmul
    (rule, intrinsic, tile), = [(r, i, t) for k, r, i, t in TENSOR_CORE_SCHEDULES if k == key]
    variant = {"generator": "dlight", "rules": [rule], "tensor_core": True, "intrinsic": intrinsic}
    if tile:
        variant["tile"] = dict(zip(("warps_m", "warps_n", "fragments_m", "fragments_n", "k_steps"), tile))
    blocker = tensorize_blocker()
    if blocker:
        return Schedule("dlight", key, variant, error=blocker)
    try:
        with target:
            sch = getattr(dlight_matmul, rule)().apply(func, target, False)
        if sch is None:
            return Schedule("dlight", key, variant, error=f"dlight's {rule} does not apply to {func.attrs['global_symbol']}")
        if tile:
            retiled = s_tir.Schedule(func, debug_mask="none")
            _retile(sch.trace, tile).apply_to_schedule(retiled, remove_postproc=False)
            sch = retiled
            variant["trace"] = str(sch.trace)
        return Schedule("dlight", key, variant, sch.mod)
    except Exception as exc:
        return Schedule("dlight", key, variant, error=f"{type(exc).__name__}: {exc}"[:4000])


def candidates(func, target: Target, base_seed: int, index: int, tensor_core_inputs: bool = False,
               spaces: Optional[DesignSpaces] = None) -> Schedule:
    """The ``index``-th candidate schedule: 0 is dlight, then MetaSchedule samples that
    cycle over the design spaces (``spaces``: generated once per workload and target)."""
    if index == 0:
        return dlight(func, target, tensor_core_inputs)
    return metaschedule(spaces or DesignSpaces(func, target), sample_seed(base_seed, index), index - 1)
