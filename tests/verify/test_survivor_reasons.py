"""Survivor reasons (CPU): the PTX proves a mutant equivalent where its changed result is
dead or a swapped subtraction is only squared; a dropped barrier after ``cp.async`` is an
observation ("race not observed (async copy)"), never a proof; otherwise the base's and the
mutant's site counts give an observation, labelled so. The PTX used assembles with ptxas."""
import pytest

from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
from ptx_tools import assemble
from ptx_tools.analysis.equivalence import OBSERVATION, PROOF, static_reason
from verify.probes.coverage import explain_survivors, probe_base

HEAD = [".version 8.0", ".target sm_80", ".address_size 64", "",
        ".visible .entry k(", "\t.param .u64 k_param_0", ")", "{",
        "\t.reg .pred %p<3>;", "\t.reg .b32 %r<9>;", "\t.reg .f32 %f<9>;", "\t.reg .b64 %rd<4>;",
        "\t.shared .align 16 .b8 smem[1024];", "",
        "\tld.param.u64 %rd1, [k_param_0];", "\tcvta.to.global.u64 %rd2, %rd1;",
        "\tmov.u32 %r1, %tid.x;", "\tshl.b32 %r2, %r1, 2;", "\tmov.u32 %r3, smem;", "\tadd.s32 %r4, %r3, %r2;",
        "\tmul.wide.u32 %rd3, %r2, 1;", "\tadd.s64 %rd3, %rd2, %rd3;", "\tld.global.f32 %f1, [%rd3];",
        "\tld.global.f32 %f2, [%rd3+4];"]
TAIL = ["\tst.global.f32 [%rd3], %f5;", "\tret;", "}", ""]


def _ptx(*body) -> str:
    return "\n".join(HEAD + list(body) + TAIL)


SQUARE = ["\tsub.f32 %f3, %f1, %f2;", "\tmul.f32 %f4, %f3, %f3;", "\tadd.f32 %f5, %f4, %f1;"]
SQUARE_SWAPPED = ["\tsub.f32 %f3, %f2, %f1;"] + SQUARE[1:]
DEAD = ["\tadd.s32 %r5, %r1, 7;", "\tadd.s32 %r5, %r1, 3;", "\tcvt.rn.f32.s32 %f3, %r5;", "\tadd.f32 %f5, %f3, %f1;"]
DEAD_CHANGED = ["\tadd.s32 %r5, %r1, 8;"] + DEAD[1:]
LIVE_CHANGED = ["\tadd.s32 %r5, %r1, 7;", "\tadd.s32 %r5, %r1, 4;"] + DEAD[2:]
ASYNC = ["\tcp.async.ca.shared.global [%r4], [%rd3], 4;", "\tcp.async.commit_group;", "\tcp.async.wait_group 0;",
         "\tbar.sync 0;", "\tld.shared.f32 %f3, [%r4+4];", "\tadd.f32 %f5, %f3, %f1;"]
PLAIN = ["\tst.shared.f32 [%r4], %f1;", "\tbar.sync 0;", "\tld.shared.f32 %f3, [%r4+4];", "\tadd.f32 %f5, %f3, %f1;"]


def _without_barrier(body):
    return [line for line in body if "bar.sync" not in line]


@pytest.mark.parametrize("body", [SQUARE, SQUARE_SWAPPED, DEAD, DEAD_CHANGED, LIVE_CHANGED, ASYNC, PLAIN])
def test_the_examples_assemble(body):
    assemble(_ptx(*body), "sm_80")


def test_a_swapped_subtraction_that_is_only_squared_is_proven_identical():
    reason = static_reason(_ptx(*SQUARE), _ptx(*SQUARE_SWAPPED), "swap_operands")
    assert reason.kind == PROOF and reason.reason == "sign_only" and "%f3" in reason.detail
    # through a masking select against zero, as Triton's layernorm computes (x - mean)^2
    masked = ["\tsetp.lt.s32 %p1, %r1, 5;", "\tsub.f32 %f3, %f1, %f2;", "\tselp.f32 %f6, %f3, 0f00000000, %p1;",
              "\tfma.rn.f32 %f5, %f6, %f6, %f1;"]
    swapped = masked[:1] + ["\tsub.f32 %f3, %f2, %f1;"] + masked[2:]
    assemble(_ptx(*swapped), "sm_80")
    reason = static_reason(_ptx(*masked), _ptx(*swapped), "swap_operands")
    assert reason is not None and reason.reason == "sign_only"
    # a select whose predicate is computed from the difference: the sign decides it, no proof
    decided = ["\tsub.f32 %f3, %f1, %f2;", "\tsetp.lt.f32 %p1, %f3, 0f00000000;",
               "\tselp.f32 %f6, %f3, 0f00000000, %p1;", "\tfma.rn.f32 %f5, %f6, %f6, %f1;"]
    assert static_reason(_ptx(*decided), _ptx(*(["\tsub.f32 %f3, %f2, %f1;"] + decided[1:])), "swap_operands") is None
    # the same swap with the difference also added in: no proof
    used = SQUARE[:2] + ["\tadd.f32 %f5, %f4, %f3;"]
    assert static_reason(_ptx(*used), _ptx(*(SQUARE_SWAPPED[:2] + used[2:])), "swap_operands") is None


