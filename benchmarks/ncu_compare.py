"""Check verify's kernel times against Nsight Compute's gpu__time_duration, the ground truth.

    python benchmarks/ncu_compare.py DATASET [--again VERIFIED2 | --reverify BUILT] [--work DIR]
                                     [--cache-control all,l2] [--calibration CAL | --fixed-cost-us C]
                                     [--groups GLOB] [--trials N] [--max-rows 200] [--repeats 3]
                                     [--csv FILE]

DATASET is a verified dataset folder (passing rows with time_us_median); given a built
dataset instead, it is verified first into --work (``--groups`` and ``--trials`` are passed
to the verifier). For each cache mode, one ncu process runs a small driver (this script
with --driver) that loads every selected row as the verifier does (verify.member.row.load_row,
the cubin assembled for this GPU, the last trial's inputs from
verify.trials.inputs.make_trial_inputs), runs each row's launch sequence --warmup times
unprofiled, then --repeats times between cuProfilerStart and cuProfilerStop (ncu
--profile-from-start off), so only those launches are profiled. Clocks are left alone
(--clock-control none), as verify does.

Cache modes (``--cache-control``, a comma-separated list, each its own ncu process; default
l2, the reference the timing goal is stated against, with --calibration for c):
  all   ncu --cache-control all: ncu flushes every GPU cache it can (L2, and also the
        per-SM instruction, constant and L1 caches) before each profiled kernel.
  l2    ncu --cache-control none, and the driver flushes L2 before each profiled launch
        sequence exactly as verify's timer does (verify.device.l2flush.L2Flush: a write of twice
        the L2, then a read kernel over it), so ours
        and ncu's numbers see the same cache state. The flush's kernels are not a row's: a
        profiled range holding only flushes (run first) names them and they are left out.
  l2write  as l2 with the write alone, no read-back (verify's flush before the read-back
        was added): L2 then holds the flush's dirty lines when the row starts.
  none  ncu --cache-control none and no flush: caches stay warm between repeats.

The numbers, per row and mode:
  ours        verify's time_us_median: the median over samples of the sum of the row's
              kernels' CUPTI start-to-end spans, L2 flushed before every sample.
  ncu         the median over --repeats of the sum of the row's launches' gpu__time_duration.
  ours/ncu    the raw ratio.
  c           ncu's fixed cost per launch beyond the CUPTI span, in us: on kernels of known
              length S (benchmarks/calibration, given as --calibration, verified and profiled
              in the same process and cache mode), c = median over its rows of
              (ncu - S) - (ours - S) = median(ncu - ours) per launch. --fixed-cost-us gives
              it instead.
  ours/(ncu-c) ours / (ncu - c x the row's launch count): ncu's duration with its
              constant per-launch cost taken off, the kernel's own time by ncu's clock.

The summary of each mode checks both ratios against the goals:
  median of ours/ncu                                       1.00 +- 0.03
  worst |ours/ncu - 1| among kernels of >= 5 us            <= 0.10
  Spearman rank correlation with ncu inside each group     >= 0.9
  run-to-run median abs delta, rows >= 10 us               <= 1%
(run-to-run needs --again or --reverify: two separate verify processes of one dataset).
A short table, one line per mode, comes last. ``--csv`` keeps the per-row numbers (one
line per row and mode, calibration rows too).
"""
from __future__ import annotations

import argparse
import csv
import fnmatch
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
HOLD_KERNEL_NAME = "ptxds_hold_stream"  # verify.device.kernel_clock.HOLD_KERNEL_NAME; never a member
TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
         "second": 1e6, "s": 1e6}
CACHE_MODES = ("all", "l2", "l2write", "none")
NCU_CACHE_CONTROL = {"all": "all", "l2": "none", "l2write": "none", "none": "none"}
FLUSH_PROBE_KEY = "(L2 flush only)"  # the driver's first profiled range in mode l2: flushes, no row
FLUSH_PROBES = 2
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


def flush_kernel_names(kernels: list, manifest: list) -> set:
    """Names of kernels ncu profiled for the driver's L2 flush (normally none: the flush is a
    memset). The driver's first profiled range in mode l2 holds only flushes
    (FLUSH_PROBE_KEY), so the kernels before the first one named as a row's entry are the
    flush's. Without that range, nothing is taken for a flush."""
    if not any(m.get("flush_probe") and m["profiled"] for m in manifest):
        return set()
    entries = {entry for m in manifest for entry in m["entries"]}
    names = set()
    for name, _ in kernels:
        if name in entries:
            break
        names.add(name)
    return names - {HOLD_KERNEL_NAME}


