"""A passing member that racecheck could not check (its run crashed the tool's process or
outlived its time, beside the others and again alone) keeps its status, since a slow correct
kernel fails the same way, but its status message and findings say that it went unchecked;
a member racecheck found racing becomes race_detected. Runs verify_dataset on CPU with the host
stand-in workers of test_verify_split and the stand-in compute-sanitizer of test_racecheck_server."""
from __future__ import annotations

import stat
import sys

from test_racecheck_server import STAND_IN
from test_sanitize_cpu import SAMPLES
from test_verify_split import _HostVectorAdd, _rows

from dataset_spec.store.shards import ShardWriter, read_records


def _verified_with_stand_in_racecheck(tmp_path, monkeypatch) -> dict:
    """Three members (clean, crashing racecheck's process, racy) verified with racecheck's stand-in."""
    from verify import verify_dataset
    path = tmp_path / "compute-sanitizer"
    path.write_text(STAND_IN.format(python=sys.executable, hazard=str(SAMPLES / "racecheck_hazard.log"),
                                    log=str(tmp_path / "starts.log")))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PTXDS_COMPUTE_SANITIZER", str(path))
    rows = _rows("ptx/unchecked", 2048, 3)
    for row, suffix in zip(rows, ("", "-crash", "-racy")):
        row.launches[0].dynamic_smem = 1024  # racecheck looks at members that use shared memory
        row.name += suffix
    ShardWriter(tmp_path / "in").write(rows)
    verify_dataset(tmp_path / "in", tmp_path / "out", progress=False, reference="numpy", inputs="host",
                   time_budget=0.1, assemble_jobs=0, workers=1, split=False,
                   start_workers=lambda n: [_HostVectorAdd(0, [])])
    return {r.name: r for r in read_records(tmp_path / "out")}


def test_a_member_racecheck_could_not_check_says_so_and_keeps_its_status(tmp_path, monkeypatch):
    out = _verified_with_stand_in_racecheck(tmp_path, monkeypatch)
    clean, crashed, racy = out["ptx/unchecked-m0"], out["ptx/unchecked-m1-crash"], out["ptx/unchecked-m2-racy"]
    assert clean.status == "passed" and "racecheck" not in (clean.status_message or "")
    assert crashed.status == "passed"
    assert "racecheck could not check it" in crashed.status_message
    assert any(f["check"] == "racecheck" and f["status"] is None for f in crashed.findings)
    assert crashed.provenance["verify"]["racecheck"].startswith("failed")
    assert racy.status == "race_detected"


def test_racecheck_and_its_retries_alone_run_with_the_gpu_kept_quiet(tmp_path, monkeypatch):
    """Nothing is timed beside racecheck's processes: the runner holds the GPU's quiet lock
    (the one a timed member takes) while they run members, the crashed member's run alone
    included."""
    from verify.probes.racecheck_server import RacecheckServers
    from verify.runner import _Run
    locks, seen = {}, []
    take_quiet_lock = _Run.quiet_gpu

    def quiet_gpu(self, ordinal):
        locks[int(ordinal)] = take_quiet_lock(self, ordinal)
        return locks[int(ordinal)]

    def watched(name):
        run_members = getattr(RacecheckServers, name)

        def run(self, *args, **kwargs):
            seen.append((name, 0 in locks and locks[0].locked()))
            return run_members(self, *args, **kwargs)
        return run

    monkeypatch.setattr(_Run, "quiet_gpu", quiet_gpu)
    for name in ("check", "check_alone"):
        monkeypatch.setattr(RacecheckServers, name, watched(name))
    out = _verified_with_stand_in_racecheck(tmp_path, monkeypatch)
    assert out["ptx/unchecked-m2-racy"].status == "race_detected"
    assert {name for name, _ in seen} == {"check", "check_alone"}
    assert all(quiet for _, quiet in seen), seen
