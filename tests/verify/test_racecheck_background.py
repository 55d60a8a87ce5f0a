"""A group's every-member racecheck runs while the GPU thread checks the next group, and no
member is timed while a racecheck run is in flight (the GPU time-slices between processes,
so a racecheck run beside a timed member would slow it). The group's race statuses still
reach its rows. Runs verify_dataset on CPU with the host stand-in workers of
test_verify_split and a stand-in compute-sanitizer that logs when each member runs."""
from __future__ import annotations

import json
import stat
import sys
import time

import pytest
from test_verify_split import _HostVectorAdd, _rows

from dataset_spec.store.shards import ShardWriter, read_records
from test_sanitize_cpu import SAMPLES

# compute-sanitizer --tool racecheck as the verifier runs it (python -m verify.probes.sanitize
# --serve): each member's run is 0.4 s, logged as (start, end); a member named *racy* has a hazard
STAND_IN = '''#!{python}
import json, sys, time
if "--version" in sys.argv:
    print("Version 2025.3.1 (stand-in)")
    sys.exit(0)
hazard = [line for line in open({hazard!r}).read().splitlines() if line.startswith("=========") and "Race" in line
          or line.startswith("=========     and")]
print("========= COMPUTE-SANITIZER", flush=True)
for line in sys.stdin:
    job = json.loads(line)
    name = json.load(open(job["row"]))["name"]
    print(f"ptxds-racecheck-member {{job['index']}}", flush=True)
    start = time.time()
    time.sleep(0.4)
    with open({log!r}, "a") as log:
        log.write(json.dumps(["racecheck", name, start, time.time()]) + "\\n")
    if "dies" in name:
        sys.exit(1)  # as the stopping signal ends it: no result
    if "racy" in name:
        print("\\n".join(hazard), flush=True)
    print(json.dumps({{"ran": True, "member": job["index"], "min_gap_bytes": 1048576,
                      "seconds": {{"load": 0.01, "run": 0.4}}}}), flush=True)
print("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)", flush=True)
'''


class _LoggingWorker(_HostVectorAdd):
    """The host stand-in worker, logging when each member is checked and timed."""

    def __init__(self, ordinal, log_path):
        super().__init__(ordinal, [])
        self.log_path = log_path

    def _log(self, what, name, start):
        with open(self.log_path, "a") as log:
            log.write(json.dumps([what, name, start, time.time()]) + "\n")

    def check(self, record_json, group, *args, **kwargs):
        start = time.time()
        result = super().check(record_json, group, *args, **kwargs)
        self._log("check", json.loads(record_json)["name"], start)
        return result

    def time(self, build_key, *args, **kwargs):
        start = time.time()
        time.sleep(0.05)
        reply = super().time(build_key, *args, **kwargs)
        self._log("time", build_key, start)
        return reply


def _shared(rows: list, racy: set) -> list:
    for row in rows:
        row.launches[0].dynamic_smem = 1024  # racecheck looks at members that use shared memory
        if row.build_key in racy:
            row.name = row.name + "-racy"
    return rows


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    path, log = tmp_path / "compute-sanitizer", tmp_path / "runs.log"
    path.write_text(STAND_IN.format(python=sys.executable, hazard=str(SAMPLES / "racecheck_hazard.log"), log=str(log)))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PTXDS_COMPUTE_SANITIZER", str(path))
    return log


def test_racecheck_runs_beside_the_next_groups_checks_and_never_beside_a_timed_member(tmp_path, stand_in):
    from verify import verify_dataset
    rows = (_shared(_rows("ptx/bg-a", 2048, 3), {"ptx/bg-a-m1"}) + _shared(_rows("ptx/bg-b", 2048, 3), set())
            + _shared(_rows("ptx/bg-c", 2048, 2), {"ptx/bg-c-m0"}))
    ShardWriter(tmp_path / "in").write(rows)
    verify_dataset(tmp_path / "in", tmp_path / "out", progress=False, reference="numpy", inputs="host",
                   time_budget=0.1, assemble_jobs=0, workers=1, split=False,
                   start_workers=lambda n: [_LoggingWorker(0, stand_in)])
    out = {r.build_key: r for r in read_records(tmp_path / "out")}
    assert len(out) == 8
    assert {k for k, r in out.items() if r.status == "race_detected"} == {"ptx/bg-a-m1", "ptx/bg-c-m0"}
    assert all(r.status == "passed" for k, r in out.items() if k not in ("ptx/bg-a-m1", "ptx/bg-c-m0"))
    assert all("ran: every member" in r.provenance["verify"]["racecheck"] for r in out.values())
    assert out["ptx/bg-a-m1"].time_us_median is None  # a member that fails a check keeps no time
    assert out["ptx/bg-b-m0"].time_us_median is not None
    events = [json.loads(line) for line in stand_in.read_text().splitlines()]
    races = [(start, end) for what, _, start, end in events if what == "racecheck"]
    timed = [(start, end) for what, _, start, end in events if what == "time"]
    assert len(races) == 8 and len(timed) == 8
    for start, end in timed:
        assert all(end <= r_start or start >= r_end for r_start, r_end in races), "a member was timed beside racecheck"
    # group bg-b's members were checked before group bg-a's racecheck (three members, 1.2 s) ended
    a_end = max(e for what, name, _, e in events if what == "racecheck" and name.startswith("ptx/bg-a"))
    b_checks = [s for what, name, s, _ in events if what == "check" and name.startswith("ptx/bg-b")]
    assert min(b_checks) < a_end


class _StopDuringRacecheck(_LoggingWorker):
    """Stops the run (SIGINT to the main thread, as Ctrl-C does) while the GPU thread checks
    the second group, that is while the first group's racecheck runs in the background."""

    def check(self, record_json, group, *args, **kwargs):
        import signal
        import threading
        if group == "ptx/stop-b":
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            time.sleep(0.3)
        return super().check(record_json, group, *args, **kwargs)


def test_a_group_whose_racecheck_the_stop_cut_short_is_left_for_the_resume(tmp_path, stand_in):
    import signal
    from verify import verify_dataset
    rows = _shared(_rows("ptx/stop-a", 2048, 2), set()) + _shared(_rows("ptx/stop-b", 2048, 2), set())
    rows[1].name += "-dies"  # its racecheck process ends without a result, as the signal would end it
    ShardWriter(tmp_path / "in").write(rows)
    settings = dict(progress=False, reference="numpy", inputs="host", time_budget=0.1, assemble_jobs=0, workers=1,
                    split=False)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            verify_dataset(tmp_path / "in", tmp_path / "out",
                           start_workers=lambda n: [_StopDuringRacecheck(0, stand_in)], **settings)
    finally:
        signal.signal(signal.SIGINT, previous)
    time.sleep(0.5)
    assert not read_records(tmp_path / "out")  # written, it would say its racecheck failed
    rows[1].name = rows[1].name.replace("-dies", "")
    ShardWriter(tmp_path / "in2").write(rows)
    verify_dataset(tmp_path / "in2", tmp_path / "out", start_workers=lambda n: [_LoggingWorker(0, stand_in)],
                   **settings)
    out = read_records(tmp_path / "out")
    assert sorted(r.group_id for r in out) == ["ptx/stop-a"] * 2 + ["ptx/stop-b"] * 2
    assert all(r.status == "passed" and r.provenance["verify"]["racecheck"].startswith("ran") for r in out)
