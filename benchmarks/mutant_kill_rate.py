"""Kill rate per mutation operator and pass rate of rewritten members, from datasets that
``ptxds rewrite`` extended. Verifies each dataset first (equivalence only, no timing)
unless it is already verified, then prints a markdown table last.

Usage: python benchmarks/mutant_kill_rate.py DATASET [DATASET ...] [--work DIR] [--kernel-timeout S]
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dataset_spec.model import BUILD_STATUSES  # noqa: E402
from dataset_spec.shards import read_records  # noqa: E402
from ptxds.pairs import KILLED_STATUSES  # noqa: E402


def verified_dir(dataset: Path, work: Path, kernel_timeout: float) -> Path:
    records = read_records(dataset)
    if records and not any(r.status in BUILD_STATUSES and r.status != "build_failed" for r in records):
        return dataset  # verified already
    from ptxds.pairs import write_pairs
    from verify import verify_dataset
    out = work / f"{dataset.name}-verified"
    summary = verify_dataset(dataset, out, timing=False, kernel_timeout=kernel_timeout, progress=False)
    write_pairs(out)
    print(f"== {dataset}\n{summary.format()}", flush=True)
    return out


def tally(records: list) -> tuple:
    mutants = defaultdict(Counter)   # operator -> outcome -> count
    rewrites = defaultdict(Counter)  # operator -> status -> count
    failures = []
    for r in records:
        mutation = r.variant.get("mutation")
        if mutation:
            outcome = ("killed" if r.status in KILLED_STATUSES else "survived" if r.status == "passed"
                       else "unlabelled")
            mutants[mutation][outcome] += 1
            mutants[mutation][r.status] += 1
        elif "rewrites" in r.variant:
            for op in r.variant["rewrites"]:
                rewrites[op][r.status] += 1
            if r.status != "passed":
                failures.append((r.group_id, r.variant["rewrites"], r.status, r.status_message[:120]))
    return mutants, rewrites, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ptxds-mutants"))
    parser.add_argument("--kernel-timeout", type=float, default=8.0)
    args = parser.parse_args()
    records = []
    for dataset in args.datasets:
        records += read_records(verified_dir(dataset, args.work, args.kernel_timeout))
    mutants, rewrites, failures = tally(records)
    for failure in failures:
        print("rewrite did not pass:", *failure)
    survivors = [(r.group_id, r.provenance.get("trace")) for r in records
                 if r.variant.get("mutation") and r.status == "passed"]
    for group, trace in survivors:
        print("surviving mutant:", group, trace)
    print("\n| mutation operator | mutants | killed | survived | unlabelled | kill rate | outcomes |")
    print("|---|---|---|---|---|---|---|")
    total = Counter()
    for op in sorted(mutants):
        c = mutants[op]
        labelled = c["killed"] + c["survived"]
        total.update({k: c[k] for k in ("killed", "survived", "unlabelled")})
        outcomes = ", ".join(f"{s} {n}" for s, n in sorted(c.items()) if s not in ("killed", "survived", "unlabelled"))
        rate = f"{100 * c['killed'] / labelled:.0f}%" if labelled else "-"
        print(f"| {op} | {labelled + c['unlabelled']} | {c['killed']} | {c['survived']} | {c['unlabelled']} | {rate} | {outcomes} |")
    labelled = total["killed"] + total["survived"]
    rate = f"{100 * total['killed'] / labelled:.1f}%" if labelled else "-"
    print(f"| **all** | {labelled + total['unlabelled']} | {total['killed']} | {total['survived']} | "
          f"{total['unlabelled']} | **{rate}** | |")
    print("\n| rewrite operator | members using it | passed | pass rate |")
    print("|---|---|---|---|")
    members = [r for r in records if "rewrites" in r.variant]
    for op in sorted(rewrites):
        n, ok = sum(rewrites[op].values()), rewrites[op]["passed"]
        print(f"| {op} | {n} | {ok} | {100 * ok / n:.0f}% |")
    ok = sum(r.status == "passed" for r in members)
    print(f"| **all rewritten members** | {len(members)} | {ok} | **{100 * ok / max(len(members), 1):.1f}%** |")


if __name__ == "__main__":
    main()
