"""Per-family results of verified CUTLASS / Triton datasets, as one markdown table: for each
family (CUTLASS ``provenance["family"]``; Triton kernel + num_ctas) and arch, the row
statuses, the largest error/bound ratio, and the fastest member time.

Usage: python benchmarks/families_table.py VERIFIED_DIR [VERIFIED_DIR ...]
"""
from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402


def family_of(record) -> str:
    if record.source == "cutlass":
        return str(record.provenance.get("family") or record.group_id.rsplit("/", 1)[0])
    kernel = record.name if record.name else "?"
    return f"triton {kernel} num_ctas={record.variant.get('num_ctas', 1)}"


def main(paths: list) -> int:
    table = defaultdict(list)
    for path in paths:
        for record in read_records(path):
            table[(family_of(record), record.arch)].append(record)
    print("| family | arch | rows | statuses | max err/bound | fastest us |")
    print("|---|---|---|---|---|---|")
    bad = 0
    for (family, arch), records in sorted(table.items()):
        statuses = Counter(r.status for r in records)
        ratios = [r.max_err_ratio for r in records if r.max_err_ratio is not None]
        times = [r.time_us_median for r in records if r.time_us_median is not None]
        bad += sum(n for s, n in statuses.items() if s not in ("passed", "not_applicable"))
        measured = f"{max(ratios):.3g} | {min(times):.1f}" if ratios and times else "- | -"
        print(f"| {family} | {arch} | {len(records)} | "
              f"{', '.join(f'{s} {n}' for s, n in sorted(statuses.items()))} | {measured} |")
    print(f"\n{sum(len(v) for v in table.values())} rows, {len(table)} family/arch pairs, "
          f"{bad} rows neither passed nor not_applicable")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
