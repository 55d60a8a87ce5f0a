"""Compare two verified copies of one dataset row by row: statuses, times and speed of light.

Used to measure a verifier change side by side with the verifier before it (same rows, same
GPU, one call): how many rows changed status (and which), the ratio of each row's median time
(new / old) over rows timed in both, and the new rows' sol_ratio spread.

Usage: python benchmarks/compare_verified.py OLD_DIR NEW_DIR [--label NAME]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    old = {r.build_key: r for r in read_records(args.old)}
    new = {r.build_key: r for r in read_records(args.new)}
    common = sorted(set(old) & set(new))
    changed = [(old[k].name, old[k].status, new[k].status, (new[k].status_message or "")[:140])
               for k in common if old[k].status != new[k].status]
    ratios = [new[k].time_us_median / old[k].time_us_median for k in common
              if new[k].time_us_median and old[k].time_us_median]
    sol = [new[k].sol_ratio for k in common if new[k].sol_ratio is not None]
    label = args.label or Path(args.new).name
    print(f"{label}: {len(common)} rows in both, {len(changed)} changed status")
    for name, before, after, message in changed:
        print(f"  {name}: {before} -> {after}  {message}")
    if ratios:
        ratios.sort()
        print(f"  time new/old over {len(ratios)} rows: median {statistics.median(ratios):.3f}, "
              f"min {ratios[0]:.3f}, max {ratios[-1]:.3f}")
    if sol:
        print(f"  sol_ratio over {len(sol)} rows: median {statistics.median(sol):.3f}, min {min(sol):.3f}, "
              f"max {max(sol):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
