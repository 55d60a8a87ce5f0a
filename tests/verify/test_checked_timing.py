"""Verifier v4 on the CPU: the work floor of each op, the roofline verdict, which trials are
timed, times dropped from failed rows, float atomics counted only in launched entries, the
new diagnoses' statuses, and the timing and residency kernels assembling as written."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dataset_spec.model import Buffer, KernelRecord, Launch, Problem
from dataset_spec.ops import get_op
from dataset_spec.work import problem_work
from verify.timing.checked_timing import CHECKSUM_PTX, within_tolerance
from verify.judge.outcome import CheckResult, OutputSpec, TrialRun, classify, float_atomics
from verify.device.residency import holder_ptx
from verify.timing.roofline import judge, peaks
from verify.runner import TIMING_COLUMNS, apply_roofline, drop_unearned_times, timing_trials

H100 = {"name": "NVIDIA H100 80GB HBM3", "cc": (9, 0), "sm_count": 132, "max_clock_mhz": 1980,
        "l2_bytes": 50 * 2 ** 20, "memory_clock_khz": 2619000, "memory_bus_bits": 5120}


def gemm_problem(m=1024, n=1024, k=1024, dtype="float16", beta=0.0, alpha=1.0) -> Problem:
    buffers = [Buffer("A", dtype, (m, k), "in"), Buffer("B", dtype, (k, n), "in"),
               Buffer("C", dtype, (m, n), "in"), Buffer("D", dtype, (m, n), "out")]
    return Problem("g", "gemm", buffers, params={"M": m, "N": n, "K": k, "alpha": alpha, "beta": beta,
                                                 "layout_a": "row", "layout_b": "row", "layout_c": "row"})


def test_gemm_work_counts_operands_flops_and_c_only_when_read():
    op = get_op("gemm")
    work = problem_work(gemm_problem(beta=0.0), op.reduction_length)
    assert work.read_bytes == 2 * 1024 * 1024 * 2          # A and B; C unread at beta = 0
    assert work.write_bytes == 1024 * 1024 * 2
    assert work.flops == 2 * 1024 ** 3 and work.math_dtypes == ("float16",)
    with_c = problem_work(gemm_problem(beta=0.5), op.reduction_length)
    assert with_c.read_bytes == 3 * 1024 * 1024 * 2
    no_product = problem_work(gemm_problem(alpha=0.0, beta=1.0), op.reduction_length)
    assert no_product.flops == 0 and no_product.read_bytes == 1024 * 1024 * 2
    # writes that fit in L2 need not reach memory within the kernel's span
    assert work.dram_bytes(50 * 2 ** 20) == work.read_bytes
    assert work.dram_bytes(2 ** 20) == work.read_bytes + work.write_bytes - 2 ** 20


def test_custom_ops_floor_counts_no_input():
    problem = Problem("c", "custom", [Buffer("x", "float32", (1 << 20,), "in"), Buffer("y", "float32", (1 << 20,), "out")],
                      params={"module": "m", "function": "f"})
    assert problem_work(problem).read_bytes == 0


def test_h100_peaks_from_the_table_and_from_clock_and_bus():
    found = peaks(H100)
    assert found.bandwidth == 3.35e12 and found.bandwidth_source == "table"
    unnamed = peaks({**H100, "name": "Some future GPU"})
    assert unnamed.bandwidth == pytest.approx(3.352e12, rel=1e-3) and unnamed.bandwidth_source == "clock x bus"
    # fp16 dense tensor peak: 4096 flops/clock/SM at the maximum clock, above the vendor's 989 TFLOPS
    assert found.rates["fp16"] == pytest.approx(132 * 1.98e9 * 4096)
    assert found.rates["fp16"] >= 989e12


def test_a_time_below_the_floor_fails_and_one_above_gets_its_ratio():
    work = problem_work(gemm_problem(4096, 4096, 4096), get_op("gemm").reduction_length)
    floor_us = 2 * 4096 ** 3 / (132 * 1.98e9 * 4096) * 1e6   # compute-bound: about 128 us
    honest = judge(work, 2 * floor_us, 0.01 * floor_us, H100)
    assert honest.bound == "compute" and not honest.too_fast
    assert honest.floor_us == pytest.approx(floor_us) and honest.sol_ratio == pytest.approx(0.5)
    # a memoised copy of D (a few us) is far below it
    assert judge(work, 5.0, 0.05, H100).too_fast
    # within the tolerance (5% plus the relative IQR) is noise, not a failure
    assert not judge(work, floor_us * 0.97, 0.0, H100).too_fast
    assert judge(work, floor_us * 0.90, 0.0, H100).too_fast


def test_memory_bound_floor_of_a_vector_add():
    n = 1 << 26
    problem = Problem("v", "vector_add", [Buffer("x", "float32", (n,), "in"), Buffer("y", "float32", (n,), "in"),
                                          Buffer("out", "float32", (n,), "out")])
    work = problem_work(problem, get_op("vector_add").reduction_length)
    verdict = judge(work, 300.0, 1.0, H100)
    expected = (8 * n + 4 * n - 50 * 2 ** 20) / 3.35e12 * 1e6
    assert verdict.bound == "memory" and verdict.floor_us == pytest.approx(expected)
    assert judge(work, expected * 0.5, 0.0, H100).too_fast


def _row(problem, status="passed", time_us=100.0) -> KernelRecord:
    row = KernelRecord(kernel_id="k", group_id="g", source="ptx", variant={}, name="k", arch="sm_90a",
                       ptx=".version 8.0\n.target sm_90a\n.address_size 64\n", launches=[], problem=problem,
                       status=status, time_us_median=time_us, time_us_iqr=1.0)
    return row


def test_apply_roofline_fails_a_row_faster_than_the_floor():
    row = _row(gemm_problem(4096, 4096, 4096), time_us=3.0)
    apply_roofline(row, H100)
    assert row.status == "faster_than_roofline" and "roofline floor" in row.status_message
    drop_unearned_times([row])
    assert all(getattr(row, name) is None for name in TIMING_COLUMNS)
    assert row.provenance["verify"]["dropped_time_us"] == 3.0
    honest = _row(gemm_problem(4096, 4096, 4096), time_us=400.0)
    apply_roofline(honest, H100)
    assert honest.status == "passed" and 0 < honest.sol_ratio < 1 and honest.roofline_us > 0
    drop_unearned_times([honest])
    assert honest.time_us_median == 400.0


def test_failed_rows_keep_no_time():
    rows = [_row(gemm_problem(), status) for status in ("passed", "unexercised", "disagrees", "race_detected",
                                                         "timing_mismatch")]
    drop_unearned_times(rows)
    assert [r.time_us_median is not None for r in rows] == [True, True, False, False, False]


class _Trial:
    def __init__(self, trial, kind):
        self.trial, self.kind = trial, kind


def test_timing_uses_the_ordinary_trials_never_stress():
    trials = [_Trial(0, "stress"), _Trial(1, "edge"), _Trial(2, "uniform"), _Trial(3, "normal"), _Trial(4, "wide")]
    assert [t.kind for t in timing_trials(trials)] == ["normal", "uniform"]
    assert [t.kind for t in timing_trials([_Trial(0, "stress"), _Trial(1, "normal")])] == ["normal"]
    assert [t.kind for t in timing_trials([_Trial(0, "stress")])] == ["stress"]


ATOMIC_IN_UNLAUNCHED = """
.version 8.0
.target sm_90a
.address_size 64
.func helper(.param .u64 p)
{
    .reg .b64 %rd<2>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [p];
    red.global.add.f32 [%rd1], %f1;
    ret;
}
.visible .entry racy(.param .u64 out)
{
    .reg .b64 %rd<2>;
    ret;
}
.visible .entry splitk(.param .u64 out)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    {
    .param .b64 param0;
    st.param.b64 [param0], %rd1;
    call.uni helper, (param0);
    }
    ret;
}
"""


def test_float_atomics_count_only_in_the_entries_launched():
    assert float_atomics(ATOMIC_IN_UNLAUNCHED)
    assert not float_atomics(ATOMIC_IN_UNLAUNCHED, ["racy"])
    # reached through a call from a launched entry
    assert float_atomics(ATOMIC_IN_UNLAUNCHED, ["splitk"])
    assert float_atomics(ATOMIC_IN_UNLAUNCHED, ["racy", "splitk"])


def _refs():
    return [{"out": np.linspace(-1, 1, 64)}]


def _specs():
    return [OutputSpec("out", "float32", bounds=[np.full(64, 1e-6)], agreement_bounds=[np.full(64, 1e-6)])]


def test_a_stall_under_held_sms_and_a_stale_binding_get_their_statuses():
    out = {"out": _refs()[0]["out"].astype(np.float32)}
    stalled = classify(CheckResult([TrialRun(0, out, stalled="did not finish")]), _specs(), _refs())
    assert stalled.status == "residency_deadlock"
    stale = classify(CheckResult([TrialRun(0, out, varies_with="binding", variation="fresh pages")], float_atomics=True),
                     _specs(), _refs())
    # float atomics excuse a schedule, never a binding
    assert stale.status == "stale_binding"


def test_tolerance_compare_of_rows_with_float_atomics():
    checked = np.linspace(-4, 4, 1000).astype(np.float32)
    assert within_tolerance(checked + np.float32(1e-4), checked, "float32", (1000,)) == ""
    skipped = checked.copy()
    skipped[::7] = 0
    assert "differ" in within_tolerance(skipped, checked, "float32", (1000,))
    nan = checked.copy()
    nan[3] = np.nan
    assert within_tolerance(nan, checked, "float32", (1000,)) != ""
    assert within_tolerance(np.arange(5, dtype=np.int32), np.arange(5, dtype=np.int32), "int32", (5,)) == ""


def _ptxas() -> str:
    found = shutil.which("ptxas")
    if found:
        return found
    try:
        import nvidia.cu13 as cu13  # the pinned CUDA wheel's tools
        candidate = Path(list(cu13.__path__)[0]) / "bin" / "ptxas"
        return str(candidate) if candidate.exists() else ""
    except ImportError:
        return ""


@pytest.mark.parametrize("name,text,registers", [("checksum", CHECKSUM_PTX, None), ("holder", holder_ptx(), 64)])
def test_the_verifiers_own_kernels_assemble(tmp_path, name, text, registers):
    ptxas = _ptxas()
    if not ptxas:
        pytest.skip("ptxas not installed")
    source = tmp_path / f"{name}.ptx"
    source.write_text(text)
    done = subprocess.run([ptxas, "-arch=sm_90", "-v", str(source), "-o", str(tmp_path / f"{name}.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    if registers is not None:
        # the holder must fill an SM's register file: 1024 threads x 64 registers
        assert f"Used {registers} registers" in done.stderr


@pytest.mark.parametrize("line,width", [
    ("st.global.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};", 16),
    ("st.global.b16 [%rd1], %rs1;", 2),
    ("st.v2.u64 [%rd1], {%rd2, %rd3};", 16),
    ("st.shared.v4.f32 [%r1], {%f1, %f2, %f3, %f4};", 0),
    ("red.global.add.f32 [%rd1], %f1;", 4),
    ("atom.global.add.noftz.bf16x2 %r1, [%rd1], %r2;", 4),
    ("cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 256;", 16),
    ("ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];", 0),
])
def test_widest_global_store(line, width):
    from verify.judge.outcome import widest_global_store
    assert widest_global_store(f"    {line}\n") == width


def test_only_written_buffers_a_store_could_straddle_get_memcheck():
    from verify.runner import tail_buffers
    problem = Problem("t", "vector_add", [Buffer("x", "float32", (1151,), "in"), Buffer("y", "float32", (1151,), "in"),
                                          Buffer("out", "float32", (1151,), "out")])
    scalar = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n st.global.f32 [%rd1], %f1;\n ret;\n}\n"
    row = KernelRecord(kernel_id="k", group_id="g", source="ptx", variant={}, name="k", arch="sm_90", ptx=scalar,
                       launches=[Launch("k", (1,), (32,), [])], problem=problem)
    assert tail_buffers(row) == []  # 4604 bytes: no 4-byte store can cross the end
    row.ptx = scalar.replace("st.global.f32 [%rd1], %f1;", "st.global.v4.f32 [%rd1], {%f1, %f1, %f1, %f1};")
    assert tail_buffers(row) == ["out"]  # a 16-byte store can; inputs are fenced read-only


def test_sparse_operands_claim_no_flops():
    problem = gemm_problem()
    problem.params["operand_density"] = 0.2
    assert problem_work(problem, get_op("gemm").reduction_length).flops == 0
