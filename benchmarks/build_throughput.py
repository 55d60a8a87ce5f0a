"""Build throughput of a source (default: the Triton suite), kernels per minute, from a
cold compiler cache and again from a warm one, on this machine's cores.

    python benchmarks/build_throughput.py --source triton --arch sm_80,sm_90a [--limit N]

Cold: fresh compile caches (Triton's and ptxds's own) and a fresh output folder. Warm: the compiler cache kept, a fresh
output folder (so every row is compiled, finalised and written again).
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


def timed_build(source: str, archs: str, out: Path, env: dict, extra: list) -> tuple:
    cmd = [sys.executable, "-m", "ptxds", "build", "--source", source, "--out", str(out),
           "--arch", archs, "--silent", *extra]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    from dataset_spec.shards import read_table
    rows = read_table(out, "kernels", columns=["status"]).column("status").to_pylist()
    return seconds, len(rows), sum(s == "built" for s in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="triton")
    parser.add_argument("--arch", default="sm_80,sm_90a")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    extra = (["--limit", str(args.limit)] if args.limit else []) + \
        (["--jobs", str(args.jobs)] if args.jobs else [])
    work = Path(tempfile.mkdtemp(prefix="ptxds-bench-"))
    # every compile cache starts empty: Triton's, and every ptxds source's (CUTLASS, TVM,
    # Mirage) under the one root; per-source overrides would win over the root, so drop them
    env = {k: v for k, v in os.environ.items() if not (k.startswith("PTXDS_") and k.endswith("_CACHE"))}
    env.update(TRITON_CACHE_DIR=str(work / "triton-cache"), **{CACHE_ROOT_ENV: str(work / "ptxds-cache")})
    print(f"{'cache':<6}{'rows':>6}{'built':>7}{'seconds':>10}{'kernels/min':>13}   cores={os.cpu_count()}")
    for label in ("cold", "warm"):
        seconds, rows, built = timed_build(args.source, args.arch, work / f"out-{label}", env, extra)
        print(f"{label:<6}{rows:>6}{built:>7}{seconds:>10.1f}{rows / seconds * 60:>13.1f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
