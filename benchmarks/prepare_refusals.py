"""Which groups of a built dataset the verifier would refuse before running any member, found
on a CPU: each group's trials are drawn and its float64 references and bounds computed as
``ptxds verify`` does (``verify.runner.prepare_problem``), and every refusal (a reference that
fails, one no trial can tell from a constant) is listed with its reason.

Usage: python benchmarks/prepare_refusals.py DATASET [--groups GLOB] [--limit N]
"""
from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402
from verify.runner import prepare_problem  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--groups", default="*")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    problems = {}
    for row in read_records(args.dataset):
        if fnmatch.fnmatch(row.group_id, args.groups):
            problems.setdefault(row.group_id, row.problem)
    chosen = sorted(problems)[: args.limit or None]
    outcomes, start = Counter(), time.perf_counter()
    for group_id in chosen:
        prepared = prepare_problem(problems[group_id], group_id, salt="")
        status = prepared.refusal_status or ("reference_failed" if prepared.refusal else "prepared")
        outcomes[status] += 1
        if prepared.refusal:
            print(f"{group_id}: {status}: {prepared.refusal[:200]}")
    seconds = time.perf_counter() - start
    print(f"{len(chosen)} groups in {seconds:.0f} s: " + ", ".join(f"{n} {s}" for s, n in outcomes.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
