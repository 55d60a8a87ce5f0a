"""verify_dataset with a group's members spread over several workers, on CPU: three workers
pulling chunks from one queue write the same rows as one worker (statuses, errors, output
hashes, agreement, times), every worker takes part, and the split is reported.

No GPU here, so the workers are host stand-ins with the GPU worker's interface: each
computes vector_add from the inputs the runner sends it (a member's ``skew`` variant adds
an error) and answers timing with a time fixed per row. Everything else -- inputs drawn,
references and bounds, chunks, threads, the merge, the agreement check, the writes -- is
the verifier's own. On GPUs, benchmarks/multi_gpu.sh compares real runs row by row."""
from __future__ import annotations

import dataclasses
import hashlib
import threading

import numpy as np

from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
from dataset_spec.store.shards import ShardWriter, read_records
from verify.judge.outcome import CheckResult, TrialRun

PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry vadd(.param .u64 x, .param .u64 y, .param .u64 out, .param .u32 n) { ret; }
"""


class _HostVectorAdd:
    """The GPU worker's interface, computing vector_add on the host."""

    def __init__(self, ordinal: int, log: list):
        self.ordinal, self.log = ordinal, log
        self.info = {"name": "host stand-in", "cc": [9, 0], "driver_version": "0",
                     "pci_bus_id": f"0000:0{ordinal}:00.0"}

    def check(self, record_json, group, trials, cubin, timeout, keep=None, **_):
        record = KernelRecord.from_json(record_json)
        self.log.append((self.ordinal, record.build_key, threading.current_thread().name))
        skew = np.float32(record.variant.get("skew", 0.0))
        with np.errstate(invalid="ignore", over="ignore"):  # the edge trials add infinities
            runs = [TrialRun(t, {"out": (storage["x"] + storage["y"] + skew).astype(np.float32)})
                    for t, _, _, storage in trials]
        return CheckResult(runs=runs, load_path="host")

    def time(self, build_key, budget_s, timeout, max_samples=2000, sets=None):
        median = 5.0 + int(hashlib.sha256(build_key.encode()).hexdigest()[:4], 16) / 1000.0
        return {"stats": {"median_us": median, "iqr_us": 0.01 * median, "min_us": 0.99 * median, "samples": 60,
                          "converged": True, "rse": 0.001}, "method": "cupti", "sm_clock_mhz": 1980}

    def close(self):
        pass


def _problem(n: int) -> Problem:
    return Problem(f"vadd_{n}", "vector_add", [Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,)),
                                               Buffer("out", "float32", (n,), role="out")])


