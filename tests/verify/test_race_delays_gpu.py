"""GPU test of delay injection end to end: in tests/data/race_handoff.cu warp 0 of each block
writes global memory, ``__syncthreads()``, and warp 1 reads it back into the output; warp 1
waits long enough that the barrier's removal goes unnoticed in the trials, and racecheck
cannot see global memory. Its ``drop_barrier`` mutant (the real operator) must come out of
``verify_dataset`` as ``race_detected`` through the delayed copies (warps of parity 0 late
before their stores), and the base ``passed``. Skipped without a CUDA driver."""
import random
from pathlib import Path

import pytest

from helpers import compiled_or_skip

pytestmark = pytest.mark.gpu

N = 64 * 200
SOURCE = (Path(__file__).parents[1] / "data" / "race_handoff.cu").read_text()


def _row(ptx: str, name: str = "handoff", kernel_id: str = "handoff-base", variant: dict = None):
    from dataset_spec.model import Arg, Buffer, Distribution, KernelRecord, Launch, Problem
    group = "test/delays/handoff"
    problem = Problem(group, "vector_add", [Buffer("x", "float32", (N,)), Buffer("y", "float32", (N,)),
                                            Buffer("out", "float32", (N,), role="out")])
    launch = Launch("handoff", (N // 64,), (64,), [Arg.buf("x"), Arg.buf("y"), Arg.buf("out"), Arg.buf("stage"),
                                                   Arg.scalar("s32", N)])
    stage = Buffer("stage", "float32", (N,), "scratch", Distribution("zeros"))
    return KernelRecord(group, "test", variant or {"entry": "handoff"}, name, "sm_80", ptx, [launch], problem,
                        scratch=[stage], kernel_id=kernel_id)


def test_a_dropped_barrier_that_ordered_global_memory_is_race_detected(tmp_path):
    import ptx_tools
    from dataset_spec.store.shards import ShardWriter, read_records
    from ptx_tools.rewrite import apply_mutation
    from ptxds.rewrite import context_for
    from verify import verify_dataset
    base = _row(ptx_tools.normalize_ptx(compiled_or_skip(SOURCE)))
    mutant_ptx, edit = apply_mutation(base.ptx, "drop_barrier", random.Random(7), context_for(base))
    assert "bar.sync" not in mutant_ptx and edit.op == "drop_barrier"
    mutant = _row(mutant_ptx, "handoff_no_barrier", "handoff-no-barrier",
                  {"mutation": "drop_barrier", "base": base.kernel_id, "name": "handoff_no_barrier"})
    ShardWriter(tmp_path / "in").write([base, mutant])
    verify_dataset(tmp_path / "in", tmp_path / "out", timing=False, kernel_timeout=60, progress=False)
    out = {r.kernel_id: r for r in read_records(tmp_path / "out")}
    base_out, mutant_out = out["handoff-base"], out["handoff-no-barrier"]
    assert base_out.status == "passed", base_out.status_message
    assert mutant_out.status == "race_detected", (mutant_out.status, mutant_out.status_message)
    assert "delays" not in base_out.provenance["verify"]
    if "delays" not in mutant_out.provenance["verify"]:
        # caught before the delays: its run beside the noise kernel, with half the SMs held,
        # already gave other bits than run 1 (the checks' own schedule perturbation)
        assert "differ bitwise between runs" in mutant_out.status_message, mutant_out.status_message
        return
    delays = mutant_out.provenance["verify"]["delays"]
    assert mutant_out.status_message.startswith("outputs ") and "warps of parity 0 were delayed" \
        in mutant_out.status_message, mutant_out.status_message
    assert delays["outcome"] == "race_detected" and delays["reason"] == "a drop_barrier mutant"
    assert delays["compared"] == "bitwise against the base's delayed outputs"
    assert delays["variants"][0]["result"] != "same"