def ncu_row_times(kernels: list, manifest: list, dropped_names=()) -> tuple:
    """Split ncu's kernels (profiling order) among the driver's rows: a profiled row owns
    repeats x len(entries) consecutive kernels. The hold kernel and ``dropped_names`` (the
    flush's, from ``flush_kernel_names``) are left out first. Returns ({build_key: [us per
    repeat]}, number of kernels whose name is not the expected entry). Raises ValueError
    when the counts differ."""
    dropped = {HOLD_KERNEL_NAME, *dropped_names}
    kernels = [k for k in kernels if k[0] not in dropped]
    rows = [m for m in manifest if m["profiled"] and not m.get("flush_probe")]
    expected = sum(len(m["entries"]) * m["repeats"] for m in rows)
    if len(kernels) != expected:
        raise ValueError(f"ncu profiled {len(kernels)} kernels; the driver launched {expected} "
                         f"in its profiled ranges")
    times, wrong_names, at = {}, 0, 0
    for m in rows:
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


def fixed_cost_us(calibration: list) -> float:
    """ncu's fixed cost per launch beyond the CUPTI span: the median over the calibration
    results (dicts with ours_us, ncu_us, launches) of (ncu - ours) / launches. For a kernel
    of known length S this is (ncu - S) - (ours - S): what S adds cancels."""
    per_launch = [(r["ncu_us"] - r["ours_us"]) / max(1, r["launches"]) for r in calibration]
    if not per_launch:
        raise ValueError("no calibration rows were profiled: c cannot be measured; give --fixed-cost-us")
    return statistics.median(per_launch)


def corrected(results: list, cost_us: float) -> list:
    """The results with ncu_us replaced by ncu - c x launches (ncu's own duration less its
    fixed per-launch cost); rows where that leaves nothing positive are dropped."""
    out = []
    for r in results:
        ncu_us = r["ncu_us"] - cost_us * max(1, r["launches"])
        if ncu_us > 0:
            out.append(dict(r, ncu_us=ncu_us))
    return out


def compare_rows(rows: list, ncu_times: dict, deltas: dict) -> list:
    """One result dict per row ncu profiled: ours (verify's median), ncu (median of repeats)."""
    results = []
    for row in rows:
        if row.build_key not in ncu_times:
            continue
        ncu_us = statistics.median(ncu_times[row.build_key])
        again = deltas.get(row.build_key)
        results.append({"name": row.name, "group": row.group_id, "build_key": row.build_key,
                        "launches": len(row.launches), "ours_us": row.time_us_median, "ncu_us": ncu_us,
                        "ncu_repeats_us": ";".join(f"{t:.3f}" for t in ncu_times[row.build_key]),
                        "run_to_run_delta": again[1] if again else None})
    return results


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


