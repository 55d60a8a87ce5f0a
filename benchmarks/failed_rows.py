"""Print every row of verified datasets whose status is not ``passed``: group, name,
status and message (the first lines a GPU run's table needs to say why).

Usage: python benchmarks/failed_rows.py VERIFIED_DIR [VERIFIED_DIR ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402


def main(paths: list) -> int:
    for path in paths:
        for record in read_records(path):
            if record.status not in ("passed", "built"):
                print(f"{path}: {record.group_id} {record.name} [{record.source}] {record.status}: "
                      f"{(record.status_message or '')[:400]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
