"""CPU tests of ``verify.probes.sanitize``: compute-sanitizer reports (samples of its log format in
tests/data/sanitizer) parsed into findings, findings into statuses, the racecheck group
rule, the buffer layout helpers, and the runner's use of them."""
import json
from pathlib import Path

import pytest

from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem, Resources
from verify.runner import apply_race_statuses, apply_sanitizer_status
from verify.probes.sanitize import (_judge_run, parse_report, race_errors, racing_members, sanitizer_status,
                             smallest_gap, spacer_bytes, uses_shared_memory)

SAMPLES = Path(__file__).parents[1] / "data" / "sanitizer"


def _report(name: str) -> dict:
    text = (SAMPLES / name).read_text()
    return _judge_run(parse_report(text), text, 0)


def _findings(memcheck=None, racecheck=None) -> dict:
    return {"tool": "compute-sanitizer", "memcheck": memcheck or _report("memcheck_clean.log"),
            "racecheck": racecheck or _report("racecheck_clean.log")}


def test_clean_reports_give_no_status():
    memcheck, racecheck = _report("memcheck_clean.log"), _report("racecheck_clean.log")
    assert memcheck["errors"] == 0 and "failed" not in memcheck and memcheck["min_gap_bytes"] == 1 << 20
    assert racecheck["errors"] == 0 and racecheck["warnings"] == 0
    assert sanitizer_status(_findings(memcheck, racecheck)) is None
    assert race_errors(_findings(memcheck, racecheck)) == 0


def test_invalid_read_past_the_end_is_out_of_bounds_read():
    memcheck = _report("memcheck_read_past_end.log")
    assert memcheck["errors"] == 203890
    assert (memcheck["invalid_reads"], memcheck["invalid_writes"], memcheck["api_errors"]) == (2, 0, 1)
    assert "2,048 bytes after the nearest allocation" in memcheck["first_invalid_read"]
    status, message = sanitizer_status(_findings(memcheck))
    assert status == "out_of_bounds_read"
    assert message.startswith("memcheck: 2 invalid reads") and "203890 errors" in message
    assert "Host Frame" not in message


def test_invalid_write_wins_over_invalid_read():
    memcheck = _report("memcheck_write_past_end.log")
    assert (memcheck["invalid_reads"], memcheck["invalid_writes"], memcheck["errors"]) == (1, 1, 3)
    status, message = sanitizer_status(_findings(memcheck))
    assert status == "out_of_bounds_write" and "Invalid __global__ write of size 16 bytes" in message


def test_misaligned_access_is_a_crash_not_out_of_bounds():
    memcheck = _report("memcheck_misaligned.log")
    assert (memcheck["invalid_reads"], memcheck["device_errors"]) == (0, 1)
    assert sanitizer_status(_findings(memcheck))[0] == "crashed"


def test_api_errors_alone_change_nothing():
    memcheck = _report("memcheck_api_error_only.log")
    assert memcheck["errors"] == 1 and memcheck["api_errors"] == 1 and "failed" not in memcheck
    assert sanitizer_status(_findings(memcheck)) is None


def test_a_member_that_never_ran_is_a_failed_run_not_a_clean_one():
    memcheck = _report("memcheck_member_never_ran.log")
    assert memcheck["errors"] is None and "did not run to its launch" in memcheck["failed"]
    assert "CUDA_ERROR_INVALID_PTX" in memcheck["failed"]
    assert sanitizer_status(_findings(memcheck)) is None
    no_summary = _judge_run(parse_report("Segmentation fault\n"), "Segmentation fault\n", 139)
    assert no_summary["errors"] is None and no_summary["failed"].startswith("no summary from the tool")
    assert sanitizer_status({"failed": "SanitizerMissing: not found"}) is None


def test_racecheck_errors_and_warnings():
    hazard, warning = _report("racecheck_hazard.log"), _report("racecheck_warning_only.log")
    assert (hazard["errors"], hazard["race_errors"]) == (1, 1) and "[6144 hazards]" in hazard["first"]
    assert race_errors(_findings(racecheck=hazard)) == 1
    assert (warning["errors"], warning["warnings"], warning["race_warnings"]) == (0, 1, 1)
    assert race_errors(_findings(racecheck=warning)) == 0  # warnings alone are recorded, not held against
    assert race_errors(_findings(racecheck={"errors": None, "failed": "timeout"})) is None


