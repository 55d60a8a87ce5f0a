"""Pairs across sources in a verified cross-source dataset: how many, how many positive,
and per group the sources and statuses (the issue's "pairs across sources in `pairs`").

Usage: python benchmarks/cross_pairs.py VERIFIED_DIR
"""
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dataset_spec.store.shards import read_pairs, read_records  # noqa: E402


def main(folder: str) -> None:
    rows = {r.kernel_id: r for r in read_records(folder)}
    cross = [p for p in read_pairs(folder) if rows[p.kernel_a].source != rows[p.kernel_b].source]
    print(f"{len(cross)} cross-source pairs, {sum(p.equivalent is True for p in cross)} positive, "
          f"{sum(p.equivalent is False for p in cross)} negative")
    groups = defaultdict(Counter)
    for row in rows.values():
        groups[row.group_id][(row.source, row.status)] += 1
    print("| group | sources | statuses |\n|---|---|---|")
    for group, counts in sorted(groups.items()):
        sources = sorted({source for source, _ in counts})
        statuses = Counter()
        for (_, status), n in counts.items():
            statuses[status] += n
        print(f"| {group} | {len(sources)}: {', '.join(sources)} | "
              f"{', '.join(f'{s} {n}' for s, n in sorted(statuses.items()))} |")


if __name__ == "__main__":
    main(sys.argv[1])
