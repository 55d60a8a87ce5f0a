"""Check verify's kernel times against Nsight Compute's gpu__time_duration, the ground truth.

    python benchmarks/ncu_compare.py VERIFIED [--again VERIFIED2 | --reverify BUILT] [--work DIR]
                                     [--max-rows 200] [--repeats 3] [--csv FILE]

VERIFIED is a verified dataset folder (passing rows with time_us_median); given a built
dataset instead, it is verified first into --work. One ncu process runs a small driver
(this script with --driver) that loads every selected row as the verifier does
(verify.row.load_row, the cubin assembled for this GPU, the last trial's inputs from
verify.inputs.make_trial_inputs), runs each row's launch sequence --warmup times
unprofiled, then --repeats times between cuProfilerStart and cuProfilerStop (ncu
--profile-from-start off), so only those launches are profiled. ncu flushes the caches
before each kernel (--cache-control all) and leaves the clocks alone (--clock-control
none), as verify does. A row's ncu time is the median over its repeats of the sum of its
launches' gpu__time_duration.

Prints ours/ncu per row, then a summary against the goals:
  median of ours/ncu                                       1.00 +- 0.03
  worst |ours/ncu - 1| among kernels of >= 5 us            <= 0.10
  Spearman rank correlation with ncu inside each group     >= 0.9
  run-to-run median abs delta, rows >= 10 us               <= 1%
(run-to-run needs --again or --reverify: two separate verify processes of one dataset).
``--csv`` keeps the per-row numbers.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METRIC = "gpu__time_duration.sum"
HOLD_KERNEL_NAME = "ptxds_hold_stream"  # verify.kernel_clock.HOLD_KERNEL_NAME; never a member
TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
         "second": 1e6, "s": 1e6}
MEDIAN_GOAL, WORST_GOAL, SPEARMAN_GOAL, REPEAT_GOAL = 0.03, 0.10, 0.9, 0.01
WORST_MIN_US, REPEAT_MIN_US = 5.0, 10.0


# ---- ncu output and statistics (no GPU needed) ---------------------------------------------

def _duration_us(value: str, unit: str) -> float:
    unit = unit.strip()
    if unit not in TO_US:
        raise ValueError(f"ncu reported {METRIC} in unit {unit!r}; expected one of {sorted(TO_US)}")
    return float(value.replace(",", "").strip()) * TO_US[unit]


def parse_ncu_csv(text: str) -> list:
    """[(kernel name, duration in us)] in profiling order, from ncu's --csv output (raw or
    details page); ncu's own ==PROF== lines around the table are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no CSV table in ncu's output")
    table = list(csv.DictReader(line for line in lines[start:] if line.startswith('"')))
    durations = {}
    if table and METRIC in table[0]:  # raw page: one row per kernel, units in the first row
        unit = next((row[METRIC] for row in table if not row["ID"].strip().isdigit()), "nsecond")
        for row in table:
            if row["ID"].strip().isdigit():
                durations[int(row["ID"])] = (row["Kernel Name"], _duration_us(row[METRIC], unit))
    else:  # details page: one row per kernel and metric
        for row in table:
            if row.get("Metric Name") == METRIC:
                durations[int(row["ID"])] = (row["Kernel Name"],
                                             _duration_us(row["Metric Value"], row["Metric Unit"]))
    return [durations[k] for k in sorted(durations)]


def ncu_row_times(kernels: list, manifest: list) -> tuple:
    """Split ncu's kernels (profiling order) among the driver's rows: a profiled row owns
    repeats x len(entries) consecutive kernels. Returns ({build_key: [us per repeat]}, number
    of kernels whose name is not the expected entry). Raises ValueError when the counts differ."""
    kernels = [k for k in kernels if k[0] != HOLD_KERNEL_NAME]
    expected = sum(len(m["entries"]) * m["repeats"] for m in manifest if m["profiled"])
    if len(kernels) != expected:
        raise ValueError(f"ncu profiled {len(kernels)} kernels; the driver launched {expected} "
                         f"in its profiled ranges")
    times, wrong_names, at = {}, 0, 0
    for m in manifest:
        if not m["profiled"]:
            continue
        per_repeat = []
        for _ in range(m["repeats"]):
            total = 0.0
            for entry in m["entries"]:
                name, us = kernels[at]
                wrong_names += name != entry
                total += us
                at += 1
            per_repeat.append(total)
        times[m["key"]] = per_repeat
    return times, wrong_names


