"""How many CUTLASS families of each problem kind and arch a verified dataset covers, and how
many have at least one passing kernel: the summary of a `--per-family 1` run.

Usage: python benchmarks/family_kinds.py VERIFIED_DIR [VERIFIED_DIR ...]
"""
from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402

SETTLED = ("passed", "not_applicable")


def main(paths: list) -> int:
    families = defaultdict(lambda: defaultdict(Counter))   # (op, arch) -> family -> statuses
    messages = {}                                          # family -> (kernel, first message)
    for path in paths:
        for record in read_records(path):
            family = str(record.provenance.get("family") or record.group_id.rsplit("/", 1)[0])
            families[(record.problem.op, record.arch)][family][record.status] += 1
            if record.status not in SETTLED:
                messages.setdefault(family, (record.name, record.status_message))
    print("| kind | arch | families | with a passing kernel | rows | statuses |")
    print("|---|---|---|---|---|---|")
    total = passing = 0
    for (op, arch), per_family in sorted(families.items()):
        statuses = sum(per_family.values(), Counter())
        ok = sum(1 for s in per_family.values() if s.get("passed"))
        total, passing = total + len(per_family), passing + ok
        print(f"| {op} | {arch} | {len(per_family)} | {ok} | {sum(statuses.values())} | "
              f"{', '.join(f'{s} {n}' for s, n in sorted(statuses.items()))} |")
    print(f"\n{passing} of {total} families have a passing kernel")
    for (op, arch), per_family in sorted(families.items()):
        for family, statuses in sorted(per_family.items()):
            if not statuses.get("passed"):
                kernel, message = messages.get(family, ("", ""))
                print(f"  no pass: {family} {arch}: {dict(statuses)}: {kernel}: {message[:300]}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
