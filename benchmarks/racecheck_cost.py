"""What the every-member racecheck costs, and what it scales with: one dataset verified
(timing off) once per setting of the sampled blocks per launch and the racecheck processes
per GPU, printing each run's racecheck stage (wall) and its children's run seconds.

Used to choose issue 37's racecheck sample: a racecheck hazard is a property of one block's
accesses between barriers, so the sample's size matters only through the code paths its
blocks take, while its cost is what the verifier's wall time pays.

Usage: python benchmarks/racecheck_cost.py DATASET [--settings 8x4,8x1,1x1] [--groups PATTERN]
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402
from verify import runner  # noqa: E402
from verify.probes import sanitize  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--settings", default="8x4,8x1,2x1,1x4",
                        help="BLOCKSxPROCESSES, comma-separated")
    parser.add_argument("--groups", default=None)
    args = parser.parse_args()
    table = []
    for setting in args.settings.split(","):
        blocks, processes = (int(x) for x in setting.split("x"))
        sanitize.RACECHECK_FEW_BLOCKS = blocks
        runner.RACECHECK_PROCESSES = processes
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            summary = runner.verify_dataset(args.dataset, out, timing=False, groups=args.groups, progress=False)
            wall = time.perf_counter() - start
            rows = read_records(out)
        stages = summary.stage_seconds
        notes = collections.Counter(str(((r.provenance or {}).get("verify") or {}).get("racecheck", ""))[:60]
                                    for r in rows if r.status == "passed")
        races = sum(r.status == "race_detected" for r in rows)
        table.append((setting, len(rows), wall, stages.get("racecheck", 0.0), stages.get("racecheck.run", 0.0),
                      stages.get("racecheck.prepare", 0.0), stages.get("racecheck.load", 0.0), races))
        print(f"{setting}: {dict(collections.Counter(r.status for r in rows))} racecheck notes {dict(notes)}",
              flush=True)
    print("| blocks x processes | rows | wall s | racecheck stage s | children run s | prepare s | load s | race_detected |")
    print("|---|---|---|---|---|---|---|---|")
    for setting, rows, wall, stage, run, prepare, load, races in table:
        print(f"| {setting} | {rows} | {wall:.1f} | {stage:.1f} | {run:.1f} | {prepare:.1f} | {load:.1f} | {races} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