def test_race_counts_only_when_the_group_s_other_members_lack_it():
    racing = racing_members({"racy": 1, "clean_a": 0, "clean_b": 0, "unchecked": None})
    assert set(racing) == {"racy"} and "2 of the group's 2 other" in racing["racy"]
    # every checked member reports the hazard: the group's shared blind spot, not one member's race
    assert racing_members({"a": 3, "b": 1, "unchecked": None}) == {}
    assert set(racing_members({"a": 3, "b": 1, "c": 0})) == {"a", "b"}
    assert set(racing_members({"alone": 2})) == {"alone"}
    assert racing_members({"a": None, "b": None}) == {}


def _row(name: str, status: str = "passed", message: str = "") -> KernelRecord:
    problem = Problem("p", "vector_add", [Buffer("x", "float32", (4,)), Buffer("y", "float32", (4,)),
                                          Buffer("out", "float32", (4,), role="out")])
    launch = Launch("k", (1,), (4,), [Arg.buf("x"), Arg.buf("y"), Arg.buf("out")])
    row = KernelRecord("g", "test", {"v": name}, name, "sm_80", "// ptx", [launch], problem, build_key=name)
    row.status, row.status_message = status, message
    return row


def test_findings_set_the_row_status_and_keep_what_the_checks_said():
    row = _row("a", "passed", "reruns differ bitwise")
    apply_sanitizer_status(row, sanitizer_status(_findings(_report("memcheck_read_past_end.log"))))
    assert row.status == "out_of_bounds_read"
    assert "the checks said passed: reruns differ bitwise" in row.status_message
    kept = _row("b", "modified_input")
    apply_sanitizer_status(kept, sanitizer_status(_findings(_report("memcheck_write_past_end.log"))))
    assert kept.status == "modified_input"
    rows = [_row("racy"), _row("clean"), _row("wrong", "wrong_result")]
    results = {r.build_key: r.status for r in rows}
    apply_race_statuses(rows, results, racing_members({"racy": 1, "clean": 0, "wrong": 0}))
    assert [r.status for r in rows] == ["race_detected", "passed", "wrong_result"]
    assert results["racy"] == "race_detected" and "racecheck: 1 shared-memory hazard" in rows[0].status_message


def test_racecheck_runs_only_where_shared_memory_is_used():
    row = _row("a")
    assert uses_shared_memory(row)  # resources unknown: check
    row.resources = [Resources("k", registers=8, shared_static=0)]
    assert not uses_shared_memory(row)
    row.launches[0].dynamic_smem = 1024
    assert uses_shared_memory(row)
    row.launches[0].dynamic_smem = 0
    row.resources = [Resources("k", shared_static=2048)]
    assert uses_shared_memory(row)


SHARED_PTX = """
.version 8.0
.target sm_80
.address_size 64
.shared .align 4 .b8 slot[1024];
.visible .entry k(.param .u64 p) { ret; }
.visible .entry k_shared(.param .u64 p) { .reg .b32 %r<2>; ld.shared.u32 %r1, [slot]; ret; }
.visible .entry k_names(.param .u64 p) { .reg .b64 %rd<2>; mov.u64 %rd1, slot; ret; }
"""


def test_without_resources_the_launched_entries_ptx_says_whether_shared_memory_is_used():
    # a row built without resources (a hand-made manifest): an entry that neither declares
    # nor names shared memory is not race-checked, though another entry of its module is
    row = _row("a")
    row.ptx = SHARED_PTX
    assert not uses_shared_memory(row)
    for entry in ("k_shared", "k_names"):
        row.launches[0].entry = entry
        assert uses_shared_memory(row), entry
    row.launches[0].entry = "missing"
    assert uses_shared_memory(row)  # not in the module: unknown, so checked


def test_spacers_and_gaps():
    assert spacer_bytes([16]) == 1 << 20
    assert spacer_bytes([3 << 20, 16]) == 3 << 20
    assert spacer_bytes([1 << 40]) == 256 << 20
    assert smallest_gap([(0, 100), (1100, 1200), (200, 300)]) == 100
    assert smallest_gap([(0, 100)]) is None


def test_sanitizer_column_stays_readable_by_the_mutant_labels():
    from dataset_spec.labels import mutant_killed, race_hazards
    column = json.dumps(_findings(racecheck=_report("racecheck_hazard.log")), sort_keys=True)
    clean = json.dumps(_findings(), sort_keys=True)
    assert race_hazards(column) == 1 and race_hazards(clean) == 0
    assert mutant_killed("passed", column, clean) and mutant_killed("race_detected", clean, clean)


