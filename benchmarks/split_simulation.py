"""The verify split over GPUs replayed on a CPU: the real runner (queue, chunks, preparation,
copies, merge, writes) with GPU stand-ins whose work is a sleep of a measured length, run
with 1, 2 and 4 workers, to see where the wall time goes before a GPU run.

What is real: ``verify_dataset`` and everything it calls on the host (schedule, threads and
pools, quiet locks, the chunk merge, judging, writes). What stands in for a GPU (a sleep,
which releases the GIL like a GPU call does):
- a worker's ``check`` (run, download, pipe) and ``time`` per row;
- a group's preparation on a GPU (inputs and float64 references), under that GPU's quiet
  lock as the runner's own device work is: ``prepare_problem`` sleeps, then prepares the
  problem for real on the host (small vector_add problems, so that part is milliseconds);
- the coverage measure of a group's trials (host work, seconds at `llm` sizes);
- a copy of a prepared group from one GPU to another (``judge.on_device``), where the code
  makes one.
Each GPU is a stand-in device (``SimDevice``) that the runner treats like a CUDA device it
cannot synchronise: prepared per ordinal, judged per ordinal, locked per ordinal.

The default costs are CUTLASS `llm` rows on one H200 (docs/runs/run-083-087.md, runs 85 and 87:
32 rows in 4 groups, 24.5 s on one GPU; run.* 7.2 s and time.samples 3.0 s summed, so
about 0.22 s of check and 0.1 s of timing per row; run 80's coverage measure about 3 s a
group); the device part of a preparation (1.5 s) and a copy between GPUs (0.2 s) are
estimates. Every cost is an option.

    python benchmarks/split_simulation.py                       # this checkout, 1, 2 and 4 workers
    python benchmarks/split_simulation.py --code /tmp/before    # another checkout's verify, same stand-ins
    python benchmarks/split_simulation.py --compare /tmp/before # both, one table
"""
from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry vadd(.param .u64 x, .param .u64 y, .param .u64 out, .param .u32 n) { ret; }
"""

# name -> (groups, members per group)
DATASETS = {"cutlass-llm-32": (4, 8), "triton-llm-68": (4, 17), "llm-16x16": (16, 16)}


class SimDevice:
    """A GPU as the runner sees it here: an ordinal, and a type torch does not know (so the
    runner never synchronises it)."""
    type = "sim"

    def __init__(self, index: int):
        self.index = index

    def __str__(self) -> str:
        return f"sim:{self.index}"

    def __repr__(self) -> str:
        return str(self)

    def __eq__(self, other) -> bool:
        return isinstance(other, SimDevice) and other.index == self.index

    def __hash__(self) -> int:
        return hash(("sim", self.index))


class Events:
    """What the stand-ins did, with wall-clock intervals: (kind, device, group, start, end)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items: list = []

    @contextlib.contextmanager
    def span(self, kind: str, device, group: str = ""):
        start = time.perf_counter()
        try:
            yield
        finally:
            with self.lock:
                self.items.append((kind, device, group, start, time.perf_counter()))

    def count(self, kind: str) -> int:
        return sum(1 for item in self.items if item[0] == kind)


def stand_in_worker_class():
    """The GPU worker's interface: ``check`` computes vector_add after sleeping, ``time``
    sleeps and answers a time fixed per row."""
    import hashlib

    import numpy as np

    from dataset_spec.model import KernelRecord
    from verify.judge.outcome import CheckResult, TrialRun

    class SleepingWorker:
        def __init__(self, ordinal: int, costs: dict, events: Events):
            self.ordinal, self.costs, self.events = ordinal, costs, events
            self.info = {"name": "stand-in", "cc": [9, 0], "driver_version": "0",
                         "pci_bus_id": f"0000:0{ordinal}:00.0"}

        def check(self, record_json, group, trials, cubin, timeout, keep=None, **_):
            record = KernelRecord.from_json(record_json)
            with self.events.span("check", self.ordinal, group):
                time.sleep(self.costs["check_s"])
            with np.errstate(invalid="ignore", over="ignore"):
                runs = [TrialRun(t, {"out": (storage["x"] + storage["y"]).astype(np.float32)})
                        for t, _, _, storage in trials]
            del record
            return CheckResult(runs=runs, load_path="host")

        def time(self, build_key, budget_s, timeout, max_samples=2000, sets=None):
            with self.events.span("time", self.ordinal):
                time.sleep(self.costs["time_s"])
            median = 5.0 + int(hashlib.sha256(build_key.encode()).hexdigest()[:4], 16) / 1000.0
            return {"stats": {"median_us": median, "iqr_us": 0.01 * median, "min_us": 0.99 * median,
                              "samples": 60, "converged": True, "rse": 0.001},
                    "method": "cupti", "sm_clock_mhz": 1980}

        def close(self):
            pass

    return SleepingWorker


