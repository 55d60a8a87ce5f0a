"""The every-member racecheck's long-lived process (verify/probes/racecheck_server.py), on CPU:
compute-sanitizer needs a GPU, so a stand-in for the tool runs here. It speaks the child's
protocol (a start mark per member, racecheck's hazard lines, a done line) and behaves by
the member's name: ``racy`` prints a hazard, ``crash`` exits, ``hang`` sleeps. The
server's own pipes, reader thread, timeouts, restarts and attribution are what run.
On a GPU, tests/verify/test_sanitize_gpu.py runs the real tool."""
from __future__ import annotations

import stat
import sys

import numpy as np
import pytest

from test_sanitize_cpu import SAMPLES, _row

from verify.probes.racecheck_server import RacecheckServer, RacecheckServers
from verify.probes.sanitize import race_errors

STAND_IN = '''#!{python}
"""A stand-in for compute-sanitizer --tool racecheck running python -m verify.probes.sanitize --serve."""
import json, sys, time
if "--version" in sys.argv:
    print("Version 2025.3.1 (stand-in)")
    sys.exit(0)
hazard = [line for line in open({hazard!r}).read().splitlines() if line.startswith("=========") and "Race" in line
          or line.startswith("=========     and")]
print("========= COMPUTE-SANITIZER", flush=True)
with open({log!r}, "a") as log:
    log.write("start\\n")
for line in sys.stdin:
    job = json.loads(line)
    name = json.load(open(job["row"]))["name"]
    print(f"ptxds-racecheck-member {{job['index']}}", flush=True)
    if "crash" in name:
        print("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered", flush=True)
        sys.exit(1)
    grid = json.load(open(job["row"]))["launches"][0]["grid"]
    if "hang" in name or ("bigslow" in name and grid[0] * grid[1] * grid[2] > 8):
        time.sleep(60)
    if "racy" in name:
        print("\\n".join(hazard), flush=True)
    if "slow" in name:
        time.sleep(0.5)
    # a cubin assembled ahead reaches the child as a file; the stand-in reports whether it was one
    cubin = open(job["cubin"], "rb").read() if "cubin" in job else b""
    print(json.dumps({{"ran": True, "member": job["index"], "min_gap_bytes": 1048576,
                      "seconds": {{"load": 0.25 if cubin == b"CUBIN" else 1.0, "run": 0.5}}}}), flush=True)
print("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)", flush=True)
'''


@pytest.fixture
def stand_in(tmp_path):
    path, log = tmp_path / "compute-sanitizer", tmp_path / "starts.log"
    path.write_text(STAND_IN.format(python=sys.executable, hazard=str(SAMPLES / "racecheck_hazard.log"), log=str(log)))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), log


def _member(name: str, shared: bool = True):
    row = _row(name)
    row.launches[0].dynamic_smem = 1024 if shared else 0
    if not shared:
        from dataset_spec.model import Resources
        row.resources = [Resources("k", registers=8, shared_static=0)]
    return name, row.to_json(), {"x": np.zeros(4, np.float32)}


def test_one_process_serves_every_member_and_each_gets_its_own_hazards(stand_in):
    path, log = stand_in
    server = RacecheckServer(path)
    try:
        first = server.check([_member("clean"), _member("racy"), _member("no-shared", shared=False)])
        second = server.check([_member("racy-again"), _member("clean-again")])
    finally:
        server.shutdown()
    assert race_errors(first["clean"]) == 0 and race_errors(first["racy"]) == 1
    assert "skipped" in first["no-shared"]["racecheck"]
    assert race_errors(second["racy-again"]) == 1 and race_errors(second["clean-again"]) == 0
    assert first["racy"]["tool"] == path
    assert log.read_text().count("start") == 1 and server.starts == 1  # one process for both groups


