"""Print one line per member of a verified dataset: status, error-bound ratio, agreement,
determinism and both times (for GPU run records).

Usage: python benchmarks/member_table.py VERIFIED_DIR [--group GLOB]
"""
from __future__ import annotations

import argparse
import fnmatch
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402


def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--group", default="*")
    args = parser.parse_args()
    rows = sorted((r for r in read_records(args.dataset) if fnmatch.fnmatchcase(r.group_id, args.group)),
                  key=lambda r: (r.group_id, r.name))
    print(f"{'member':34s} {'expect':22s} {'status':20s} {'err/bnd':>8s} {'disagr':>7s} {'det':>4s} "
          f"{'method':>6s} {'t_us':>8s} {'t_ev_us':>8s}")
    for r in rows:
        print(f"{r.name[:34]:34s} {str(r.variant.get('expect', ''))[:22]:22s} {r.status[:20]:20s} "
              f"{fmt(r.max_err_ratio, '.3g'):>8s} {fmt(r.max_disagreement, '.3g'):>7s} "
              f"{'-' if r.deterministic is None else ('y' if r.deterministic else 'n'):>4s} "
              f"{r.time_method or '-':>6s} {fmt(r.time_us_median, '.2f'):>8s} {fmt(r.time_us_events_median, '.2f'):>8s}")


if __name__ == "__main__":
    main()