def install_stand_ins(costs: dict, events: Events) -> None:
    """Per-ordinal devices and sleeping preparation, coverage and copies in the imported
    ``verify.runner`` (whichever checkout it comes from)."""
    import dataset_spec.coverage as coverage
    import verify.runner as runner

    runner.prepare_device = lambda problem, reference="auto", inputs="auto", ordinal=0: SimDevice(int(ordinal))
    runner.judge_device = lambda problem, backend="auto", device_index=0, device_type="cuda": SimDevice(
        int(device_index))
    real_prepare = runner.prepare_problem

    def prepare_problem(problem, group_id, n_trials=None, reference="auto", device=None, quiet_gpu=None,
                        host_trial=None, salt="", **options):
        with quiet_gpu or contextlib.nullcontext(), events.span("prepare", device, group_id):
            time.sleep(costs["prepare_s"])  # inputs and float64 references made on the GPU
        prepared = real_prepare(problem, group_id, n_trials, reference, None, None, None, salt, **options)
        prepared.device = device
        return prepared
    runner.prepare_problem = prepare_problem
    real_on_device = runner.on_device

    def on_device(prepared, device):
        source = getattr(prepared, "device", None)
        if isinstance(device, SimDevice) and source is not None and source != device:
            with events.span("copy", device, prepared.problem.problem_id):
                time.sleep(costs["copy_s"])
            return real_on_device(prepared, None)
        return real_on_device(prepared, None)
    runner.on_device = on_device
    real_measure = coverage.measure_trials

    def measure_trials(problem, trials, references, items=None):
        with events.span("coverage", None, problem.problem_id):
            time.sleep(costs["coverage_s"])
        return real_measure(problem, trials, references, items)
    coverage.measure_trials = measure_trials


def write_dataset(folder: Path, groups: int, members: int) -> None:
    from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
    from dataset_spec.store.shards import ShardWriter
    rows = []
    for g in range(groups):
        n = 1024
        problem = Problem(f"vadd_{g}", "vector_add", [Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,)),
                                                      Buffer("out", "float32", (n,), role="out")])
        launch = Launch("vadd", (n // 64,), (64,), [Arg.buf("x"), Arg.buf("y"), Arg.buf("out"),
                                                    Arg.scalar("u32", n)])
        for i in range(members):
            rows.append(KernelRecord(f"sim/g{g}", "ptx", {"member": i}, f"g{g}-m{i}", "sm_80", PTX, [launch], problem,
                                     build_key=f"g{g}-m{i}", status="built"))
    ShardWriter(folder).write(rows)


