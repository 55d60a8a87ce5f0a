"""Verify datasets on 1, 2 and 4 GPUs of one host, with local workers and Ray actors, and
compare every run with the one-GPU run row by row.

Per dataset, in this order: local workers on GPU 0 alone (``CUDA_VISIBLE_DEVICES=0``), then
for each larger GPU count local workers on GPUs 0..n-1 and Ray actors (``--workers n`` on a
Ray started once with every GPU: ``ray start --head``, then ``--executor ray --address
auto``), then GPU 0 alone again: its row-by-row time ratios against the first run are the
run-to-run noise the other comparisons are read against. Each run is one process
(``--one``) that calls ``verify_dataset`` and prints its summary as JSON; this script times
the process (wall, with start-up and the final publish) and reads the verify phase's own
wall time (from the first chunk taken to the last group written) and each GPU's busy
seconds from the summary.

Printed last, per dataset, one markdown table: wall and verify seconds, speed-ups against
the one-GPU run (both), GPU busy seconds, statuses equal row by row, and per-row
time / one-GPU time (median, 5th-95th percentile) over rows timed in both. A budget
(``--budget`` seconds for everything) skips what no longer fits and says so.

    python benchmarks/ray_gpu.py --work /tmp/ptxds-multi .gpu/cutlass-llm '.gpu/triton-llm=triton/gemm/*'
    python benchmarks/ray_gpu.py --one IN OUT --executor local --workers 2   # one run, JSON on stdout
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402

RUN_CAP_S = 300  # one verify run at most


def one_run(args) -> None:
    """``--one``: verify IN into OUT with the chosen executor and print the summary as JSON."""
    from ptxds.executors import make_executor
    from verify import verify_dataset
    runner = make_executor(args.executor, "auto" if args.executor == "ray" else None)
    try:
        summary = verify_dataset(args.one[0], args.one[1], groups=args.groups, workers=args.workers,
                                 progress=False, split=not args.no_split, start_workers=runner.gpu_workers,
                                 assembly_pool=runner.assembly_pool, racecheck=not args.no_racecheck)
    finally:
        runner.close()
    print(json.dumps({"verify_s": summary.wall_seconds, "busy_s": summary.gpu_busy_seconds,
                      "chunks": summary.chunks, "split_groups": summary.split_groups,
                      "counts": summary.counts, "gpu": summary.gpu_name,
                      "stages": {k: round(v, 1) for k, v in summary.stage_seconds.items()}}))


def run(label: str, command: list, env: dict, timeout: float) -> dict:
    """One ``--one`` process: its JSON summary plus ``wall_s`` (or ``error``)."""
    print(f"== {label}: {' '.join(command)}", flush=True)
    start = time.time()
    try:
        proc = subprocess.run(command, env=env, timeout=timeout, text=True, capture_output=True)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "wall_s": time.time() - start}
    wall = time.time() - start
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(f"{label} exited with {proc.returncode}:\n{(proc.stdout + proc.stderr)[-2000:]}", flush=True)
        return {"error": f"exit {proc.returncode}", "wall_s": wall}
    found = json.loads(lines[-1])
    found["wall_s"] = wall
    print(f"   wall {wall:.1f} s, verify {found['verify_s']:.1f} s, {found['chunks']} chunks, "
          f"busy {', '.join(f'{b:.1f}' for b in found['busy_s'])}; {found['counts']}", flush=True)
    # where the time went: the GPU threads' stages (wait_prepare, copy, run, time, wait_coverage ...)
    # and the preparing threads' (prepare.*: device draws, host draws, references, coverage)
    stages = sorted(found.get("stages", {}).items(), key=lambda kv: -kv[1])
    print("   stages: " + ", ".join(f"{k} {v:.1f}" for k, v in stages if v >= 0.1), flush=True)
    return found


def compare(base: dict, rows: dict) -> dict:
    """Row by row against the one-GPU run: statuses, and time ratios where both are timed."""
    differ = [(key, base[key].status, rows[key].status if key in rows else "missing")
              for key in base if key not in rows or rows[key].status != base[key].status]
    ratios = sorted(rows[k].time_us_median / base[k].time_us_median for k in base
                    if k in rows and rows[k].time_us_median and base[k].time_us_median)
    out = {"rows": len(rows), "differ": differ, "timed": len(ratios)}
    if ratios:
        pick = lambda q: ratios[min(len(ratios) - 1, int(q * (len(ratios) - 1) + 0.5))]  # noqa: E731
        out.update(median=statistics.median(ratios), p5=pick(0.05), p95=pick(0.95))
    return out


def ray_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ray.scripts.scripts", *args], text=True, capture_output=True,
                          timeout=120)


def visible_gpus() -> int:
    if not shutil.which("nvidia-smi"):
        return 0
    found = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], text=True,
                           capture_output=True).stdout.split()
    return len(found)


def table(name: str, runs: list) -> None:
    """One markdown table of a dataset's runs (the first is the one-GPU baseline)."""
    base_label, base_dir, base = runs[0]
    base_rows = {r.build_key: r for r in read_records(base_dir)} if base_dir.exists() and "error" not in base else {}
    print(f"\n### {name}: {len(base_rows)} rows; statuses " +
          ", ".join(f"{k}={v}" for k, v in sorted(Counter(r.status for r in base_rows.values()).items())))
    print("| run | wall s | verify s | speed-up (wall) | speed-up (verify) | chunks | GPU busy s | "
          "statuses = 1 GPU | time / 1 GPU: median (p5-p95), rows |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, folder, found in runs:
        if "error" in found:
            print(f"| {label} | {found.get('wall_s', 0):.1f} | - | - | - | - | - | not run: {found['error']} | - |")
            continue
        rows = {r.build_key: r for r in read_records(folder)} if folder.exists() else {}
        c = compare(base_rows, rows)
        same = "yes" if rows and not c["differ"] else f"no ({len(c['differ'])}: " + ", ".join(
            f"{k} {a}->{b}" for k, a, b in c["differ"][:3]) + ")"
        times = (f"{c['median']:.3f} ({c['p5']:.3f}-{c['p95']:.3f}), {c['timed']}" if c.get("timed") else "-")
        busy = ", ".join(f"{b:.0f}" for b in found["busy_s"])
        print(f"| {label} | {found['wall_s']:.1f} | {found['verify_s']:.1f} | {base['wall_s'] / found['wall_s']:.2f}x | "
              f"{base['verify_s'] / found['verify_s']:.2f}x | {found['chunks']} | {busy} | {same} | {times} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", help="DIR or DIR=GROUP_GLOB")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ptxds-multi-gpu"))
    parser.add_argument("--gpus", default="1,2,4", help="GPU counts to run (those the host has)")
    parser.add_argument("--executors", default="local,ray")
    parser.add_argument("--budget", type=float, default=450.0, help="seconds for every run together")
    parser.add_argument("--no-noise", action="store_true", help="skip the second one-GPU run")
    parser.add_argument("--no-racecheck", action="store_true",
                        help="verify without the every-member racecheck (it runs where each group finishes)")
    parser.add_argument("--one", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--executor", default="local", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--groups", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--no-split", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one_run(args)
    deadline = time.time() + args.budget
    have = visible_gpus() or 1
    counts = [n for n in (int(x) for x in args.gpus.split(",")) if n <= have]
    executors = args.executors.split(",")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    env = dict(os.environ)
    ray_up = False
    if "ray" in executors and any(n > 1 for n in counts):
        try:
            import ray  # noqa: F401
            start = time.time()
            started = ray_cli("start", "--head", "--disable-usage-stats", "--include-dashboard=false",
                              f"--num-gpus={have}")
            ray_up = started.returncode == 0
            print(f"ray start --head: {'ok' if ray_up else 'failed'} in {time.time() - start:.1f} s "
                  f"(outside every run's wall time)" + ("" if ray_up else f"\n{started.stderr[-1500:]}"), flush=True)
        except ImportError:
            print("ray is not installed: the Ray runs are skipped", flush=True)
    results = []
    try:
        for spec in args.datasets:
            folder, _, glob = spec.partition("=")
            name = Path(folder).name + (f" ({glob})" if glob else "")
            plan = [("local, 1 GPU", "local", 1)]
            for n in counts[1:]:
                plan += [(f"local, {n} GPUs", "local", n)] + ([(f"ray, {n} GPUs", "ray", n)]
                                                            if "ray" in executors else [])
            if not args.no_noise:
                plan.append(("local, 1 GPU again (noise)", "local", 1))
            runs = []
            for index, (label, executor, n) in enumerate(plan):
                out = args.work / f"{Path(folder).name}-{index}-{executor}-{n}"
                left = deadline - time.time()
                if left < 20:
                    runs.append((label, out, {"error": "budget spent"}))
                    continue
                if executor == "ray" and not ray_up:
                    runs.append((label, out, {"error": "ray not available"}))
                    continue
                command = [sys.executable, __file__, "--one", folder, str(out), "--executor", executor,
                           "--workers", str(n)] + (["--groups", glob] if glob else []) + \
                          (["--no-racecheck"] if args.no_racecheck else [])
                run_env = dict(env, CUDA_VISIBLE_DEVICES=",".join(map(str, range(n)))) if executor == "local" else env
                runs.append((label, out, run(f"{name}: {label}", command, run_env, min(RUN_CAP_S, left))))
            results.append((name, runs))
    finally:
        if ray_up:
            ray_cli("stop", "--force")
    for name, runs in results:
        table(name, runs)


if __name__ == "__main__":
    main()