def test_card_explains_the_racecheck_policy_and_says_what_ran(tmp_path):
    from dataset_spec.store.card import write_card
    from dataset_spec.store.shards import ShardWriter
    plain, checked = _row("plain"), _row("checked")
    plain.status = checked.status = "passed"
    checked.sanitizer = json.dumps(_findings(racecheck=_report("racecheck_hazard.log")))
    ShardWriter(tmp_path / "one").write([plain])
    card = write_card(tmp_path / "one").read_text()
    assert "Every passing member that uses shared memory runs once under compute-sanitizer racecheck" in card
    assert "no row ran under compute-sanitizer" in card
    ShardWriter(tmp_path / "two").write([plain, checked])
    card = write_card(tmp_path / "two").read_text()
    assert "1 row(s) ran under compute-sanitizer: 1 under racecheck" in card and "1 under memcheck" in card
    raced_only = _row("raced")
    raced_only.status = "passed"
    raced_only.sanitizer = json.dumps({"tool": "compute-sanitizer", "racecheck": _report("racecheck_clean.log")})
    ShardWriter(tmp_path / "three").write([raced_only])
    card = write_card(tmp_path / "three").read_text()
    assert "1 row(s) ran under compute-sanitizer: 1 under racecheck" in card and "0 under memcheck" in card


def _member_segment(index: int, sample: str, finished: bool = True) -> str:
    """One member's share of the racecheck process's output: its start mark, then a sample
    log's lines (without its done line when the member stopped the process)."""
    out = [f"ptxds-racecheck-member {index}"]
    for line in (SAMPLES / sample).read_text().splitlines():
        if "COMPUTE-SANITIZER" in line or "SUMMARY" in line:
            continue
        if line.startswith('{"ran": true') and not finished:
            continue
        out.append(line)
    return "\n".join(out)


def test_each_member_s_share_of_the_output_gives_its_own_hazards():
    from verify.probes.sanitize import member_report
    reports = [member_report(_member_segment(i, sample), "") for i, sample in
               enumerate(("racecheck_clean.log", "racecheck_hazard.log", "racecheck_clean.log"))]
    assert [r["errors"] for r in reports] == [0, 1, 0], reports
    assert "rmsnorm_no_sync" in reports[1]["first_race_error"]
    assert race_errors({"racecheck": reports[0]}) == 0 and race_errors({"racecheck": reports[1]}) == 1


def test_a_member_that_stops_the_process_fails_with_its_last_words():
    from verify.probes.sanitize import member_report
    segment = _member_segment(1, "racecheck_hazard.log", finished=False) + \
        "\nCUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
    report = member_report(segment, "exit code 1")
    assert report["errors"] is None and race_errors({"racecheck": report}) is None
    assert "did not finish under racecheck (exit code 1)" in report["failed"]
    assert "illegal memory access" in report["failed"]
    # a member that printed nothing but its mark is not named by it
    assert member_report("ptxds-racecheck-member 3", "exit code 1")["failed"].endswith("no message")


def test_racecheck_runs_small_grids_whole_and_the_first_blocks_of_large_ones():
    from verify.probes.sanitize import RACECHECK_FEW_BLOCKS, racecheck_grid
    assert racecheck_grid((16, 16, 1)) == (16, 16, 1)          # 256 blocks: the whole grid
    assert racecheck_grid((32, 32, 1)) == (8, 1, 1)
    assert racecheck_grid((1, 1, 4096)) == (1, 1, 8)           # a long z: its first slices
    assert racecheck_grid((3, 200, 5)) == (3, 2, 1)
    assert racecheck_grid((132, 2, 1), cluster=(2, 1, 1)) == (8, 1, 1)
    assert racecheck_grid((1024, 1, 1), cluster=(16, 1, 1)) == (16, 1, 1)  # never less than a cluster
    for grid in [(1000, 7, 3), (5, 5, 50), (257, 1, 1)]:
        cut = racecheck_grid(grid)
        assert cut[0] * cut[1] * cut[2] <= RACECHECK_FEW_BLOCKS and all(1 <= c <= g for c, g in zip(cut, grid))


def test_racecheck_record_cuts_only_large_launches():
    from dataset_spec.model import Arg, Launch
    from verify.probes.sanitize import racecheck_record
    row = _row("two-launches")
    row.launches = [Launch("vadd", (4096,), (256,), [Arg.buf("x")]), Launch("vadd", (4,), (256,), [Arg.buf("x")])]
    record, cut = racecheck_record(row)
    assert cut and [l.grid for l in record.launches] == [(8, 1, 1), (4, 1, 1)]
    assert [l.grid for l in row.launches] == [(4096, 1, 1), (4, 1, 1)]  # the row itself is unchanged
    row.launches = row.launches[1:]
    assert racecheck_record(row)[1] is False
