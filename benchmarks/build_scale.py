"""Build throughput on 2 cores against all of a machine's cores: local processes and Ray tasks.

Builds the same slice (default: one SM80 CUTLASS kernel of each of 64 families, one work
item each) from cold compile caches three ways on this machine:

1. ``--jobs 2`` pinned to two cores (``taskset -c 0,1``): the 2-core build machine's share
   of this hardware;
2. ``--jobs N`` on every core (N = ``os.cpu_count()``);
3. ``--executor ray --address auto`` on a Ray started here with N CPUs (``ray start --head``;
   its start is reported on its own line, outside the run's wall time).

Rows are checked equal (build keys, kernel ids, PTX hashes) and a markdown table prints
wall time, kernels per minute and the speed-up over 2 cores. ``--rate-2core`` adds a row for
a rate measured on the 2-core build machine itself (kernels per minute, same slice).

    python benchmarks/build_scale.py --work /tmp/ptxds-build-scale
    python benchmarks/build_scale.py --work /tmp/b -- --source tvm --arch sm_80   # another slice
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402

DEFAULT_SLICE = ["--source", "cutlass", "--arch", "sm_80", "--family", "cutlass_tensorop_*", "--per-family", "1",
                 "--limit", "64"]
RUN_CAP_S = 900


def rows(folder: Path) -> set:
    return {(r.build_key, r.kernel_id, r.ptx_hash) for r in read_records(folder)} if folder.exists() else set()


def build(label: str, command: list, timeout: float) -> float:
    """Seconds ``command`` took (its last lines printed), or None when it failed."""
    print(f"== {label}: {' '.join(command)}", flush=True)
    start = time.time()
    try:
        proc = subprocess.run(command, text=True, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"   timed out after {timeout:.0f} s", flush=True)
        return None
    seconds = time.time() - start
    print("\n".join("   " + line for line in (proc.stdout + proc.stderr).strip().splitlines()[-3:]), flush=True)
    return seconds if proc.returncode == 0 else None


def ray_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ray.scripts.scripts", *args], text=True, capture_output=True,
                          timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ptxds-build-scale"))
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="cores of the wide runs")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--rate-2core", type=float, default=None,
                        help="kernels/min of the same slice measured on the 2-core build machine")
    parser.add_argument("slice", nargs=argparse.REMAINDER, help="-- then ptxds build options (default: "
                        + " ".join(DEFAULT_SLICE) + ")")
    args = parser.parse_args()
    slice_args = [a for a in args.slice if a != "--"] or DEFAULT_SLICE
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    ptxds = [sys.executable, "-m", "ptxds", "build", *slice_args, "--silent"]
    pin = ["taskset", "-c", "0,1"] if shutil.which("taskset") else []
    if not pin:
        print("taskset not found: the 2-job run is not pinned to two cores", flush=True)
    runs = []  # (label, cores, folder, seconds)
    for label, cores, prefix, extra in (("local, 2 jobs on 2 cores", 2, pin, ["--jobs", "2"]),
                                        (f"local, {args.cores} jobs", args.cores, [], ["--jobs", str(args.cores)])):
        out = args.work / f"local-{cores}"
        command = prefix + ptxds + extra + ["--out", str(out), "--cache", str(args.work / f"cache-local-{cores}")]
        runs.append((label, cores, out, build(label, command, RUN_CAP_S)))
    if not args.no_ray:
        try:
            import ray  # noqa: F401
            start = time.time()
            started = ray_cli("start", "--head", "--disable-usage-stats", "--include-dashboard=false",
                              f"--num-cpus={args.cores}", "--num-gpus=0")
            print(f"ray start --head: {'ok' if started.returncode == 0 else 'failed'} in {time.time() - start:.1f} s",
                  flush=True)
            try:
                if started.returncode == 0:
                    out = args.work / "ray"
                    command = ptxds + ["--executor", "ray", "--address", "auto", "--out", str(out),
                                       "--cache", str(args.work / "cache-ray")]
                    runs.append((f"ray, {args.cores} CPUs", args.cores, out, build("ray", command, RUN_CAP_S)))
            finally:
                ray_cli("stop", "--force")
        except ImportError:
            print("ray is not installed: the Ray run is skipped", flush=True)
    reference = rows(runs[0][2])
    base_rate = None
    print(f"\nslice: ptxds build {' '.join(slice_args)}; {os.cpu_count()} cores here")
    print("| run | cores | wall s | kernels | kernels/min | speed-up over 2 cores | rows = 2-core run |")
    print("|---|---|---|---|---|---|---|")
    if args.rate_2core:
        print(f"| the 2-core build machine | 2 | - | - | {args.rate_2core:.1f} | (its own rate) | - |")
    for label, cores, folder, seconds in runs:
        built = rows(folder)
        if seconds is None or not built:
            print(f"| {label} | {cores} | failed | - | - | - | - |")
            continue
        rate = 60 * len(built) / seconds
        base_rate = base_rate or rate
        same = "yes" if built == reference else f"no ({len(built ^ reference)} differ)"
        print(f"| {label} | {cores} | {seconds:.1f} | {len(built)} | {rate:.1f} | {rate / base_rate:.2f}x | {same} |")


if __name__ == "__main__":
    main()
