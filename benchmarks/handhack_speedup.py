"""Verify the handhack Smith-Waterman groups on the GPU and print each member's status, CUPTI
median time and speed-up over the global-memory base, next to the original experiment's
~35% (ring buffers moved to shared memory by hand).

Usage: python benchmarks/handhack_speedup.py DATASET [--verified DIR] [--work DIR]
  DATASET: a folder built with ``ptxds build --source handhack``; it is verified into
  ``--work``/handhack-verified first, unless ``--verified`` names an already verified folder.
The last lines are a markdown table (one row per group, arch and edited member).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402

EXPERIMENT_SPEEDUP = 0.35  # the hand edit's reported speed-up (occupancy 4 instead of 12 blocks/SM)
BASE_MEMBER = "global"


def verified_folder(args) -> Path:
    if args.verified:
        return Path(args.verified)
    from verify import verify_dataset
    out = Path(args.work) / "handhack-verified"
    summary = verify_dataset(args.dataset, out, groups="handhack/*", progress=False)
    print(summary.format())
    return out


def speedup(base_us, member_us):
    """base time / member time - 1 (0.35: the member does the work in 1/1.35 of the time)."""
    if not base_us or not member_us:
        return None
    return base_us / member_us - 1.0


def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--verified", default=None, help="an already verified folder (skip verify)")
    parser.add_argument("--work", default="/tmp/ptxds-handhack", help="where to write the verified folder")
    args = parser.parse_args()
    rows = [r for r in read_records(verified_folder(args)) if r.source == "handhack"]
    if not rows:
        sys.exit(f"{args.dataset}: no handhack rows; build them with ptxds build --source handhack")
    rows.sort(key=lambda r: (r.group_id, r.arch, r.variant.get("member") != BASE_MEMBER, r.name))
    base_time = {(r.group_id, r.arch): r.time_us_median for r in rows if r.variant.get("member") == BASE_MEMBER}
    print(f"{'group':46s} {'arch':7s} {'member':28s} {'status':14s} {'method':>6s} {'t_us':>9s} "
          f"{'iqr':>7s} {'regs':>5s} {'smem':>6s} {'speed-up':>9s}")
    table = []
    for r in rows:
        member = r.variant.get("member", r.name)
        gain = None if member == BASE_MEMBER else speedup(base_time.get((r.group_id, r.arch)), r.time_us_median)
        regs = r.resources[0].registers if r.resources else None
        print(f"{r.group_id:46s} {r.arch:7s} {member[:28]:28s} {r.status[:14]:14s} {r.time_method or '-':>6s} "
              f"{fmt(r.time_us_median, '.1f'):>9s} {fmt(r.time_us_iqr, '.1f'):>7s} {fmt(regs, 'd'):>5s} "
              f"{r.launches[0].dynamic_smem:>6d} {fmt(gain and 100 * gain, '+.1f'):>8s}%")
        if member != BASE_MEMBER:
            table.append((r, member, gain))
    gpu = next((r.gpu_name for r in rows if r.gpu_name), "unknown GPU")
    print(f"\nSmith-Waterman hand edit on {gpu} (speed-up = base time / member time - 1; "
          f"experiment: ~{100 * EXPERIMENT_SPEEDUP:.0f}%)\n")
    print("| group | arch | member | status | base us | member us | speed-up | experiment |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for r, member, gain in table:
        size = r.group_id.rsplit("/", 1)[-1]
        print(f"| {size} | {r.arch} | {member} | {r.status} | {fmt(base_time.get((r.group_id, r.arch)), '.1f')} "
              f"| {fmt(r.time_us_median, '.1f')} | {fmt(gain and 100 * gain, '+.1f')}% "
              f"| {100 * EXPERIMENT_SPEEDUP:.0f}% |")


if __name__ == "__main__":
    main()
