"""Per-group results of a verified inductor dataset, as one markdown table: for each captured
kernel (group) and arch, its model, the row statuses, the largest error/bound ratio, the
fastest member time and, for a group with a row that did not pass, that row's message.

Usage: python benchmarks/inductor_groups.py VERIFIED_DIR
"""
from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402


def main(path: str) -> int:
    groups = defaultdict(list)
    for record in read_records(path):
        groups[(record.group_id, record.arch)].append(record)
    print("| group | arch | rows | statuses | max err/bound | fastest us | first failure |")
    print("|---|---|---|---|---|---|---|")
    totals = Counter()
    for (group, arch), records in sorted(groups.items()):
        statuses = Counter(r.status for r in records)
        totals.update(statuses)
        ratios = [r.max_err_ratio for r in records if r.max_err_ratio is not None]
        times = [r.time_us_median for r in records if r.time_us_median is not None]
        failed = [r for r in records if r.status not in ("passed", "not_applicable")]
        message = failed[0].status_message.replace("|", "/").splitlines()[0][:160] if failed and \
            failed[0].status_message else ""
        print(f"| {group.removeprefix('inductor/')} | {arch} | {len(records)} | "
              f"{', '.join(f'{s} {n}' for s, n in sorted(statuses.items()))} | "
              f"{f'{max(ratios):.3g}' if ratios else '-'} | {f'{min(times):.1f}' if times else '-'} | {message} |")
    rows = sum(totals.values())
    print(f"\n{len(groups)} groups, {rows} rows: " + ", ".join(f"{s} {n}" for s, n in sorted(totals.items())))
    return 0 if rows and totals["passed"] == rows else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else "usage: inductor_groups.py VERIFIED_DIR")