def child(args) -> None:
    """One run: ``verify_dataset`` of ``--data`` with ``--workers`` stand-ins; JSON on stdout."""
    sys.path.insert(0, str(Path(args.code).resolve()))
    from dataset_spec.store.shards import read_records
    from verify import verify_dataset
    import verify.runner as runner
    costs = {k: getattr(args, k) * args.scale for k in ("check_s", "time_s", "prepare_s", "coverage_s", "copy_s")}
    events = Events()
    install_stand_ins(costs, events)
    worker = stand_in_worker_class()
    summary = verify_dataset(args.data, args.out, progress=False, reference="numpy", inputs="host",
                             time_budget=0.1, workers=args.workers, assemble_jobs=0, racecheck=False,
                             start_workers=lambda n: [worker(i, costs, events) for i in range(n)])
    rows = {r.build_key: (r.status, r.output_hash, r.time_us_median, r.max_disagreement)
            for r in read_records(args.out)}
    print(json.dumps({"verify_s": summary.wall_seconds, "chunks": summary.chunks,
                      "prepares": events.count("prepare"), "copies": events.count("copy"),
                      "coverages": events.count("coverage"),
                      "prepare_threads": getattr(runner, "PREPARE_THREADS", None),
                      "stages": {k: round(v, 2) for k, v in summary.stage_seconds.items()},
                      "busy_s": [round(b, 2) for b in summary.gpu_busy_seconds], "rows": rows}))


def run_child(args, code: Path, data: Path, out: Path, workers: int) -> dict:
    command = [sys.executable, __file__, "--child", "--code", str(code), "--data", str(data), "--out", str(out),
               "--workers", str(workers), "--scale", str(args.scale)] + [
        f"--{name.replace('_', '-')}={getattr(args, name)}"
        for name in ("check_s", "time_s", "prepare_s", "coverage_s", "copy_s")]
    proc = subprocess.run(command, text=True, capture_output=True, timeout=1800)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        raise SystemExit(f"run failed ({code}, {workers} workers):\n{(proc.stdout + proc.stderr)[-3000:]}")
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", default=str(HERE), help="checkout whose verify package runs (default: this one)")
    parser.add_argument("--compare", default=None, help="another checkout to run beside --code, same stand-ins")
    parser.add_argument("--datasets", default="cutlass-llm-32,triton-llm-68", help=",".join(DATASETS))
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every cost (a faster replay)")
    parser.add_argument("--check-s", dest="check_s", type=float, default=0.22, help="a row's checks on its GPU")
    parser.add_argument("--time-s", dest="time_s", type=float, default=0.10, help="a passing row's timing")
    parser.add_argument("--prepare-s", dest="prepare_s", type=float, default=1.5,
                        help="a group's inputs and references on one GPU")
    parser.add_argument("--coverage-s", dest="coverage_s", type=float, default=3.0,
                        help="a group's coverage measure on the host")
    parser.add_argument("--copy-s", dest="copy_s", type=float, default=0.2,
                        help="a prepared group copied from one GPU to another")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.workers = int(args.workers)
        return child(args)
    sys.path.insert(0, str(HERE))
    codes = [("this checkout" if args.compare else str(args.code), Path(args.code))]
    if args.compare:
        codes.insert(0, (str(args.compare), Path(args.compare)))
    counts = [int(n) for n in args.workers.split(",")]
    print(f"costs (x{args.scale}): check {args.check_s} s, time {args.time_s} s per row; per group: prepare "
          f"{args.prepare_s} s on a GPU, coverage {args.coverage_s} s on the host, copy {args.copy_s} s per GPU")
    print("| dataset | code | workers | verify s | speed-up | chunks | prepares | copies | coverage measures | "
          "wait_prepare s (summed) | rows = first 1-worker run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="ptxds-split-sim-") as tmp:
        for name in args.datasets.split(","):
            groups, members = DATASETS[name]
            data = Path(tmp) / name
            write_dataset(data, groups, members)
            first = None  # the first checkout's first run: every run's rows are compared with it
            for index, (label, code) in enumerate(codes):
                base = None
                for n in counts:
                    found = run_child(args, code, data, Path(tmp) / f"{name}-{index}-{n}", n)
                    base, first = base or found, first or found
                    same = "yes" if found["rows"] == first["rows"] else "NO"
                    print(f"| {name} | {label} | {n} | {found['verify_s']:.1f} | "
                          f"{base['verify_s'] / found['verify_s']:.2f}x | {found['chunks']} | {found['prepares']} | "
                          f"{found['copies']} | {found['coverages']} | {found['stages'].get('wait_prepare', 0):.1f} | "
                          f"{same} |", flush=True)


if __name__ == "__main__":
    main()
