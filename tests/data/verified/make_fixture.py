"""Cut the small verified fixture in this folder out of datasets that ``ptxds verify`` wrote
on a GPU: whole groups only, every verifier column as the GPU run wrote it. To stay small
enough to commit, each row's PTX and SASS text is dropped (``ptx_hash`` still names the
PTX); the ``pairs`` config is derived again from the kept rows, as ``ptxds verify`` does.

    python tests/data/verified/make_fixture.py OUT DATASET:GROUP_GLOB [DATASET:GROUP_GLOB ...]
"""
from __future__ import annotations

import fnmatch
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT))

from dataset_spec.store.card import write_card  # noqa: E402
from dataset_spec.store.shards import read_table, split_of  # noqa: E402
from dataset_spec.schema import rows_to_table  # noqa: E402
from ptxds.pairs import write_pairs  # noqa: E402


def latest_rows(dataset: str) -> list:
    """One row per build_key, the last written (a resumed verify appends newer parts)."""
    by_key = {}
    for row in read_table(dataset, "kernels").to_pylist():
        by_key[row["build_key"]] = row
    return list(by_key.values())


def main(out: str, selections: list) -> None:
    import pyarrow.parquet as pq
    out_dir = Path(out)
    shutil.rmtree(out_dir / "kernels", ignore_errors=True)
    shutil.rmtree(out_dir / "pairs", ignore_errors=True)
    kept = []
    for selection in selections:
        dataset, pattern = selection.rsplit(":", 1)
        rows = [r for r in latest_rows(dataset) if fnmatch.fnmatch(r["group_id"], pattern)]
        if not rows:
            raise SystemExit(f"no group of {dataset} matches {pattern!r}")
        kept += rows
    by_split = {}
    for row in kept:
        row["ptx"], row["sass"] = "", None
        by_split.setdefault(split_of(row["group_id"]), []).append(row)
    for split, rows in sorted(by_split.items()):
        path = out_dir / "kernels" / split / "part-fixture-00001.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows_to_table(rows, "kernels"), path, compression="zstd")
    write_pairs(out_dir)
    write_card(out_dir)
    print(f"{len(kept)} rows in {len({r['group_id'] for r in kept})} groups -> {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