def test_a_member_that_crashes_or_hangs_fails_alone_and_the_next_gets_a_new_process(stand_in):
    path, log = stand_in
    server = RacecheckServer(path)
    try:
        found = server.check([_member("clean"), _member("crash"), _member("racy"), _member("hang"),
                              _member("clean-after")], timeout_per_member=3.0)
    finally:
        server.shutdown()
    assert race_errors(found["clean"]) == 0
    assert race_errors(found["crash"]) is None and "illegal memory access" in found["crash"]["racecheck"]["failed"]
    assert "exit code 1" in found["crash"]["racecheck"]["failed"]
    assert race_errors(found["racy"]) == 1
    assert race_errors(found["hang"]) is None and "no result within 3 s" in found["hang"]["racecheck"]["failed"]
    assert race_errors(found["clean-after"]) == 0
    assert server.starts == 3 and log.read_text().count("start") == 3


def test_a_new_process_before_the_print_limit_could_hide_a_hazard(stand_in, monkeypatch):
    import verify.probes.racecheck_server as rs
    monkeypatch.setattr(rs, "BATCH_PRINT_LIMIT", 4)  # a new process after every 2 hazards printed
    path, _ = stand_in
    server = RacecheckServer(path)
    try:
        found = server.check([_member(f"racy-{i}") for i in range(5)])
    finally:
        server.shutdown()
    assert all(race_errors(f) == 1 for f in found.values())
    assert server.starts == 3


def test_a_tool_that_never_starts_fails_every_member_with_its_words(tmp_path):
    broken = tmp_path / "compute-sanitizer"
    broken.write_text("#!/bin/sh\necho 'Device not supported' >&2\nexit 1\n")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    server = RacecheckServer(str(broken))
    try:
        found = server.check([_member("a"), _member("b")], timeout_per_member=5.0)
    finally:
        server.shutdown()
    for name in ("a", "b"):
        assert race_errors(found[name]) is None
        assert "racecheck did not start: Device not supported" in found[name]["racecheck"]["failed"]


def test_several_processes_share_the_members_and_each_member_keeps_its_own_hazards(stand_in):
    path, log = stand_in
    servers = RacecheckServers(path, count=3)
    members = [_member(f"racy-slow-{i}") for i in range(3)] + [_member(f"clean-slow-{i}") for i in range(3)]
    members = [m + (b"CUBIN",) if i % 2 else m for i, m in enumerate(members)]
    try:
        found = servers.check(members)
        again = servers.check([_member("racy-again")])
    finally:
        servers.shutdown()
    assert {k: race_errors(v) for k, v in found.items()} == {
        **{f"racy-slow-{i}": 1 for i in range(3)}, **{f"clean-slow-{i}": 0 for i in range(3)}}
    assert race_errors(again["racy-again"]) == 1
    # the members were shared: more than one process took some (which ones is up to the threads)
    assert 2 <= servers.starts <= 3 and log.read_text().count("start") == servers.starts
    # three members came with a cubin (the child's load 0.25 s), three without (1.0 s)
    assert servers.seconds == pytest.approx({"load": 3 * 0.25 + 3 * 1.0 + 1.0, "run": 7 * 0.5})


def test_a_member_that_outlives_its_time_beside_others_is_checked_again_alone_on_a_few_blocks(stand_in):
    """The runner's retry (verify/runner.py ``_racecheck_alone``): a member that is slow
    under racecheck on its whole grid gets a ``failed`` report beside the others, then runs
    alone with its blocks sampled down, so making itself slow does not skip racecheck."""
    from types import SimpleNamespace
    from verify.runner import _Run
    path, _ = stand_in
    record = _row("racy-bigslow")
    record.launches[0].grid = (16, 16, 1)
    record.launches[0].dynamic_smem = 1024
    members = [("racy-bigslow", record.to_json(), {"x": np.zeros(4, np.float32)}, None), _member("clean") + (None,)]
    servers = RacecheckServers(path, count=2)
    try:
        for server in servers.servers:  # each process started, past its start-up allowance
            server.check([_member("warm")])
        found = servers.check(members, timeout_per_member=1.5)  # 3 s each: two processes share the GPU
        assert race_errors(found["racy-bigslow"]) is None and race_errors(found["clean"]) == 0
        retried = _Run._racecheck_alone(SimpleNamespace(trial_salt="s"), servers, members, found,
                                        {"racy-bigslow": record})
    finally:
        servers.shutdown()
    assert set(retried) == {"racy-bigslow"} and "no result within 3 s" in retried["racy-bigslow"]
    assert race_errors(found["racy-bigslow"]) == 1 and race_errors(found["clean"]) == 0
