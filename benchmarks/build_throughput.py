"""Build throughput of a source (default: the Triton suite), kernels per minute, from a
cold compiler cache, again from a warm one, and a resume that has nothing to build, on
this machine's cores; with the seconds until the build's first line of output and the
largest process's peak memory.

    python benchmarks/build_throughput.py --source triton --arch sm_80,sm_90a [--limit N] [-- BUILD FLAGS]
    python benchmarks/build_throughput.py --source mirage --arch sm_80,sm_90a -- --mugraphs DIR
    python benchmarks/build_throughput.py --source triton --arch sm_90a -- --shapes llm

Cold: fresh compile caches (Triton's and ptxds's own, the Mirage analyses and attention
domains under them included) and a fresh output folder. Warm: the caches kept, a fresh
output folder (so every row is compiled, finalised and written again). Resume: the warm
build's folder again, where every item is done.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ptx_tools.ptx_cache import CACHE_ROOT_ENV  # noqa: E402

# Runs the build and reports, on its last line, the peak RSS (KiB) of the largest process it
# waited for: the build itself or one of its workers (Linux counts waited-for descendants).
PEAK_WRAPPER = ("import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
                "print('peak_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
                "sys.exit(rc)")


def timed_build(source: str, archs: str, out: Path, env: dict, extra: list) -> dict:
    cmd = [sys.executable, "-c", PEAK_WRAPPER, sys.executable, "-m", "ptxds", "build", "--source", source,
           "--out", str(out), "--arch", archs, "--silent", *extra]
    start = time.perf_counter()
    first_line, peak, tail = None, 0, []
    with subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True) as proc:
        for line in proc.stderr:
            if line.startswith("peak_kib "):
                peak = int(line.split()[1])
                continue
            if first_line is None and line.strip():
                first_line = time.perf_counter() - start
            tail = (tail + [line])[-20:]
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"build failed ({proc.returncode}):\n{''.join(tail)}")
    from dataset_spec.store.shards import read_table
    rows = read_table(out, "kernels", columns=["status"]).column("status").to_pylist()
    return {"seconds": seconds, "rows": len(rows), "built": sum(s == "built" for s in rows),
            "first_line": first_line, "peak_mib": peak / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="triton")
    parser.add_argument("--arch", default="sm_80,sm_90a")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("build_flags", nargs="*", help="after --: flags passed to ptxds build as they are")
    args = parser.parse_args()
    extra = (["--limit", str(args.limit)] if args.limit else []) + \
        (["--jobs", str(args.jobs)] if args.jobs else []) + args.build_flags
    work = Path(tempfile.mkdtemp(prefix="ptxds-bench-"))
    # every compile cache starts empty: Triton's, and every ptxds source's (CUTLASS, TVM,
    # Mirage) under the one root; per-source overrides would win over the root, so drop them
    env = {k: v for k, v in os.environ.items() if not (k.startswith("PTXDS_") and k.endswith("_CACHE"))}
    env.update(TRITON_CACHE_DIR=str(work / "triton-cache"), **{CACHE_ROOT_ENV: str(work / "ptxds-cache")})
    print(f"{'run':<7}{'rows':>6}{'built':>7}{'seconds':>10}{'rows/min':>10}{'first line s':>14}"
          f"{'peak MiB':>10}   cores={os.cpu_count()}")
    for label, out in (("cold", "out-cold"), ("warm", "out-warm"), ("resume", "out-warm")):
        r = timed_build(args.source, args.arch, work / out, env, extra)
        first = f"{r['first_line']:.1f}" if r["first_line"] is not None else "-"
        rate = r["rows"] / r["seconds"] * 60 if label != "resume" else 0.0
        print(f"{label:<7}{r['rows']:>6}{r['built']:>7}{r['seconds']:>10.1f}{rate:>10.1f}{first:>14}"
              f"{r['peak_mib']:>10.0f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