def _rows(group: str, n: int, members: int, skewed=(), failed=()) -> list:
    launch = Launch("vadd", (n // 64,), (64,), [Arg.buf("x"), Arg.buf("y"), Arg.buf("out"), Arg.scalar("u32", n)])
    rows = []
    for i in range(members):
        variant = {"member": i, **({"skew": 0.5} if i in skewed else {})}
        row = KernelRecord(group, "ptx", variant, f"{group}-m{i}", "sm_80", PTX, [launch], _problem(n),
                           build_key=f"{group}-m{i}", status="built")
        if i in failed:
            row = dataclasses.replace(row, status="build_failed", status_message="ptxas: error")
        rows.append(row)
    return rows


def _verify(tmp_path, name: str, workers: int):
    from verify import verify_dataset
    log = []
    summary = verify_dataset(tmp_path / "in", tmp_path / name, progress=False, reference="numpy", inputs="host",
                             time_budget=0.1, workers=workers, assemble_jobs=0,
                             start_workers=lambda n: [_HostVectorAdd(i, log) for i in range(n)])
    return summary, {r.build_key: r for r in read_records(tmp_path / name)}, log


def _labels(row: KernelRecord) -> tuple:
    return (row.status, row.status_message, row.max_abs_err, row.max_err_ratio, row.output_hash,
            row.max_disagreement, row.time_us_median, row.time_samples, row.trials)


def test_three_workers_write_the_rows_one_worker_writes(tmp_path):
    rows = (_rows("ptx/big", 8192, 24, skewed={5, 17}, failed={9}) + _rows("ptx/mid", 4096, 6, skewed={2})
            + _rows("ptx/small", 1024, 2))
    ShardWriter(tmp_path / "in").write(rows)
    one, by_one, _ = _verify(tmp_path, "one", 1)
    three, by_three, log = _verify(tmp_path, "three", 3)
    assert set(by_one) == set(by_three) == {r.build_key for r in rows}
    for key, row in by_one.items():
        assert _labels(by_three[key]) == _labels(row), key
    assert by_one["ptx/big-m5"].status == "wrong_result" and by_one["ptx/big-m9"].status == "build_failed"
    assert by_one["ptx/big-m0"].status == "passed" and by_one["ptx/big-m0"].time_us_median is not None
    assert one.counts == three.counts and one.split_groups == 0 and one.chunks == 3
    assert three.split_groups >= 1 and three.chunks > 3
    assert {ordinal for ordinal, _, _ in log} == {0, 1, 2}  # every worker took chunks
    big = {ordinal for ordinal, key, _ in log if key.startswith("ptx/big")}
    assert len(big) >= 2  # the largest group's members ran on several workers
    gpus = {r.provenance["verify"]["gpu"] for r in by_three.values() if r.status == "passed"}
    assert len(gpus) == 3
    assert all(isinstance(r.provenance["verify"].get("gpu_seconds"), float)
               for r in by_three.values() if r.status != "build_failed")
    assert [g.group_id for g in three.groups] == ["ptx/big", "ptx/mid", "ptx/small"]
    assert [(g.members, g.ran) for g in three.groups] == [(g.members, g.ran) for g in one.groups]
    assert "split" in three.format() and len(three.gpu_busy_seconds) == 3


def test_measured_seconds_of_an_earlier_run_steer_the_next_schedule(tmp_path):
    from verify.runner import plan_group_chunks, select_groups
    ShardWriter(tmp_path / "in").write(_rows("ptx/a", 1024, 8) + _rows("ptx/b", 1024, 8))
    _, verified, _ = _verify(tmp_path, "first", 2)
    groups = select_groups(list(verified.values()), None)
    # the earlier run says ptx/b's rows took 10 s each: it goes first and is spread
    measured = {key: (10.0 if key.startswith("ptx/b") else 0.1) for key in verified}
    plan = plan_group_chunks(groups, 2, None, True, 1.0, measured)
    assert groups[plan[0].group][0] == "ptx/b" and plan[0].count > 1
    assert plan_group_chunks(groups, 1, None, True, 1.0, measured)[0].group == 0


class _StandInGpu:
    """A GPU ordinal as the runner's device: prepared on, judged on, locked per ordinal (a
    type torch does not know, so nothing is synchronised)."""
    type = "standin"

    def __init__(self, index: int):
        self.index = index

    def __str__(self) -> str:
        return f"standin:{self.index}"

    def __eq__(self, other) -> bool:
        return isinstance(other, _StandInGpu) and other.index == self.index

    def __hash__(self) -> int:
        return self.index


class _TimedVectorAdd(_HostVectorAdd):
    """_HostVectorAdd whose timing takes a while and is recorded (ordinal, start, end)."""

    def __init__(self, ordinal: int, log: list, timed: list):
        super().__init__(ordinal, log)
        self.timed = timed

    def time(self, build_key, budget_s, timeout, max_samples=2000, sets=None):
        import time
        start = time.perf_counter()
        time.sleep(0.01)
        self.timed.append((self.ordinal, start, time.perf_counter()))
        return super().time(build_key, budget_s, timeout, max_samples, sets)


def _stand_in_gpus(monkeypatch) -> dict:
    """Each worker's GPU a _StandInGpu for verify_dataset: each group's preparation and each
    copy between GPUs recorded (the quiet locks a copy held, intervals), as is every timing."""
    import time

    import verify.runner as runner
    seen = {"runs": [], "prepares": [], "copies": [], "timed": []}
    real_init, real_prepare, real_on_device = runner._Run.__init__, runner.prepare_problem, runner.on_device

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        seen["runs"].append(self)

    def prepare_problem(problem, group_id, n_trials=None, reference="auto", device=None, quiet_gpu=None,
                        host_trial=None, salt="", **options):
        with quiet_gpu:  # the device's work, under its quiet lock as the runner's own is
            start = time.perf_counter()
            time.sleep(0.02)
            seen["prepares"].append((group_id, device.index, start, time.perf_counter()))
        prepared = real_prepare(problem, group_id, n_trials, reference, None, None, None, salt, **options)
        prepared.device = device
        return prepared

    def on_device(prepared, device):
        if prepared.device != device:
            locks = seen["runs"][-1].quiet_locks
            held = all(locks[o].locked() for o in (prepared.device.index, device.index))
            start = time.perf_counter()
            time.sleep(0.01)
            seen["copies"].append((prepared.problem.problem_id, prepared.device.index, device.index, held, start,
                                   time.perf_counter()))
        return real_on_device(prepared, None)

    monkeypatch.setattr(runner._Run, "__init__", init)
    monkeypatch.setattr(runner, "prepare_device", lambda problem, reference, inputs, ordinal: _StandInGpu(ordinal))
    monkeypatch.setattr(runner, "judge_device", lambda problem, backend, index: _StandInGpu(index))
    monkeypatch.setattr(runner, "prepare_problem", prepare_problem)
    monkeypatch.setattr(runner, "on_device", on_device)
    return seen


def _verify_on_stand_in_gpus(tmp_path, seen: dict, name: str, workers: int) -> tuple:
    """(summary, rows by build key, the run, preparations, copies, timings) of one verify."""
    from verify import verify_dataset
    for found in seen.values():
        found.clear()
    log = []
    summary = verify_dataset(tmp_path / "in", tmp_path / name, progress=False, reference="numpy", inputs="host",
                             time_budget=0.1, workers=workers, assemble_jobs=0,
                             start_workers=lambda n: [_TimedVectorAdd(i, log, seen["timed"]) for i in range(n)])
    return (summary, {r.build_key: r for r in read_records(tmp_path / name)}, seen["runs"][-1],
            list(seen["prepares"]), list(seen["copies"]), list(seen["timed"]))


def test_a_split_group_is_prepared_once_and_copied_to_other_gpus_while_they_are_quiet(tmp_path, monkeypatch):
    from verify.runner import prepare_threads
    rows = (_rows("ptx/big", 8192, 24, skewed={5, 17}, failed={9}) + _rows("ptx/mid", 4096, 6, skewed={2})
            + _rows("ptx/small", 1024, 2))
    ShardWriter(tmp_path / "in").write(rows)
    seen = _stand_in_gpus(monkeypatch)
    _, by_one, _, one_prepares, one_copies, _ = _verify_on_stand_in_gpus(tmp_path, seen, "one", 1)
    three, by_three, run, prepares, copies, timed = _verify_on_stand_in_gpus(tmp_path, seen, "three", 3)
    for key, row in by_one.items():
        assert _labels(by_three[key]) == _labels(row), key
        if row.status != "build_failed":  # the coverage measure, made on a host thread, reached every row
            assert by_three[key].provenance["verify"]["coverage"] == row.provenance["verify"]["coverage"]
            assert isinstance(row.provenance["verify"]["coverage"], dict)
    assert three.split_groups >= 1
    # one preparation per group, however many GPUs verify its chunks
    assert sorted(g for g, *_ in prepares) == sorted(g for g, *_ in one_prepares) == ["ptx/big", "ptx/mid",
                                                                                     "ptx/small"]
    assert not one_copies and copies  # GPUs other than the preparing one judge from copies
    assert all(held for *_, held, _, _ in copies)  # under both GPUs' quiet locks
    assert len({(g, target) for g, _, target, *_ in copies}) == len(copies)  # one copy per group and GPU
    # nothing of ours ran on a GPU while a member was timed there
    for ordinal, start, end in timed:
        for _, device, a, b in prepares:
            assert device != ordinal or b <= start or a >= end
        for _, source, target, _, a, b in copies:
            assert ordinal not in (source, target) or b <= start or a >= end
    assert run.prepare_pool._max_workers >= 3 and prepare_threads(4) >= 4 and prepare_threads(1) >= 2


class _Busy(_HostVectorAdd):
    """A stand-in that takes a while on its GPU and logs when: (worker, what, start, end)."""

    def __init__(self, ordinal: int, log: list, spans: list, worker: int, meet=None):
        super().__init__(ordinal, log)
        self.spans, self.worker, self.meet = spans, worker, meet

    def _busy(self, what: str, result):
        import time
        start = time.perf_counter()
        if self.meet is not None:  # each worker's first check waits (a while) for the other's
            meet, self.meet = self.meet, None
            meet.wait()
        time.sleep(0.01)
        self.spans.append((self.worker, what, start, time.perf_counter()))
        return result

    def check(self, *args, **kwargs):
        return self._busy("check", super().check(*args, **kwargs))

    def time(self, *args, **kwargs):
        return self._busy("time", super().time(*args, **kwargs))


def test_workers_sharing_a_gpu_never_check_beside_a_timed_member(tmp_path):
    from verify import verify_dataset
    ShardWriter(tmp_path / "in").write(_rows("ptx/a", 1024, 6) + _rows("ptx/b", 1024, 6) + _rows("ptx/c", 1024, 6))
    log, spans = [], []
    verify_dataset(tmp_path / "in", tmp_path / "timed", progress=False, reference="numpy", inputs="host",
                   time_budget=0.1, workers=2, assemble_jobs=0,
                   start_workers=lambda n: [_Busy(0, log, spans, i) for i in range(n)])  # both on GPU 0
    assert {worker for worker, *_ in spans} == {0, 1}
    timed = [(w, s, e) for w, what, s, e in spans if what == "time"]
    assert len(timed) == 18
    for worker, what, start, end in spans:
        for other, t_start, t_end in timed:
            assert other == worker or end <= t_start or t_end <= start, "a check ran beside a timed member"


def test_workers_sharing_a_gpu_check_side_by_side_without_timing(tmp_path):
    from verify import verify_dataset
    ShardWriter(tmp_path / "in").write(_rows("ptx/a", 1024, 6) + _rows("ptx/b", 1024, 6))
    log, spans = [], []
    meet = threading.Barrier(2, timeout=10)  # broken (and the rows crashed) if the checks take turns
    summary = verify_dataset(tmp_path / "in", tmp_path / "untimed", progress=False, reference="numpy",
                             inputs="host", timing=False, workers=2, assemble_jobs=0,
                             start_workers=lambda n: [_Busy(0, log, spans, i, meet) for i in range(n)])
    assert not meet.broken and summary.counts == {"passed": 12}


def test_workers_on_two_gpus_with_one_ordinal_here_are_not_made_to_take_turns(tmp_path):
    """Two Ray actors on two nodes can both be ordinal 0 to the driver: their own GPUs are
    told apart by ``gpu_identity``, so they check (and time) side by side."""
    from verify import verify_dataset
    ShardWriter(tmp_path / "in").write(_rows("ptx/a", 1024, 6) + _rows("ptx/b", 1024, 6))
    log, spans = [], []
    meet = threading.Barrier(2, timeout=10)
    workers = [_Busy(0, log, spans, i, meet) for i in range(2)]
    for i, worker in enumerate(workers):
        worker.gpu_identity = (f"node{i}", "0000:07:00.0")
    summary = verify_dataset(tmp_path / "in", tmp_path / "timed", progress=False, reference="numpy",
                             inputs="host", time_budget=0.1, workers=2, assemble_jobs=0,
                             start_workers=lambda n: workers)
    assert not meet.broken and summary.counts == {"passed": 12}
