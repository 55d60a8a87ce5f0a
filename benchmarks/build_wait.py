"""How long a user waits for a build, side by side for several checkouts: a Mirage build
(cold caches, then warm), and Triton ``--shapes llm`` planning (``--dry-run``) and a resume
that has nothing to build.

    python benchmarks/build_wait.py mirage --mugraphs DIR [--checkout OLD] [--repeat 2]
    python benchmarks/build_wait.py triton [--checkout OLD] [--repeat 3]

Each checkout (default: this one) runs ``python -m ptxds build`` from its own folder. Per
run: wall seconds, CPU seconds of the whole process tree (the build, its workers and
their compilers: the rusage of waited-for children), seconds to the first line the build
prints, and peak resident memory, both of the process tree together (sampled every 0.1 s
from /proc: the sum over the build's processes) and of the largest process. Cold: empty
ptxds and Triton caches and a fresh output folder; warm: the caches the cold run left, a
fresh output folder. Triton: its caches (the attention domain searches, Triton's kernel
cache) are filled first by one build, then the dry run and the resume are timed. On a
machine others share, wall seconds swing with their load: the table gives the minimum and
median over ``--repeat`` runs and the load average, and CPU seconds, which do not swing.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = os.sysconf("SC_PAGE_SIZE")
# runs the build, then prints the CPU seconds of every process it waited for
CPU_WRAPPER = ("import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
               "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
               "print('cpu_s', r.ru_utime + r.ru_stime, 'max_kib', r.ru_maxrss, file=sys.stderr); sys.exit(rc)")


def _children() -> dict:
    """{pid: parent pid} of every process now running."""
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                out[int(entry.name)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                pass
    return out


def _tree_rss(root: int) -> int:
    parents = _children()
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total


def timed(checkout: Path, args: list, env: dict) -> dict:
    """One ``ptxds build`` run from ``checkout``: wall, CPU, first line, peaks."""
    cmd = [sys.executable, "-c", CPU_WRAPPER, sys.executable, "-m", "ptxds", "build", *args]
    start = time.perf_counter()
    first, peak, cpu, largest, tail = None, 0, 0.0, 0, []
    with subprocess.Popen(cmd, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True) as proc:
        done = threading.Event()

        def sample():
            nonlocal peak
            while not done.wait(0.1):
                peak = max(peak, _tree_rss(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        for line in proc.stderr:
            if line.startswith("cpu_s "):
                _, cpu_text, _, kib = line.split()
                cpu, largest = float(cpu_text), int(kib) * 1024
                continue
            if first is None and line.strip():
                first = time.perf_counter() - start
            tail = (tail + [line])[-20:]
        done.set()
        sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"build failed in {checkout} ({proc.returncode}):\n{''.join(tail)}")
    return {"wall": time.perf_counter() - start, "cpu": cpu, "first": first, "tree": peak, "largest": largest}


def _env(work: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not (k.startswith("PTXDS_") and k.endswith("_CACHE"))}
    env.update(TRITON_CACHE_DIR=str(work / "triton-cache"), PTXDS_CACHE=str(work / "ptxds-cache"))
    return env


def _row(label: str, runs: list) -> str:
    def stat(key, scale=1.0):
        values = [r[key] * scale for r in runs if r[key] is not None]
        return f"{min(values):.1f} / {statistics.median(values):.1f}" if values else "-"
    return (f"{label:<42}{stat('wall'):>15}{stat('cpu'):>15}{stat('first'):>13}"
            f"{stat('tree', 2 ** -30):>13}{stat('largest', 2 ** -30):>13}")


def mirage(checkouts: list, mugraphs: str, archs: str, repeat: int, keep: bool) -> list:
    rows = []
    for checkout in checkouts:
        cold, warm = [], []
        for n in range(repeat):
            work = Path(tempfile.mkdtemp(prefix="ptxds-wait-"))
            env = _env(work)
            base = ["--source", "mirage", "--mugraphs", mugraphs, "--arch", archs]
            cold.append(timed(checkout, base + ["--out", str(work / "cold")], env))
            warm.append(timed(checkout, base + ["--out", str(work / "warm"), "--silent"], env))
            if not keep:
                shutil.rmtree(work, ignore_errors=True)
        rows += [_row(f"{checkout.name}: mirage cold", cold), _row(f"{checkout.name}: mirage warm", warm)]
    return rows


def triton(checkouts: list, archs: str, repeat: int) -> list:
    rows = []
    for checkout in checkouts:
        work = Path(tempfile.mkdtemp(prefix="ptxds-wait-"))
        env = _env(work)
        base = ["--source", "triton", "--shapes", "llm", "--arch", archs, "--out", str(work / "out")]
        first = timed(checkout, base + ["--silent"], env)  # fills the caches and the folder
        plan = [timed(checkout, base + ["--dry-run"], env) for _ in range(repeat)]
        resume = [timed(checkout, base + ["--silent"], env) for _ in range(repeat)]
        rows += [_row(f"{checkout.name}: triton llm first build", [first]),
                 _row(f"{checkout.name}: triton llm --dry-run", plan),
                 _row(f"{checkout.name}: triton llm resume, nothing left", resume)]
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("mirage", "triton"))
    parser.add_argument("--checkout", action="append", type=Path, default=[],
                        help="another checkout to run side by side (repeatable), e.g. a git worktree of main")
    parser.add_argument("--mugraphs", help="mirage: folder of muGraph JSON files")
    parser.add_argument("--arch", default="sm_80,sm_90a")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    args = parser.parse_args()
    checkouts = [*(c.resolve() for c in args.checkout), ROOT]
    if args.what == "mirage" and not args.mugraphs:
        parser.error("mirage needs --mugraphs DIR")
    rows = (mirage(checkouts, str(Path(args.mugraphs).resolve()), args.arch, args.repeat, args.keep)
            if args.what == "mirage" else triton(checkouts, args.arch, args.repeat))
    print(f"cores={os.cpu_count()}, load average {os.getloadavg()[0]:.1f}; min / median of {args.repeat} run(s)")
    print(f"{'run':<42}{'wall s':>15}{'CPU s':>15}{'first line s':>13}{'tree GiB':>13}{'largest GiB':>13}")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
