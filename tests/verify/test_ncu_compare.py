"""benchmarks/ncu_compare.py's pure parts: the L2-flush mode's kernel bookkeeping, ncu's fixed
per-launch cost c from the calibration rows, the c-corrected ratios and the summary tables;
and (GPU) the driver's L2-flush mode writing the manifest ncu's kernels are split by."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import ncu_compare as nc
from verify.device.kernel_clock import HOLD_KERNEL_NAME

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "ncu_compare.py"

# The start of a real ncu log (ncu 2025.3.1, H100; --csv --page raw --print-units base, mode
# l2 on the calibration set, run 29), reduced to a few of its ~300 columns: the driver's
# flush-only range (IDs 0-1: two flushes, whose read-back kernel ncu profiles), then the
# first row's three repeats, each after a flush.
NCU_L2_REAL = """==WARNING== Note: Running with uncontrolled GPU caches. Profiling results may be inconsistent.
==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, profiling results may be inconsistent.
==PROF== Connected to process 5813 (/usr/bin/python3.12)
==PROF== Disconnected from process 5813
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.avg","gpu__time_duration.sum","launch__grid_size","profiler__replayer_passes"
"","","","","","","","","","","","ns","ns","","pass"
"0","5813","python3.12","127.0.0.1","ptxds_flush_read","1","13","(512, 1, 1)","(528, 1, 1)","0","9.0","43,616","43,616","528","1"
"1","5813","python3.12","127.0.0.1","ptxds_flush_read","1","13","(512, 1, 1)","(528, 1, 1)","0","9.0","43,648","43,648","528","1"
"2","5813","python3.12","127.0.0.1","ptxds_flush_read","1","13","(512, 1, 1)","(528, 1, 1)","0","9.0","43,136","43,136","528","1"
"3","5813","python3.12","127.0.0.1","spin_add","1","13","(256, 1, 1)","(132, 1, 1)","0","9.0","4,864","4,864","132","1"
"4","5813","python3.12","127.0.0.1","ptxds_flush_read","1","13","(512, 1, 1)","(528, 1, 1)","0","9.0","43,392","43,392","528","1"
"5","5813","python3.12","127.0.0.1","spin_add","1","13","(256, 1, 1)","(132, 1, 1)","0","9.0","4,800","4,800","132","1"
"6","5813","python3.12","127.0.0.1","ptxds_flush_read","1","13","(512, 1, 1)","(528, 1, 1)","0","9.0","42,976","42,976","528","1"
"7","5813","python3.12","127.0.0.1","spin_add","1","13","(256, 1, 1)","(132, 1, 1)","0","9.0","4,768","4,768","132","1"
"""

PROBE = {"key": nc.FLUSH_PROBE_KEY, "entries": [], "repeats": nc.FLUSH_PROBES, "profiled": True,
         "flush_probe": True, "error": ""}
ROWS = [{"key": "spin_2us", "entries": ["spin_add"], "repeats": 3, "profiled": True, "error": ""}]


def test_flush_kernels_are_named_by_the_flush_only_range_and_left_out():
    kernels = nc.parse_ncu_csv(NCU_L2_REAL)
    assert len(kernels) == 8 and kernels[0] == ("ptxds_flush_read", pytest.approx(43.616))
    names = nc.flush_kernel_names(kernels, [PROBE] + ROWS)
    assert names == {"ptxds_flush_read"}
    times, wrong = nc.ncu_row_times(kernels, [PROBE] + ROWS, names)
    assert times == {"spin_2us": pytest.approx([4.864, 4.800, 4.768])} and wrong == 0
    assert nc.FLUSH_PROBE_KEY not in times
    # without dropping them the flush's kernels break the count, so a wrong split cannot pass
    with pytest.raises(ValueError, match="profiled 8 kernels"):
        nc.ncu_row_times(kernels, [PROBE] + ROWS)


def test_no_flush_kernels_when_ncu_profiles_none_or_there_is_no_flush_range():
    kernels = nc.parse_ncu_csv(NCU_L2_REAL)
    members_only = [k for k in kernels if k[0] != "ptxds_flush_read"]  # the write-only flush: a memset
    assert nc.flush_kernel_names(members_only, [PROBE] + ROWS) == set()
    times, _ = nc.ncu_row_times(members_only, [PROBE] + ROWS, set())
    assert times["spin_2us"] == pytest.approx([4.864, 4.800, 4.768])
    # mode all has no flush-only range: a stray leading kernel is a mismatch, never dropped
    assert nc.flush_kernel_names(kernels, ROWS) == set()
    with pytest.raises(ValueError):
        nc.ncu_row_times(kernels, ROWS, nc.flush_kernel_names(kernels, ROWS))
    # the hold kernel is filtered as always and is never taken for the flush
    with_hold = [(HOLD_KERNEL_NAME, 1e6)] + members_only
    assert nc.flush_kernel_names(with_hold, [PROBE] + ROWS) == set()
    assert nc.ncu_row_times(with_hold, [PROBE] + ROWS, set())[0] == times


def _result(name, ours, ncu, launches=1, group="g"):
    return {"name": name, "group": group, "launches": launches, "ours_us": ours, "ncu_us": ncu}


# Run 13's calibration (H100, cache control all): kernels spinning S us, CUPTI and ncu.
CALIBRATION = [_result(f"spin_{s}us", ours, ncu) for s, ours, ncu in
               [(2, 3.74, 4.80), (5, 6.75, 8.03), (10, 11.71, 13.02), (20, 21.73, 23.01),
                (50, 51.75, 52.90), (100, 101.73, 102.91)]]


def test_fixed_cost_is_the_median_gap_per_launch():
    # gaps 1.06, 1.28, 1.31, 1.28, 1.15, 1.18 -> median of the middle two (1.18, 1.28)
    assert nc.fixed_cost_us(CALIBRATION) == pytest.approx(1.23)
    two_launches = [_result("seq", 20.0, 22.6, launches=2), _result("one", 10.0, 11.2)]
    assert nc.fixed_cost_us(two_launches) == pytest.approx((1.3 + 1.2) / 2)
    with pytest.raises(ValueError, match="no calibration rows"):
        nc.fixed_cost_us([])


def test_corrected_takes_c_per_launch_off_ncu_and_drops_what_is_left_empty():
    rows = [_result("a", 8.8, 10.0), _result("b", 17.6, 20.0, launches=2), _result("tiny", 0.5, 1.0)]
    fixed = nc.corrected(rows, 1.2)
    assert [r["name"] for r in fixed] == ["a", "b"]
    assert [r["ncu_us"] for r in fixed] == pytest.approx([8.8, 17.6])
    assert rows[0]["ncu_us"] == 10.0  # the raw results are left as they were
    assert nc.corrected(rows, 0.0) == rows


def test_summary_of_corrected_ratios_meets_the_goal_the_raw_ones_miss():
    rows = [_result("k5", 5.5, 6.7), _result("k10", 10.4, 11.6), _result("k20", 20.3, 21.5),
            _result("k40", 40.2, 41.4)]
    raw = {label.split(" (")[0]: (value, met) for label, value, met in nc.summary_lines(rows, {})}
    assert raw["median ours/ncu"][1] is False            # 0.897, 0.943 -> 0.920
    assert raw["median ncu - ours"][0] == "+1.20"
    assert raw["worst ours/ncu - 1, kernels >= 5 us"] == ("-0.179 (k5, n=4, 2 within)", False)
    fixed = {label.split(" (goal")[0]: (value, met)
             for label, value, met in nc.summary_lines(nc.corrected(rows, 1.2), {}, reference="ncu-c")}
    assert fixed["median ours/ncu-c"] == ("1.000 (range 1.000-1.000, n=4)", True)
    assert fixed["worst ours/ncu-c - 1, kernels >= 5 us"][1] is True
    assert fixed["Spearman rho with ncu-c inside groups"][1] is True


def test_mode_line_and_its_table_row():
    rows = [_result("k3", 3.0, 4.2), _result("k10", 10.0, 11.2), _result("k20", 21.0, 22.2)]
    line = nc.mode_line(rows, 1.2)
    assert line["rows"] == 3 and line["c_us"] == 1.2
    assert line["raw"]["median"] == pytest.approx(10.0 / 11.2)
    assert line["raw"]["within"] == (1, 2)              # 11.2 us row is -0.107, 22.2 us row -0.054
    assert line["raw"]["worst"] == pytest.approx(10.0 / 11.2 - 1)
    assert line["corrected"]["median"] == pytest.approx(1.0)
    assert line["corrected"]["within"] == (2, 2)        # the 3 us row is under 5 us either way
    assert line["spearman_min"] == pytest.approx(1.0)
    assert nc.format_mode_line("cal", "l2", line) == \
        "| cal | l2 | 3 | 1.20 | 0.893 | 1/2 | -0.107 | 1.000 | 2/2 | +0.000 | 1.000 |"
    assert nc.MODE_TABLE_HEADER.splitlines()[0].count("|") == nc.format_mode_line("cal", "l2", line).count("|")
    uncorrected = nc.mode_line(rows, None)
    assert uncorrected["corrected"] is None
    assert nc.format_mode_line("d", "all", uncorrected).endswith("| - | - | - | 1.000 |")


def test_cache_modes_are_checked():
    assert nc.parse_modes("all,l2") == ["all", "l2"]
    assert nc.parse_modes(" l2 , all , l2") == ["l2", "all"]
    assert {nc.NCU_CACHE_CONTROL[m] for m in nc.CACHE_MODES} == {"all", "none"}
    with pytest.raises(ValueError, match="unknown cache mode 'l1'"):
        nc.parse_modes("all,l1")
    with pytest.raises(ValueError, match="unknown cache mode"):
        nc.parse_modes(",")


def test_rows_are_selected_by_group_pattern_whole_groups_first():
    from dataset_spec.model import Buffer, KernelRecord, Launch, Problem
    problem = Problem("p", "vector_add", [Buffer("x", "float32", [4]), Buffer("out", "float32", [4], "out")])

    def row(group, name, status="passed", t=5.0):
        return KernelRecord(group_id=group, source="test", variant={}, name=name, arch="sm_90a", ptx="",
                            launches=[Launch(name, 1, 32, [])], problem=problem, status=status,
                            time_us_median=t if status == "passed" else None)

    rows = [row("gemm/M16", "a"), row("gemm/M16", "b"), row("gemm/M4096", "c"), row("gemm/M4096", "d", "wrong_result"),
            row("softmax/M16", "e")]
    assert [r.name for r in nc.select_rows(rows, 10, "gemm/*")] == ["a", "b", "c"]
    assert [r.name for r in nc.select_rows(rows, 2)] == ["a", "b"]        # whole groups until max_rows
    assert [r.name for r in nc.select_rows(rows, 1, "softmax/*")] == ["e"]
    assert nc.select_rows(rows, 10, "attention/*") == []


def test_bad_cache_mode_and_two_sources_of_c_are_refused_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "--cache-control", "all,warm"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown cache mode 'warm'" in done.stderr
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "--calibration", str(tmp_path),
                           "--fixed-cost-us", "1.2"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "not both" in done.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["l2", "l2write"])
def test_driver_flushes_l2_and_records_the_flush_only_range_first(tmp_path, mode):
    """The driver in mode l2 or l2write (no ncu: the profiler calls do nothing) runs a row
    with verify's flush (or its write alone) before each run and lists the flush-only range
    ahead of the rows."""
    from test_timing import SPIN_NS, SPIN_PTX
    from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
    from dataset_spec.store.shards import ShardWriter
    problem = Problem("spin", "vector_add", [Buffer("x", "float32", (256,)), Buffer("y", "float32", (256,)),
                                             Buffer("out", "float32", (256,), role="out")])
    launch = Launch("ptxds_test_spin", (1,), (32,), [Arg.scalar("u64", SPIN_NS)])
    ShardWriter(tmp_path / "ds").write([KernelRecord("spin", "test", {}, "spin", "sm_70", SPIN_PTX, [launch],
                                                     problem, build_key="spin-once", status="passed")])
    keys, manifest = tmp_path / "keys.json", tmp_path / "manifest.json"
    keys.write_text(json.dumps(["spin-once"]))
    done = subprocess.run([sys.executable, str(SCRIPT), "--driver", str(tmp_path / "ds"), "--driver-keys", str(keys),
                           "--driver-manifest", str(manifest), "--driver-flush", mode, "--repeats", "2",
                           "--warmup", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    entries = json.loads(manifest.read_text())
    assert entries[0]["flush_probe"] and entries[0]["key"] == nc.FLUSH_PROBE_KEY
    assert entries[1]["key"] == "spin-once" and entries[1]["profiled"] and not entries[1]["error"], entries