def test_a_result_overwritten_before_any_read_is_dead():
    reason = static_reason(_ptx(*DEAD), _ptx(*DEAD_CHANGED), "off_by_one")
    assert reason.kind == PROOF and reason.reason == "dead_result" and "overwritten" in reason.detail
    assert static_reason(_ptx(*DEAD), _ptx(*LIVE_CHANGED), "off_by_one") is None  # the read value changed


def test_a_barrier_dropped_after_async_copies_is_only_an_observation():
    reason = static_reason(_ptx(*ASYNC), _ptx(*_without_barrier(ASYNC)), "drop_barrier")
    assert reason.kind == OBSERVATION and reason.detail.startswith("race not observed (async copy)")
    assert static_reason(_ptx(*PLAIN), _ptx(*_without_barrier(PLAIN)), "drop_barrier") is None


def _row(ptx: str, kernel_id: str, variant: dict, status: str = "passed", provenance=None) -> KernelRecord:
    problem = Problem("test/survivor", "x", [Buffer("x", "float32", (256,), role="inout")])
    launch = Launch("k", (1,), (64,), [Arg.buf("x")])
    return KernelRecord("test/survivor", "test", variant, kernel_id, "sm_80", ptx, [launch], problem,
                        kernel_id=kernel_id, status=status, provenance=provenance or {})


def test_survivors_get_a_reason_and_killed_mutants_none():
    base = _row(_ptx(*DEAD), "base", {"entry": "k"})
    counts = {"exercised": True, "counts": [64, 64], "base_counts": [64, 64]}
    same_count = _row(_ptx(*LIVE_CHANGED), "m-live", {"mutation": "off_by_one", "base": "base"},
                   provenance={"verify": {"coverage": counts}})
    changed_counts = _row(_ptx(*LIVE_CHANGED), "m-masked", {"mutation": "off_by_one", "base": "base"},
                          provenance={"verify": {"coverage": {**counts, "base_counts": [64, 0]}}})
    unknown = _row(_ptx(*LIVE_CHANGED), "m-unknown", {"mutation": "flip_comparison", "base": "base"},
                   provenance={"verify": {"coverage": {"exercised": True, "counts": [64], "base_reason": "x"}}})
    dead = _row(_ptx(*DEAD_CHANGED), "m-dead", {"mutation": "off_by_one", "base": "base"})
    killed = _row(_ptx(*DEAD_CHANGED), "m-killed", {"mutation": "off_by_one", "base": "base"}, "wrong_result")
    dropped = _row(_ptx(*_without_barrier(PLAIN)), "m-dropped", {"mutation": "drop_barrier", "base": "base"},
                   provenance={"verify": {"coverage": counts}})
    explain_survivors([base, same_count, changed_counts, unknown, dead, killed, dropped])
    survivor = lambda r: r.provenance.get("verify", {}).get("survivor")  # noqa: E731
    assert survivor(same_count) == {"kind": OBSERVATION, "reason": "same_trip_count", "detail": survivor(same_count)["detail"]}
    assert "[64, 64]" in survivor(same_count)["detail"] and "not proven" in survivor(same_count)["detail"]
    assert survivor(changed_counts)["reason"] == "masked_downstream"
    assert survivor(unknown)["reason"] == "passed_every_trial" and survivor(unknown)["kind"] == OBSERVATION
    assert survivor(dead)["kind"] == PROOF and survivor(dead)["reason"] == "dead_result"
    assert survivor(killed) is None and survivor(base) is None
    assert survivor(dropped)["reason"] == "race_not_observed" and survivor(dropped)["kind"] == OBSERVATION


def test_the_base_probe_counts_the_dropped_line_itself():
    base = _row(_ptx(*PLAIN), "base", {"entry": "k"})
    probed = probe_base(base, _ptx(*_without_barrier(PLAIN)))
    lines = probed.record.ptx.split("\n")
    site = next(i for i, line in enumerate(lines) if "add.u64 %ptxds_count" in line)
    assert lines[site + 1].strip() == "bar.sync 0;"
    assemble(probed.record.ptx, "sm_80")


def test_the_kill_rate_benchmark_prints_each_survivors_reason(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    from dataset_spec.store.shards import ShardWriter
    base = _row(_ptx(*DEAD), "base", {"entry": "k"})
    dead = _row(_ptx(*DEAD_CHANGED), "m-dead", {"mutation": "off_by_one", "base": "base"},
                provenance={"diff": "-\tadd.s32 %r5, %r1, 7;\n+\tadd.s32 %r5, %r1, 8;"})
    killed = _row(_ptx(*LIVE_CHANGED), "m-killed", {"mutation": "off_by_one", "base": "base"}, "wrong_result")
    explain_survivors([base, dead, killed])
    ShardWriter(tmp_path / "verified").write([base, dead, killed])
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "mutant_kill_rate.py"), str(tmp_path / "verified"),
                          "--work", str(tmp_path / "work")], capture_output=True, text=True, cwd=root, check=True).stdout
    assert "surviving mutant: test/survivor off_by_one m-dead" in out
    assert "reason: proof: dead_result: the changed instruction's result is unused" in out
    assert "| dead_result | proof | 1 |" in out and "m-killed" not in out.split("| mutation operator")[0]


