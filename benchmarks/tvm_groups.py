"""Per group and arch of a verified dataset: members, how many passed, the fastest
member's time and the spread (slowest / fastest passing member), as a markdown table.

    PYTHONPATH=. python benchmarks/tvm_groups.py VERIFIED_DIR [--group 'tvm/*']
"""
from __future__ import annotations

import argparse
import fnmatch
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402


def table(rows) -> list:
    groups = defaultdict(list)
    for r in rows:
        groups[(r.group_id, r.arch)].append(r)
    lines = ["| group | arch | members | passed | fastest µs | slowest/fastest | statuses |",
             "|---|---|---|---|---|---|---|"]
    for (group, arch), members in sorted(groups.items()):
        passed = [r for r in members if r.status == "passed"]
        times = sorted(r.time_us_median for r in passed if r.time_us_median)
        statuses = defaultdict(int)
        for r in members:
            statuses[r.status] += 1
        fastest = f"{times[0]:.1f}" if times else "-"
        spread = f"{times[-1] / times[0]:.1f}" if times else "-"
        lines.append(f"| {group} | {arch} | {len(members)} | {len(passed)} | {fastest} | {spread} | "
                     f"{', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--group", default="*")
    args = parser.parse_args()
    rows = [r for r in read_records(args.dataset) if fnmatch.fnmatchcase(r.group_id, args.group)]
    print("\n".join(table(rows)))


if __name__ == "__main__":
    main()