def summary_lines(results: list, deltas: dict, reference: str = "ncu") -> list:
    """(measure, value, goal met or None) rows for a summary table. ``results``: dicts with
    name, group, ours_us, ncu_us (``reference`` names what ncu_us is: ncu, or ncu-c);
    ``deltas``: build_key -> (first run's us, relative |delta|)."""
    lines = []
    ratios = [r["ours_us"] / r["ncu_us"] for r in results]
    if ratios:
        med = statistics.median(ratios)
        lines.append((f"median ours/{reference} (goal 1.00 +- 0.03)",
                      f"{med:.3f} (range {min(ratios):.3f}-{max(ratios):.3f}, n={len(ratios)})",
                      abs(med - 1) <= MEDIAN_GOAL))
        gaps = [r["ncu_us"] - r["ours_us"] for r in results]
        lines.append((f"median {reference} - ours (us)", f"{statistics.median(gaps):+.2f}", None))
    big = [r for r in results if r["ncu_us"] >= WORST_MIN_US]
    if big:
        worst = max(big, key=lambda r: abs(r["ours_us"] / r["ncu_us"] - 1))
        error = worst["ours_us"] / worst["ncu_us"] - 1
        inside = sum(abs(r["ours_us"] / r["ncu_us"] - 1) <= WORST_GOAL for r in big)
        lines.append((f"worst ours/{reference} - 1, kernels >= {WORST_MIN_US:g} us (goal within +-0.10)",
                      f"{error:+.3f} ({worst['name']}, n={len(big)}, {inside} within)", abs(error) <= WORST_GOAL))
    groups: dict = {}
    for r in results:
        groups.setdefault(r["group"], []).append(r)
    rhos = {g: spearman([r["ours_us"] for r in rows], [r["ncu_us"] for r in rows])
            for g, rows in groups.items() if len(rows) >= 3}
    rhos = {g: rho for g, rho in rhos.items() if not np.isnan(rho)}
    if rhos:
        low = min(rhos, key=rhos.get)
        met = sum(rho >= SPEARMAN_GOAL for rho in rhos.values())
        lines.append((f"Spearman rho with {reference} inside groups (goal >= 0.9)",
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


def mode_line(results: list, cost_us) -> dict:
    """One line of the closing table: a mode's raw and c-corrected medians, the share of rows
    >= 5 us within +-0.10, the worst such row, and the lowest per-group Spearman."""
    def stats(rs):
        if not rs:
            return None
        ratios = [r["ours_us"] / r["ncu_us"] for r in rs]
        big = [r["ours_us"] / r["ncu_us"] - 1 for r in rs if r["ncu_us"] >= WORST_MIN_US]
        return {"median": statistics.median(ratios),
                "within": (sum(abs(e) <= WORST_GOAL for e in big), len(big)),
                "worst": max(big, key=abs) if big else None}
    groups: dict = {}
    for r in results:
        groups.setdefault(r["group"], []).append(r)
    rhos = [spearman([r["ours_us"] for r in g], [r["ncu_us"] for r in g]) for g in groups.values() if len(g) >= 3]
    rhos = [rho for rho in rhos if not np.isnan(rho)]
    return {"rows": len(results), "c_us": cost_us, "raw": stats(results),
            "corrected": stats(corrected(results, cost_us)) if cost_us is not None else None,
            "spearman_min": min(rhos) if rhos else None}


def format_mode_line(dataset: str, mode: str, line: dict) -> str:
    """A markdown table row of ``mode_line``'s numbers."""
    def cells(stats):
        if stats is None:
            return ["-", "-", "-"]
        inside, big = stats["within"]
        worst = f"{stats['worst']:+.3f}" if stats["worst"] is not None else "-"
        return [f"{stats['median']:.3f}", f"{inside}/{big}", worst]
    c = "-" if line["c_us"] is None else f"{line['c_us']:.2f}"
    rho = "-" if line["spearman_min"] is None else f"{line['spearman_min']:.3f}"
    return "| " + " | ".join([dataset, mode, str(line["rows"]), c, *cells(line["raw"]), *cells(line["corrected"]),
                              rho]) + " |"


MODE_TABLE_HEADER = ("| dataset | cache | rows | c us | ours/ncu median | >=5us within 0.10 | worst | "
                     "ours/(ncu-c) median | >=5us within 0.10 | worst | Spearman min |\n"
                     "|---|---|---|---|---|---|---|---|---|---|---|")


def relative_deltas(first: list, second: list) -> dict:
    """build_key -> (median time of the first run, relative |delta| to the second)."""
    times = {r.build_key: r.time_us_median for r in first if r.status == "passed" and r.time_us_median}
    return {r.build_key: (times[r.build_key], abs(r.time_us_median - times[r.build_key]) / times[r.build_key])
            for r in second if r.build_key in times and r.status == "passed" and r.time_us_median}


def select_rows(rows: list, max_rows: int, groups: str = None) -> list:
    """Passing, timed rows, whole groups in dataset order (ranks are compared inside a group)
    until ``max_rows``; at least one group. ``groups``: an fnmatch pattern on group_id."""
    by_group: dict = {}
    for row in rows:
        if groups and not fnmatch.fnmatchcase(row.group_id, groups):
            continue
        if row.status == "passed" and row.time_us_median:
            by_group.setdefault(row.group_id, []).append(row)
    chosen = []
    for members in by_group.values():
        if chosen and len(chosen) + len(members) > max_rows:
            continue
        chosen += members
    return chosen


def parse_modes(text: str) -> list:
    """The comma-separated cache modes of --cache-control, checked."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in CACHE_MODES]
    if bad or not modes:
        raise ValueError(f"unknown cache mode {bad[0] if bad else text!r}; use a comma-separated list of "
                         f"{', '.join(CACHE_MODES)}")
    return list(dict.fromkeys(modes))


# ---- the driver process, run under ncu ------------------------------------------------------

def driver_main(dataset: str, keys_path: str, manifest_path: str, repeats: int, warmup: int,
                flush_mode: str = "") -> None:
    """Load each row, warm it up unprofiled, run it ``repeats`` times in a profiled range.
    ``flush_mode`` l2: flush L2 before every run with verify's own flush (l2write: its write
    alone), after a first profiled range of flushes alone that names the flush's kernels."""
    from dataset_spec.store.shards import read_records
    from verify.device.assembly_pool import assemble_for_gpu, target_arch
    from verify.device.driver import Context, check, cu
    from verify.trials.inputs import init_array, make_trial_inputs
    from verify.device.l2flush import L2Flush
    from verify.member.row import load_row

    ctx = Context(0)
    keys = json.loads(Path(keys_path).read_text())
    by_key = {r.build_key: r for r in read_records(dataset)}
    manifest = []
    flush = (L2Flush(ctx.info.l2_bytes, ctx.info.sm_count, read_back=flush_mode == "l2")
             if flush_mode in ("l2", "l2write") else None)
    runs = 0  # every run gets the next flush byte, as verify's samples do

    def flush_now():
        flush.enqueue(runs, ctx.stream)

    def profiled(body, count):
        check(cu.cuProfilerStart(), "cuProfilerStart")
        try:
            for _ in range(count):
                body()
        finally:
            check(cu.cuProfilerStop(), "cuProfilerStop")

    if flush is not None:
        def flush_alone():
            nonlocal runs
            flush_now()
            runs += 1
            ctx.synchronize()
        profiled(flush_alone, FLUSH_PROBES)
        manifest.append({"key": FLUSH_PROBE_KEY, "entries": [], "repeats": FLUSH_PROBES, "profiled": True,
                         "flush_probe": True, "error": ""})
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
                nonlocal runs
                for buf, host in scratch:  # copies, not kernels: ncu does not profile them
                    buf.upload(host)
                if flush is not None:  # after the re-init, as verify's timer does
                    flush_now()
                runs += 1
                loaded.enqueue()
                ctx.synchronize()

            for _ in range(warmup):
                run_once()
            profiled(run_once, repeats)
            entry["profiled"] = True
        except Exception as exc:  # one bad row is reported, the rest still compared
            entry["error"] = f"{type(exc).__name__}: {exc}"[:500]
            if getattr(exc, "sticky", False):
                break  # the context is dead: nothing after this row can run
        if loaded is not None:
            loaded.free()
    Path(manifest_path).write_text(json.dumps(manifest))


def run_ncu(dataset: Path, rows: list, ncu: str, repeats: int, warmup: int, scratch: Path, timeout: float,
            mode: str = "all", keep_log=None) -> tuple:
    """One ncu process over all ``rows`` in cache ``mode``: ({build_key: [us per repeat]},
    manifest, number of flush kernels left out). ``keep_log``: a path to copy ncu's CSV to."""
    keys_path, manifest_path, log_path = scratch / "keys.json", scratch / "manifest.json", scratch / "ncu.csv"
    for path in (manifest_path, log_path):
        path.unlink(missing_ok=True)
    keys_path.write_text(json.dumps([r.build_key for r in rows]))
    command = [ncu, "--metrics", METRIC, "--cache-control", NCU_CACHE_CONTROL[mode], "--clock-control", "none",
               "--profile-from-start", "off", "--csv", "--page", "raw", "--print-units", "base",
               "--print-kernel-base", "mangled", "--log-file", str(log_path),
               sys.executable, str(Path(__file__).resolve()), "--driver", str(dataset),
               "--driver-keys", str(keys_path), "--driver-manifest", str(manifest_path),
               "--repeats", str(repeats), "--warmup", str(warmup), "--driver-flush", mode]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(command, env=env, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    log = log_path.read_text() if log_path.exists() else ""
    if keep_log is not None and log:
        Path(keep_log).parent.mkdir(parents=True, exist_ok=True)
        Path(keep_log).write_text(log)
    if done.returncode != 0 or not manifest_path.exists():
        raise SystemExit(f"ncu failed (exit code {done.returncode}):\n{done.stdout[-3000:]}\n{log[-3000:]}")
    manifest = json.loads(manifest_path.read_text())
    table = log if '"ID"' in log else done.stdout  # should a version print the table to stdout
    kernels = parse_ncu_csv(table)
    flush_names = flush_kernel_names(kernels, manifest)
    times, wrong_names = ncu_row_times(kernels, manifest, flush_names)
    if wrong_names:
        print(f"warning: {wrong_names} profiled kernel(s) are not named as the expected entry")
    return times, manifest, sum(name in flush_names for name, _ in kernels)


def _timed_rows(path: Path) -> list:
    from dataset_spec.store.shards import read_records
    return read_records(path)


def _verify(dataset, out: Path, groups: str = None, trials: int = None) -> list:
    from verify import verify_dataset
    shutil.rmtree(out, ignore_errors=True)
    print(f"verifying {dataset} into {out}" + (f" (groups {groups})" if groups else ""), flush=True)
    summary = verify_dataset(dataset, out, groups=groups, trials=trials, progress=False)
    print(summary.format(), flush=True)
    return _timed_rows(out)


def _verified(path: Path, work, name: str, groups: str = None, trials: int = None) -> tuple:
    """(folder with timed rows, its rows): ``path`` itself when verified, else its verified copy."""
    rows = _timed_rows(path)
    if any(r.time_us_median for r in rows):
        return path, rows
    if work is None:
        raise SystemExit(f"{path} has no timed rows; give --work to verify it first")
    return work / name, _verify(path, work / name, groups, trials)


def _not_profiled(rows: list, manifest: list) -> list:
    reached = {m["key"] for m in manifest}
    return [m for m in manifest if m["error"]] + [
        {"key": r.build_key, "error": "not reached (an earlier row killed the context)"}
        for r in rows if r.build_key not in reached]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?",
                        help="verified dataset folder (or a built one, verified first into --work)")
    parser.add_argument("--again", default=None, help="a second verified folder of the same dataset (run-to-run)")
    parser.add_argument("--reverify", default=None, help="built dataset to verify again into --work (run-to-run)")
    parser.add_argument("--work", default=None, help="scratch folder for verified copies")
    parser.add_argument("--groups", default=None, help="only groups matching this glob (verified and compared)")
    parser.add_argument("--trials", type=int, default=None, help="trials per problem when verifying (default: verify's)")
    parser.add_argument("--max-rows", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="profiled runs of each row")
    parser.add_argument("--warmup", type=int, default=2, help="unprofiled runs of each row first")
    parser.add_argument("--ncu", default="ncu")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds one ncu process may take")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--logs", default=None, help="folder to keep ncu's CSV output in (DATASET-MODE.csv)")
    parser.add_argument("--cache-control", default="l2",
                        help="comma-separated cache modes, one ncu process each: all (ncu flushes every cache), "
                             "l2 (ncu flushes nothing, the driver flushes L2 as verify does), l2write (the flush's "
                             "write alone), none")
    parser.add_argument("--calibration", default=None,
                        help="calibration dataset (benchmarks/calibration; built or verified): c is measured on it "
                             "in each cache mode")
    parser.add_argument("--fixed-cost-us", type=float, default=None,
                        help="ncu's fixed cost per launch beyond the CUPTI span, if not measured with --calibration")
    parser.add_argument("--driver", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--driver-keys", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--driver-manifest", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--driver-flush", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        driver_main(args.driver, args.driver_keys, args.driver_manifest, args.repeats, args.warmup,
                    args.driver_flush)
        return
    if not args.dataset:
        parser.error("the dataset folder is required")
    try:
        modes = parse_modes(args.cache_control)
    except ValueError as exc:
        parser.error(str(exc))
    if args.calibration and args.fixed_cost_us is not None:
        parser.error("give --calibration or --fixed-cost-us, not both")

    work = Path(args.work) if args.work else None
    dataset, rows = _verified(Path(args.dataset), work, "first", args.groups, args.trials)
    chosen = select_rows(rows, args.max_rows, args.groups)
    if not chosen:
        raise SystemExit(f"{dataset}: no passing timed rows to compare")
    calibration, calibration_rows = None, []
    if args.calibration:
        calibration, cal_all = _verified(Path(args.calibration), work, "calibration")
        calibration_rows = select_rows(cal_all, 10 ** 6)
        if not calibration_rows:
            raise SystemExit(f"{calibration}: no passing timed calibration rows")

    deltas = {}
    if args.again:
        deltas = relative_deltas(chosen, _timed_rows(Path(args.again)))
    elif args.reverify:
        if work is None:
            raise SystemExit("--reverify needs --work")
        deltas = relative_deltas(chosen, _verify(args.reverify, work / "again", args.groups, args.trials))

    # the folders as given (a verified copy lives in --work under a generic name)
    name, cal_name = Path(args.dataset).name, Path(args.calibration or ".").name

    def log_path(label, mode):
        return Path(args.logs) / f"{label}-{mode}.csv" if args.logs else None

    csv_rows, closing = [], []
    with tempfile.TemporaryDirectory(prefix="ptxds-ncu-") as scratch:
        for mode in modes:
            print(f"\n## cache mode {mode} (ncu --cache-control {NCU_CACHE_CONTROL[mode]}"
                  f"{'; L2 flushed by the driver as verify does' if mode == 'l2' else ''}{'; L2 written by the driver, no read-back' if mode == 'l2write' else ''})", flush=True)
            cost = args.fixed_cost_us
            if calibration is not None:
                cal_times, cal_manifest, flushed = run_ncu(calibration, calibration_rows, args.ncu, args.repeats,
                                                           args.warmup, Path(scratch), args.timeout, mode,
                                                           log_path(cal_name, mode))
                cal_results = compare_rows(calibration_rows, cal_times, {})
                cost = fixed_cost_us(cal_results)
                print(f"\ncalibration ({cal_name}): c = median(ncu - ours) = {cost:.3f} us per launch"
                      f"{f'; {flushed} flush kernels left out' if flushed else ''}")
                print("| row | ours us | ncu us | ncu - ours |\n|---|---|---|---|")
                for r in cal_results:
                    print(f"| {r['name']} | {r['ours_us']:.3f} | {r['ncu_us']:.3f} | {r['ncu_us'] - r['ours_us']:+.3f} |")
                for m in _not_profiled(calibration_rows, cal_manifest):
                    print(f"not profiled: {m['key']}: {m['error']}")
                csv_rows += [dict(r, dataset=cal_name, mode=mode, c_us=cost) for r in cal_results]
                closing.append((cal_name, mode, mode_line(cal_results, cost)))
            ncu_times, manifest, flushed = run_ncu(dataset, chosen, args.ncu, args.repeats, args.warmup,
                                                   Path(scratch), args.timeout, mode, log_path(name, mode))
            results = compare_rows(chosen, ncu_times, deltas)
            failed = _not_profiled(chosen, manifest)
            if flushed:
                print(f"{flushed} kernels of the driver's L2 flush left out")
            header = "| row | group | launches | ours us | ncu us | ours/ncu |"
            print(f"\n{header}{' ncu-c us | ours/(ncu-c) |' if cost is not None else ''}\n"
                  f"|---|---|---|---|---|---|{'---|---|' if cost is not None else ''}")
            for r in results:
                line = (f"| {r['name']} | {r['group']} | {r['launches']} | {r['ours_us']:.3f} | {r['ncu_us']:.3f} | "
                        f"{r['ours_us'] / r['ncu_us']:.3f} |")
                if cost is not None:
                    own = r["ncu_us"] - cost * r["launches"]
                    line += f" {own:.3f} | {r['ours_us'] / own:.3f} |" if own > 0 else " - | - |"
                print(line)
            for m in failed:
                print(f"not profiled: {m['key']}: {m['error']}")
            print(f"\n| measure ({mode}; {len(results)} rows, {len(failed)} not profiled) | value | goal met |\n"
                  f"|---|---|---|")
            summary = summary_lines(results, deltas)
            if cost is not None:
                summary += summary_lines(corrected(results, cost), {}, reference=f"(ncu-{cost:.2f}us)")
            for label, value, met in summary:
                print(f"| {label} | {value} | {'-' if met is None else ('yes' if met else 'NO')} |")
            csv_rows += [dict(r, dataset=name, mode=mode, c_us=cost) for r in results]
            closing.append((name, mode, mode_line(results, cost)))

    if args.csv and csv_rows:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(csv_rows[0]))
            writer.writeheader()
            writer.writerows(csv_rows)
    print(f"\n{MODE_TABLE_HEADER}")
    for label, mode, line in closing:
        print(format_mode_line(label, mode, line))


if __name__ == "__main__":
    main()
