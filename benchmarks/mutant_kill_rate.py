"""Kill rate per mutation operator and pass rate of rewritten members, from datasets that
``ptxds rewrite`` extended. Verifies each dataset first (equivalence only, no timing)
unless it is already verified, then prints a markdown table last.

Two kill rates: over all mutants with a verdict, and over exercised mutants (killed or
survived; an ``unexercised`` mutant's changed instruction never ran, or ran without ever
altering a value its thread used, the verifier's coverage and divergence probes say, so it
is equivalent for its problem). Every survivor is listed with its coverage counts (the
mutant's and its base's at the same site), the reason the verifier recorded for it (a proof
from the PTX or an observation from the trials, labelled so) and its diff, then a count of
survivors per reason; every unexercised mutant with its diff and the verifier's note; the
outcomes of delay injection (``provenance.verify.delays``) per operator. The
datasets may mix sources (Triton, CUTLASS, Mirage, handhack): a second table gives the
rates per source of the mutants' bases (source/arch), and the mutants ``ptxds rewrite``
left out as provably equivalent (``provenance.excluded``, and the barriers each
``drop_barrier`` trace lists) are counted per reason.

Usage: python benchmarks/mutant_kill_rate.py DATASET [DATASET ...] [--work DIR] [--kernel-timeout S]
       [--racecheck]

``--racecheck`` also runs the surviving mutants and their bases under compute-sanitizer
(``ptxds verify --sanitize`` on just those rows) and reports which survivors have
shared-memory race hazards that their base has not.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dataset_spec.model import BUILD_STATUSES  # noqa: E402
from dataset_spec.store.shards import read_records  # noqa: E402
from dataset_spec.labels import kill_rates, mutant_class, survivor_reason  # noqa: E402


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


def racy_survivors(verified: Path, work: Path, kernel_timeout: float) -> dict:
    """kernel_id -> racecheck hazards of surviving mutants whose base has none."""
    import shutil
    from dataset_spec.model import unverified
    from dataset_spec.store.shards import ShardWriter
    from verify import verify_dataset
    records = read_records(verified)
    by_id = {r.kernel_id: r for r in records}
    survivors = [r for r in records if r.variant.get("mutation") and r.status == "passed"]
    if not survivors:
        return {}
    rows = {r.kernel_id: r for r in survivors}
    rows.update({r.variant["base"]: by_id[r.variant["base"]] for r in survivors if r.variant["base"] in by_id})
    fresh = [unverified(r) for r in rows.values()]
    sub, out = work / f"{verified.name}-survivors", work / f"{verified.name}-survivors-sanitized"
    shutil.rmtree(sub, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    ShardWriter(sub).write(fresh)
    verify_dataset(sub, out, timing=False, sanitize=True, kernel_timeout=kernel_timeout, progress=False)

    def hazards(record):
        report = json.loads(record.sanitizer or "{}").get("racecheck") or {}
        return report.get("errors") or 0
    checked = {r.kernel_id: r for r in read_records(out)}
    racy = {}
    for r in survivors:
        mine, base = checked.get(r.kernel_id), checked.get(r.variant["base"])
        if mine is not None and base is not None and hazards(mine) > 0 and hazards(base) == 0:
            racy[r.kernel_id] = hazards(mine)
        print("racecheck:", r.group_id, r.variant["mutation"], "mutant", mine and hazards(mine),
              "base", base and hazards(base), flush=True)
    return racy


def source_of(record, by_id: dict) -> str:
    """The mutant's base's source and arch (a mutant's own source is ``rewrite``)."""
    base = by_id.get(record.variant.get("base"))
    return f"{base.source if base else '?'}/{record.arch}"


def tally(records: list) -> tuple:
    mutants = defaultdict(Counter)   # operator -> outcome -> count
    rewrites = defaultdict(Counter)  # operator -> status -> count
    failures = []
    classes = tally_classes(records)
    for r in records:
        mutation = r.variant.get("mutation")
        if mutation:
            mutants[mutation][classes[r.kernel_id] or "unlabelled"] += 1
            mutants[mutation][r.status] += 1
        elif "rewrites" in r.variant:
            for op in r.variant["rewrites"]:
                rewrites[op][r.status] += 1
            if r.status != "passed":
                failures.append((r.group_id, r.variant["rewrites"], r.status, r.status_message[:120]))
    return mutants, rewrites, failures


def tally_classes(records: list) -> dict:
    """kernel_id -> killed / survived / equivalent / None for every mutant."""
    by_id = {r.kernel_id: r for r in records}
    out = {}
    for r in records:
        if r.variant.get("mutation"):
            base = by_id.get(r.variant.get("base"))
            out[r.kernel_id] = mutant_class(r.status, r.sanitizer, base.sanitizer if base else None, base is not None)
    return out


def print_by_source(records: list, classes: dict) -> None:
    """Kill rates per source of the mutants' bases, with dropped barriers apart."""
    by_id = {r.kernel_id: r for r in records}
    rows = defaultdict(Counter)
    for r in records:
        if r.kernel_id in classes:
            source, kind = source_of(r, by_id), classes[r.kernel_id] or "unlabelled"
            rows[source][kind] += 1
            if r.variant["mutation"] == "drop_barrier":
                rows[source][f"barrier_{kind}"] += 1
    print("\n| source | mutants | killed | survived | unexercised | unlabelled | kill rate (exercised) "
          "| drop_barrier killed / exercised |")
    print("|---|---|---|---|---|---|---|---|")
    total = Counter()
    for source in sorted(rows) + ["**all**"]:
        c = total if source == "**all**" else rows[source]
        if source != "**all**":
            total.update(c)
        exercised = kill_rates(c["killed"], c["survived"], c["equivalent"])[1]
        barriers = c["barrier_killed"] + c["barrier_survived"]
        print(f"| {source} | {c['killed'] + c['survived'] + c['equivalent'] + c['unlabelled']} | {c['killed']} "
              f"| {c['survived']} | {c['equivalent']} | {c['unlabelled']} "
              f"| {'-' if exercised is None else f'{100 * exercised:.1f}%'} "
              f"| {c['barrier_killed']} / {barriers} |")


def print_exclusions(records: list) -> None:
    """Mutants ``ptxds rewrite`` drew and left out because the PTX proves them equivalent,
    and the barriers ``drop_barrier`` could not take (counted once per base)."""
    left_out, barriers, seen = Counter(), Counter(), set()
    for r in records:
        for entry in r.provenance.get("excluded") or []:
            left_out[entry["op"], entry["reason"]] += 1
        for step in r.provenance.get("trace") or []:
            for entry in step.get("excluded") or []:
                key = (r.variant.get("base"), entry["line"])
                if key not in seen:
                    seen.add(key)
                    barriers[entry["reason"]] += 1
    if not left_out and not barriers:
        return
    print("\n| left out at mutation time | reason | count |\n|---|---|---|")
    for (op, reason), n in sorted(left_out.items()):
        print(f"| {op} mutant (redrawn) | {reason} | {n} |")
    for reason, n in sorted(barriers.items()):
        print(f"| barrier no drop_barrier takes (per base) | {reason} | {n} |")


def print_delays(records: list) -> None:
    """Delay injection's outcomes (``provenance.verify.delays``) per mutation operator."""
    outcomes = Counter()
    for r in records:
        delays = (r.provenance.get("verify") or {}).get("delays")
        if delays and r.variant.get("mutation"):
            outcomes[r.variant["mutation"], delays.get("outcome", "unknown")] += 1
    if not outcomes:
        return
    print("\n| delay injection | outcome | mutants |\n|---|---|---|")
    for (op, outcome), n in sorted(outcomes.items()):
        print(f"| {op} | {outcome} | {n} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ptxds-mutants"))
    parser.add_argument("--kernel-timeout", type=float, default=8.0)
    parser.add_argument("--racecheck", action="store_true",
                        help="run surviving mutants and their bases under compute-sanitizer racecheck")
    args = parser.parse_args()
    records, racy = [], {}
    for dataset in args.datasets:
        verified = verified_dir(dataset, args.work, args.kernel_timeout)
        records += read_records(verified)
        if args.racecheck:
            racy.update(racy_survivors(verified, args.work, max(args.kernel_timeout, 120.0)))
    mutants, rewrites, failures = tally(records)
    for failure in failures:
        print("rewrite did not pass:", *failure)
    classes = tally_classes(records)
    reasons = Counter()
    for r in records:
        if classes.get(r.kernel_id) == "survived":
            coverage = (r.provenance.get("verify") or {}).get("coverage") or {}
            reason = survivor_reason(r.provenance)
            said = (f"{reason['kind']}: {reason['reason']}: {reason['detail']}" if reason
                    else "no reason recorded (verified before survivor reasons)")
            reasons[(reason or {}).get("kind", "none"), (reason or {}).get("reason", "-")] += 1
            print(f"surviving mutant: {r.group_id} {r.variant['mutation']} {r.kernel_id} coverage "
                  f"{coverage.get('counts', 'unknown')} base {coverage.get('base_counts', 'unknown')} "
                  f"{coverage.get('reason', '')}\n  reason: {said}\n{r.provenance.get('diff', '')}")
    for r in records:
        if classes.get(r.kernel_id) == "equivalent":
            print(f"unexercised mutant: {r.group_id} {r.variant['mutation']} {r.kernel_id}\n  note: "
                  f"{r.status_message[:400]}\n{r.provenance.get('diff', '')}")
    if reasons:
        print("\n| survivor reason | kind | survivors |\n|---|---|---|")
        for (kind, code), n in sorted(reasons.items()):
            print(f"| {code} | {kind} | {n} |")
    racy_by_op = Counter(r.variant["mutation"] for r in records if r.kernel_id in racy)
    print("\n| mutation operator | mutants | killed | survived | unexercised | unlabelled | kill rate (all) "
          "| kill rate (exercised) | survivors with race hazards | outcomes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    total = Counter()
    kinds = ("killed", "survived", "equivalent", "unlabelled")

    def rates(c) -> list:
        rates = kill_rates(c["killed"], c["survived"], c["equivalent"])
        return ["-" if v is None else f"{100 * v:.1f}%" for v in rates]
    for op in sorted(mutants):
        c = mutants[op]
        total.update({k: c[k] for k in kinds})
        outcomes = ", ".join(f"{s} {n}" for s, n in sorted(c.items()) if s not in kinds)
        every, exercised = rates(c)
        print(f"| {op} | {sum(c[k] for k in kinds)} | {c['killed']} | {c['survived']} | {c['equivalent']} "
              f"| {c['unlabelled']} | {every} | {exercised} | {racy_by_op[op] if racy else '-'} | {outcomes} |")
    every, exercised = rates(total)
    print(f"| **all** | {sum(total[k] for k in kinds)} | {total['killed']} | {total['survived']} | "
          f"{total['equivalent']} | {total['unlabelled']} | **{every}** | **{exercised}** | "
          f"{sum(racy_by_op.values()) if racy else '-'} | |")
    exercised_count = total["killed"] + total["survived"]
    if racy and exercised_count:
        print(f"\nKilled by the trials or by racecheck: {total['killed'] + len(racy)} of {exercised_count} "
              f"exercised ({100 * (total['killed'] + len(racy)) / exercised_count:.1f}%).")
    print_by_source(records, classes)
    print_delays(records)
    print_exclusions(records)
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
