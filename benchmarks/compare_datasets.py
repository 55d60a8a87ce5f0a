"""Compare two dataset folders row by row, every config and each row's split, whatever their
part files are called: a change that should leave a built or verified dataset as it was
(a refactor) prints no difference.

Rows are matched by ``build_key`` (kernels configs) or ``(kernel_a, kernel_b)`` (pairs
configs), every physical row counted; a column listed with ``--ignore`` is left out (e.g.
``schema_version`` across a schema change, or the verifier's times across two runs).
Exit status 0 when the folders hold the same rows, 1 otherwise.

Usage: python benchmarks/compare_datasets.py OLD_DIR NEW_DIR [--ignore COLUMN ...]
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.schema import SCHEMAS  # noqa: E402
from dataset_spec.store.shards import read_split_table  # noqa: E402

SHOWN = 5  # differing rows listed per config


def _key(config: str, row: dict) -> tuple:
    return (row["kernel_a"], row["kernel_b"]) if config.startswith("pairs") else (row["build_key"],)


def _rows(root, config: str, ignore: set) -> Counter:
    table = read_split_table(root, config)
    rows = [{k: v for k, v in row.items() if k not in ignore} for row in table.to_pylist()]
    return Counter((_key(config, row), json.dumps(row, sort_keys=True, default=repr)) for row in rows)


def compare(old, new, ignore: set) -> list:
    """One line per config: its row counts and, when they differ, the rows found on one side only."""
    lines = []
    for config in SCHEMAS:
        a, b = _rows(old, config, ignore), _rows(new, config, ignore)
        only_old, only_new = a - b, b - a
        status = "same" if not (only_old or only_new) else "DIFFERENT"
        lines.append(f"{config}: {sum(a.values())} / {sum(b.values())} rows, {status}")
        for side, rows in (("old only", only_old), ("new only", only_new)):
            for (key, text), _ in list(rows.items())[:SHOWN]:
                other = {k for k, _ in (only_new if side == "old only" else only_old)}
                columns = ""
                if key in other:
                    mine = json.loads(text)
                    theirs = json.loads(next(t for k, t in (only_new if side == "old only" else only_old) if k == key))
                    columns = " columns " + ", ".join(sorted(c for c in mine if mine[c] != theirs.get(c)))
                lines.append(f"  {side}: {key}{columns}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--ignore", action="append", default=[], help="a column to leave out (repeatable)")
    args = parser.parse_args()
    lines = compare(args.old, args.new, set(args.ignore))
    print("\n".join(lines))
    return 0 if all(line.endswith("same") for line in lines if not line.startswith("  ")) else 1


if __name__ == "__main__":
    sys.exit(main())
