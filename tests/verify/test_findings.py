"""A row's findings (verify/judge/findings.py): every check's outcome is kept in the ``findings``
column, one function derives ``status`` and ``status_message`` from them in the order the
checks ran, a status that lost survives as a finding, a new check is one line in
``OVERRULES``, and ``unverified`` is the one way back to a built row."""
import pyarrow as pa
import pytest

from dataset_spec.model import SCHEMA_VERSION, VERIFIER_COLUMNS, Arg, Buffer, KernelRecord, Launch, Problem, unverified
from dataset_spec.schema import KERNELS_SCHEMA, record_to_row, row_to_record
from verify.judge import findings as findings_module
from verify.judge.findings import add_finding, derive, finding
from verify.runner import apply_race_statuses, apply_sanitizer_status


def _row(name: str = "a") -> KernelRecord:
    problem = Problem("p", "vector_add", [Buffer("x", "float32", (4,)), Buffer("y", "float32", (4,)),
                                          Buffer("out", "float32", (4,), role="out")])
    launch = Launch("k", (1,), (4,), [Arg.buf("x"), Arg.buf("y"), Arg.buf("out")])
    return KernelRecord("g", "test", {"v": name}, name, "sm_80", "// ptx", [launch], problem, build_key=name)


def test_the_checks_set_the_status_and_a_later_check_overrules_only_what_it_may():
    row = _row()
    add_finding(row, "checks", "passed", "")
    assert add_finding(row, "consensus", "disagrees", "outside the consensus")
    assert (row.status, row.status_message) == ("disagrees", "outside the consensus")
    # memcheck explains a disagreement: the replaced status stays in the message
    assert add_finding(row, "memcheck", "out_of_bounds_read", "memcheck: 1 invalid read")
    assert row.status == "out_of_bounds_read"
    assert row.status_message == "memcheck: 1 invalid read (the checks said disagrees: outside the consensus)"
    # a roofline finding overrules only timed statuses: nothing changes, the finding is kept
    assert not add_finding(row, "roofline", "faster_than_roofline", "below the floor")
    assert row.status == "out_of_bounds_read"
    assert [f["check"] for f in row.findings] == ["checks", "consensus", "memcheck", "roofline"]


def test_a_status_the_sanitizer_may_not_explain_stays_and_its_finding_is_kept():
    row = _row()
    add_finding(row, "checks", "modified_input", "the kernel wrote its input x")
    apply_sanitizer_status(row, ("out_of_bounds_write", "memcheck: 2 invalid writes"))
    results = {}
    apply_race_statuses([row], results, {row.build_key: "racecheck: 3 hazards"})
    assert row.status == "modified_input" and results == {}
    assert [(f["check"], f["status"]) for f in row.findings] == [
        ("checks", "modified_input"), ("memcheck", "out_of_bounds_write"), ("racecheck", "race_detected")]


def test_timing_notes_append_and_a_timing_crash_overrules_a_pass():
    row = _row()
    add_finding(row, "checks", "passed", "")
    add_finding(row, "timing", None, "timing did not reach 0.25% RSE")
    assert (row.status, row.status_message) == ("passed", "timing did not reach 0.25% RSE")
    add_finding(row, "timing", "timeout", "timing: the kernel hung")
    assert row.status == "timeout"
    assert row.status_message == "timing: the kernel hung; timing did not reach 0.25% RSE"


def test_derive_is_a_function_of_the_findings_alone():
    found = [finding("checks", "passed", ""), finding("coverage", "unexercised", "site never ran"),
             finding("race_delays", "race_detected", "outputs changed when warps were delayed")]
    assert derive(found) == ("race_detected", "outputs changed when warps were delayed "
                                              "(the checks said unexercised: site never ran)")
    assert derive(list(reversed(found))) == ("passed", "")  # the verdict first resets: order is the checks' order


def test_a_row_without_findings_starts_from_its_own_status():
    row = _row()
    row.status, row.status_message = "passed", "reruns agree"
    add_finding(row, "barrier", "unexercised", "the barrier ordered nothing")
    assert row.findings[0] == {"check": "checks", "status": "passed", "message": "reruns agree"}
    assert (row.status, row.status_message) == ("unexercised", "the barrier ordered nothing; reruns agree")


def test_an_unknown_check_is_refused_and_a_new_check_is_one_line(monkeypatch):
    with pytest.raises(ValueError, match="OVERRULES"):
        finding("toy_check", "wrong_result", "x")
    # a toy check that turns a pass into a wrong result: its line in OVERRULES is all it takes
    monkeypatch.setitem(findings_module.OVERRULES, "toy_check", (("passed",), False))
    row = _row()
    add_finding(row, "checks", "passed", "")
    assert add_finding(row, "toy_check", "wrong_result", "the toy check found an odd element")
    assert (row.status, row.status_message) == ("wrong_result", "the toy check found an odd element")


def test_findings_round_trip_through_the_schema_and_unverify_clears_them():
    row = _row()
    add_finding(row, "checks", "passed", "")
    add_finding(row, "consensus", "disagrees", "far from the others")
    row.provenance = {"verify": {"seeds": [1]}, "builder": "test"}
    row.max_abs_err = 0.5
    table = pa.Table.from_pylist([record_to_row(row)], schema=KERNELS_SCHEMA)
    assert table.column("schema_version")[0].as_py() == SCHEMA_VERSION >= 6
    back = row_to_record(table.to_pylist()[0])
    assert back.findings == row.findings and back.status == "disagrees"
    fresh = unverified(back)
    assert fresh.status == "built" and fresh.status_message == ""
    assert all(getattr(fresh, name) is None for name in VERIFIER_COLUMNS)
    assert fresh.provenance == {"builder": "test"}
    assert back.findings and back.provenance["verify"]  # the original is left as it was
    failed = _row("f")
    failed.status, failed.status_message = "build_failed", "ptxas: error"
    assert (unverified(failed).status, unverified(failed).status_message) == ("build_failed", "ptxas: error")
