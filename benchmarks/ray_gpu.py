"""Verify one dataset three ways on a host with several GPUs and compare them.

1. the local executor on GPU 0 alone (``CUDA_VISIBLE_DEVICES=0``);
2. the local executor on every GPU (one worker process each);
3. Ray actors on every GPU (``ray start --head``, then ``--executor ray --address auto``).

Then statuses are compared row by row against run 1, and a markdown table of wall time,
rows per minute and the GPUs used (PCI bus ids recorded in the rows) is printed last.

    python benchmarks/ray_gpu.py --work /tmp/ptxds-ray-gpu .gpu/triton .gpu/cutlass
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from dataset_spec.shards import part_files, read_records

VERIFY_TIMEOUT_S = 240


def merge(datasets: list, into: Path) -> None:
    """One dataset folder holding the part files of all ``datasets``."""
    for dataset in datasets:
        for part in part_files(dataset):
            target = into / "kernels" / part.parent.name / f"part-{Path(dataset).name}-{part.name[len('part-'):]}"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(part, target)


def run(label: str, command: list, env: dict) -> float:
    print(f"== {label}: {' '.join(command)}", flush=True)
    start = time.time()
    proc = subprocess.run(command, env=env, timeout=VERIFY_TIMEOUT_S, text=True, capture_output=True)
    seconds = time.time() - start
    print("\n".join((proc.stdout + proc.stderr).strip().splitlines()[:3]), flush=True)
    if proc.returncode != 0:
        print(f"{label} exited with {proc.returncode}:\n{proc.stderr[-2000:]}", flush=True)
    return seconds


def ray_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ray.scripts.scripts", *args], text=True, capture_output=True,
                          timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ptxds-ray-gpu"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    source = args.work / "in"
    merge(args.datasets, source)
    verify = [sys.executable, "-m", "ptxds", "verify", str(source), "--silent"]
    env = dict(os.environ)
    runs = []  # (label, out folder, seconds)

    out = args.work / "local-1gpu"
    runs.append(("local, GPU 0 only", out, run("local, 1 GPU", verify + ["--out", str(out)],
                                               dict(env, CUDA_VISIBLE_DEVICES="0"))))
    out = args.work / "local-all"
    runs.append(("local, all GPUs", out, run("local, all GPUs", verify + ["--out", str(out)], env)))

    gpus = []
    if shutil.which("nvidia-smi"):  # Ray counts GPUs itself; say it outright where it can be read
        gpus = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], text=True,
                              capture_output=True).stdout.split()
    start = time.time()
    started = ray_cli("start", "--head", "--disable-usage-stats", "--include-dashboard=false",
                      *([f"--num-gpus={len(gpus)}"] if gpus else []))
    cluster_start = time.time() - start
    if started.returncode != 0:
        print(f"ray start failed:\n{started.stdout[-1500:]}\n{started.stderr[-1500:]}")
    try:
        out = args.work / "ray-all"
        runs.append(("ray actors, all GPUs", out,
                     run("ray, all GPUs", verify + ["--out", str(out), "--executor", "ray", "--address", "auto"], env)))
    finally:
        ray_cli("stop", "--force")

    reference = {r.build_key: r.status for r in read_records(runs[0][1])} if runs[0][1].exists() else {}
    print(f"\n{len(reference)} rows from {', '.join(args.datasets)}; "
          f"ray start --head took {cluster_start:.1f} s (not in the ray row's wall time)")
    print("| run | wall s | rows | rows/min | speed-up | GPUs used (rows each) | statuses = 1-GPU run |")
    print("|---|---|---|---|---|---|---|")
    base = runs[0][2]
    for label, folder, seconds in runs:
        rows = read_records(folder) if folder.exists() else []
        gpus = Counter((r.provenance.get("verify") or {}).get("gpu") for r in rows
                       if (r.provenance.get("verify") or {}).get("gpu"))
        statuses = {r.build_key: r.status for r in rows}
        differ = sum(1 for key, status in reference.items() if statuses.get(key) != status)
        same = "yes" if rows and not differ else f"no ({differ} differ)"
        used = ", ".join(f"{bus} ({n})" for bus, n in sorted(gpus.items())) or "-"
        print(f"| {label} | {seconds:.1f} | {len(rows)} | {60 * len(rows) / seconds:.0f} | "
              f"{base / seconds:.2f}x | {len(gpus)}: {used} | {same} |")
    print("status counts (1-GPU run): " + ", ".join(f"{k}={v}" for k, v in sorted(Counter(reference.values()).items())))


if __name__ == "__main__":
    main()