def average_ranks(values) -> np.ndarray:
    """Ranks 1..n, ties sharing the mean of their ranks."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(x.size, dtype=np.float64)
    i = 0
    while i < x.size:
        j = i
        while j + 1 < x.size and x[order[j + 1]] == x[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(a, b) -> float:
    """Spearman's rank correlation (Pearson's on average ranks); nan when one side is constant."""
    ra, rb = average_ranks(a), average_ranks(b)
    if ra.size < 2 or ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def summary_lines(results: list, deltas: dict) -> list:
    """(measure, value, goal met or None) rows for the final table. ``results``: dicts with
    group, ours_us, ncu_us; ``deltas``: build_key -> (first run's us, relative |delta|)."""
    lines = []
    ratios = [r["ours_us"] / r["ncu_us"] for r in results]
    if ratios:
        med = statistics.median(ratios)
        lines.append(("median ours/ncu (goal 1.00 +- 0.03)",
                      f"{med:.3f} (range {min(ratios):.3f}-{max(ratios):.3f}, n={len(ratios)})",
                      abs(med - 1) <= MEDIAN_GOAL))
    big = [r for r in results if r["ncu_us"] >= WORST_MIN_US]
    if big:
        worst = max(big, key=lambda r: abs(r["ours_us"] / r["ncu_us"] - 1))
        error = worst["ours_us"] / worst["ncu_us"] - 1
        lines.append((f"worst ours/ncu - 1, kernels >= {WORST_MIN_US:g} us (goal within +-0.10)",
                      f"{error:+.3f} ({worst['name']}, n={len(big)})", abs(error) <= WORST_GOAL))
    groups: dict = {}
    for r in results:
        groups.setdefault(r["group"], []).append(r)
    rhos = {g: spearman([r["ours_us"] for r in rows], [r["ncu_us"] for r in rows])
            for g, rows in groups.items() if len(rows) >= 3}
    rhos = {g: rho for g, rho in rhos.items() if not np.isnan(rho)}
    if rhos:
        low = min(rhos, key=rhos.get)
        met = sum(rho >= SPEARMAN_GOAL for rho in rhos.values())
        lines.append(("Spearman rho with ncu inside groups (goal >= 0.9)",
                      f"median {statistics.median(rhos.values()):.3f}, min {rhos[low]:.3f} ({low}); "
                      f"{met}/{len(rhos)} groups >= {SPEARMAN_GOAL}", met == len(rhos)))
    for label, test, goal in ((f">= {REPEAT_MIN_US:g} us (goal <= 1%)", lambda t: t >= REPEAT_MIN_US, True),
                              (f"< {REPEAT_MIN_US:g} us", lambda t: t < REPEAT_MIN_US, False)):
        values = [d for t, d in deltas.values() if test(t)]
        if values:
            med = statistics.median(values)
            lines.append((f"run-to-run median abs delta, rows {label}",
                          f"{100 * med:.2f}% (max {100 * max(values):.2f}%, n={len(values)})",
                          med <= REPEAT_GOAL if goal else None))
    return lines


def relative_deltas(first: list, second: list) -> dict:
    """build_key -> (median time of the first run, relative |delta| to the second)."""
    times = {r.build_key: r.time_us_median for r in first if r.status == "passed" and r.time_us_median}
    return {r.build_key: (times[r.build_key], abs(r.time_us_median - times[r.build_key]) / times[r.build_key])
            for r in second if r.build_key in times and r.status == "passed" and r.time_us_median}


def select_rows(rows: list, max_rows: int) -> list:
    """Passing, timed rows, whole groups in dataset order (ranks are compared inside a group)
    until ``max_rows``; at least one group."""
    groups: dict = {}
    for row in rows:
        if row.status == "passed" and row.time_us_median:
            groups.setdefault(row.group_id, []).append(row)
    chosen = []
    for members in groups.values():
        if chosen and len(chosen) + len(members) > max_rows:
            continue
        chosen += members
    return chosen


# ---- the driver process, run under ncu ------------------------------------------------------

def driver_main(dataset: str, keys_path: str, manifest_path: str, repeats: int, warmup: int) -> None:
    """Load each row, warm it up unprofiled, run it ``repeats`` times in a profiled range."""
    from dataset_spec.shards import read_records
    from verify.assembly_pool import assemble_for_gpu, target_arch
    from verify.driver import Context, check, cu
    from verify.inputs import init_array, make_trial_inputs
    from verify.row import load_row

    ctx = Context(0)
    keys = json.loads(Path(keys_path).read_text())
    by_key = {r.build_key: r for r in read_records(dataset)}
    manifest = []
    for key in keys:
        row = by_key[key]
        entry = {"key": key, "entries": [launch.entry for launch in row.launches], "repeats": repeats,
                 "profiled": False, "error": ""}
        manifest.append(entry)
        loaded = None
        try:
            assembled = assemble_for_gpu(row.ptx, target_arch(row.arch, ctx.info.cc))
            loaded = load_row(row, ctx.stream, assembled.cubin)
            loaded.prepare(make_trial_inputs(row.problem, row.group_id, (row.trials or 1) - 1).storage)
            scratch = [(buf, init_array(loaded.specs[name])) for name, buf in loaded.buffers.items()
                       if loaded.specs[name].role == "scratch" and loaded.specs[name].init is not None]

            def run_once():
                for buf, host in scratch:  # copies, not kernels: ncu does not profile them
                    buf.upload(host)
                loaded.enqueue()
                ctx.synchronize()

            for _ in range(warmup):
                run_once()
            check(cu.cuProfilerStart(), "cuProfilerStart")
            try:
                for _ in range(repeats):
                    run_once()
            finally:
                check(cu.cuProfilerStop(), "cuProfilerStop")
            entry["profiled"] = True
        except Exception as exc:  # one bad row is reported, the rest still compared
            entry["error"] = f"{type(exc).__name__}: {exc}"[:500]
            if getattr(exc, "sticky", False):
                break  # the context is dead: nothing after this row can run
        if loaded is not None:
            loaded.free()
    Path(manifest_path).write_text(json.dumps(manifest))


def run_ncu(dataset: Path, rows: list, ncu: str, repeats: int, warmup: int, scratch: Path, timeout: float,
            cache_control: str = "all") -> tuple:
    """One ncu process over all ``rows``: ({build_key: [us per repeat]}, manifest, log path)."""
    keys_path, manifest_path, log_path = scratch / "keys.json", scratch / "manifest.json", scratch / "ncu.csv"
    keys_path.write_text(json.dumps([r.build_key for r in rows]))
    command = [ncu, "--metrics", METRIC, "--cache-control", cache_control, "--clock-control", "none",
               "--profile-from-start", "off", "--csv", "--page", "raw", "--print-units", "base",
               "--print-kernel-base", "mangled", "--log-file", str(log_path),
               sys.executable, str(Path(__file__).resolve()), "--driver", str(dataset),
               "--driver-keys", str(keys_path), "--driver-manifest", str(manifest_path),
               "--repeats", str(repeats), "--warmup", str(warmup)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(command, env=env, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    log = log_path.read_text() if log_path.exists() else ""
    if done.returncode != 0 or not manifest_path.exists():
        raise SystemExit(f"ncu failed (exit code {done.returncode}):\n{done.stdout[-3000:]}\n{log[-3000:]}")
    manifest = json.loads(manifest_path.read_text())
    table = log if '"ID"' in log else done.stdout  # should a version print the table to stdout
    times, wrong_names = ncu_row_times(parse_ncu_csv(table), manifest)
    if wrong_names:
        print(f"warning: {wrong_names} profiled kernel(s) are not named as the expected entry")
    return times, manifest, log_path


def _timed_rows(path: Path) -> list:
    from dataset_spec.shards import read_records
    return read_records(path)


def _verify(dataset, out: Path) -> list:
    from verify import verify_dataset
    shutil.rmtree(out, ignore_errors=True)
    print(f"verifying {dataset} into {out}")
    verify_dataset(dataset, out, progress=False)
    return _timed_rows(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?",
                        help="verified dataset folder (or a built one, verified first into --work)")
    parser.add_argument("--again", default=None, help="a second verified folder of the same dataset (run-to-run)")
    parser.add_argument("--reverify", default=None, help="built dataset to verify again into --work (run-to-run)")
    parser.add_argument("--work", default=None, help="scratch folder for verified copies")
    parser.add_argument("--max-rows", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="profiled runs of each row")
    parser.add_argument("--warmup", type=int, default=2, help="unprofiled runs of each row first")
    parser.add_argument("--ncu", default="ncu")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds the ncu process may take")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--cache-control", choices=("all", "none"), default="all",
                        help="ncu's cache control: all flushes every GPU cache before each profiled kernel")
    parser.add_argument("--driver", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--driver-keys", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--driver-manifest", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        driver_main(args.driver, args.driver_keys, args.driver_manifest, args.repeats, args.warmup)
        return
    if not args.dataset:
        parser.error("the dataset folder is required")

    dataset = Path(args.dataset)
    work = Path(args.work) if args.work else None
    rows = _timed_rows(dataset)
    if not any(r.time_us_median for r in rows):
        if work is None:
            raise SystemExit(f"{dataset} has no timed rows; give --work to verify it first")
        dataset = work / "first"
        rows = _verify(args.dataset, dataset)
    chosen = select_rows(rows, args.max_rows)
    if not chosen:
        raise SystemExit(f"{dataset}: no passing timed rows to compare")

    deltas = {}
    if args.again:
        deltas = relative_deltas(chosen, _timed_rows(Path(args.again)))
    elif args.reverify:
        if work is None:
            raise SystemExit("--reverify needs --work")
        deltas = relative_deltas(chosen, _verify(args.reverify, work / "again"))

    with tempfile.TemporaryDirectory(prefix="ptxds-ncu-") as scratch:
        ncu_times, manifest, _ = run_ncu(dataset, chosen, args.ncu, args.repeats, args.warmup, Path(scratch),
                                         args.timeout, args.cache_control)
    reached = {m["key"] for m in manifest}
    failed = [m for m in manifest if m["error"]] + [
        {"key": r.build_key, "error": "not reached (an earlier row killed the context)"}
        for r in chosen if r.build_key not in reached]
    results = []
    for row in chosen:
        if row.build_key not in ncu_times:
            continue
        ncu_us = statistics.median(ncu_times[row.build_key])
        again = deltas.get(row.build_key)
        results.append({"name": row.name, "group": row.group_id, "build_key": row.build_key,
                        "launches": len(row.launches), "ours_us": row.time_us_median, "ncu_us": ncu_us,
                        "ratio": row.time_us_median / ncu_us,
                        "ncu_repeats_us": ";".join(f"{t:.3f}" for t in ncu_times[row.build_key]),
                        "run_to_run_delta": again[1] if again else None})

    print(f"\n| row | group | ours us | ncu us | ours/ncu |\n|---|---|---|---|---|")
    for r in results:
        print(f"| {r['name']} | {r['group']} | {r['ours_us']:.3f} | {r['ncu_us']:.3f} | {r['ratio']:.3f} |")
    for m in failed:
        print(f"not profiled: {m['key']}: {m['error']}")
    if args.csv and results:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(results[0]))
            writer.writeheader()
            writer.writerows(results)
    print(f"\n| measure ({len(results)} rows, {len(failed)} not profiled) | value | goal met |\n|---|---|---|")
    for label, value, met in summary_lines(results, deltas):
        print(f"| {label} | {value} | {'-' if met is None else ('yes' if met else 'NO')} |")


if __name__ == "__main__":
    main()