def test_a_load_whose_result_is_unread_is_not_proven_equivalent():
    # its changed address is still read: it can fault or race, so no proof
    base = _ptx("\tld.global.f32 %f6, [%rd3+8];", "\tadd.f32 %f5, %f1, %f2;")
    moved = _ptx("\tld.global.f32 %f6, [%rd3+12];", "\tadd.f32 %f5, %f1, %f2;")
    assemble(moved, "sm_80")
    assert static_reason(base, moved, "off_by_one") is None
    assert static_reason(base, moved, "wrong_shared_offset") is None


def test_the_kill_rate_benchmark_tables_sources_and_lists_unexercised_mutants(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    from dataset_spec.store.shards import ShardWriter
    base = _row(_ptx(*DEAD), "base", {"entry": "k"})
    never = _row(_ptx(*LIVE_CHANGED), "m-never", {"mutation": "off_by_one", "base": "base"}, "unexercised",
                 provenance={"diff": "-\tadd.s32 %r5, %r1, 3;\n+\tadd.s32 %r5, %r1, 4;",
                             "excluded": [{"op": "swap_operands", "edit": "sub", "reason": "sign_only",
                                           "detail": "d"}]})
    never.status_message = "the change never took effect"
    killed = _row(_ptx(*DEAD_CHANGED), "m-killed", {"mutation": "drop_barrier", "base": "base"}, "race_detected",
                  provenance={"verify": {"delays": {"outcome": "race_detected", "nanoseconds": 4000}}})
    ShardWriter(tmp_path / "verified").write([base, never, killed])
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "mutant_kill_rate.py"), str(tmp_path / "verified"),
                          "--work", str(tmp_path / "work")], capture_output=True, text=True, cwd=root, check=True).stdout
    assert "unexercised mutant: test/survivor off_by_one m-never\n  note: the change never took effect" in out
    assert "| test/sm_80 | 2 | 1 | 0 | 1 | 0 | 100.0% | 1 / 1 |" in out  # the base's source and arch
    assert "| swap_operands mutant (redrawn) | sign_only | 1 |" in out
    assert "| drop_barrier | race_detected | 1 |" in out.split("| delay injection | outcome | mutants |")[1]


def test_rewrite_redraws_a_mutant_the_ptx_proves_equivalent(tmp_path):
    from dataset_spec.store.shards import ShardWriter, read_records
    from ptxds.finalize import finalize_record
    from ptxds.rewrite import rewrite_dataset
    # the only swap site is a difference that is only squared (sign_only): every swap is redrawn
    base = finalize_record(_row(_ptx(*SQUARE), "", {"entry": "k"}, status="built"))
    assert base.status == "built", base.status_message
    ShardWriter(tmp_path / "ds").write([base])
    summary = rewrite_dataset(tmp_path / "ds", rewrites=0, mutants=6, seed=3)
    mutants = [r for r in read_records(tmp_path / "ds") if r.variant.get("mutation")]
    assert summary.mutants_equivalent["swap_operands: sign_only"] >= 1
    assert mutants and not [r for r in mutants if r.variant["mutation"] == "swap_operands"]
    redrawn = [e for r in mutants for e in r.provenance.get("excluded", [])]
    assert redrawn and all(e["op"] == "swap_operands" and e["reason"] == "sign_only" for e in redrawn)


def test_two_mutant_slots_never_write_the_same_program(tmp_path):
    from dataset_spec.store.shards import ShardWriter, read_records
    from ptxds.finalize import finalize_record
    from ptxds.rewrite import rewrite_dataset
    # one barrier, one shared store and one load: few sites, so slots would repeat a mutant
    base = finalize_record(_row(_ptx(*PLAIN), "", {"entry": "k"}, status="built"))
    assert base.status == "built", base.status_message
    ShardWriter(tmp_path / "ds").write([base])
    rewrite_dataset(tmp_path / "ds", rewrites=0, mutants=12, seed=0)
    mutants = [r for r in read_records(tmp_path / "ds") if r.variant.get("mutation")]
    assert mutants and len({r.ptx for r in mutants}) == len(mutants) == len({r.kernel_id for r in mutants})
    assert sum(r.variant["mutation"] == "drop_barrier" for r in mutants) == 1  # one barrier, one mutant
    again = rewrite_dataset(tmp_path / "ds", rewrites=0, mutants=12, seed=0)
    assert again.mutants_written == 0  # a rerun adds nothing
