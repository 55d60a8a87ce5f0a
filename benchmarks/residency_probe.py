"""How a row runs while half the SMs are held (verify/device/residency.py): the launch sequence's
wall time, plain and held, for the first rows of a dataset. A correct kernel should take
about twice as long held, not orders of magnitude longer (docs/runs/run-076-082.md, run 78: a
holder whose every thread polled host memory slowed every kernel 700-3000x).

Usage: python benchmarks/residency_probe.py DATASET [ROWS]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import read_records  # noqa: E402
from verify.device.driver import Context, check, cu  # noqa: E402
from verify.trials.inputs import make_trial_inputs  # noqa: E402
from verify.device.residency import SmHolder  # noqa: E402
from verify.member.row import load_row  # noqa: E402


def wall(row, stream, holder=None) -> float:
    held = holder.hold() if holder is not None else 0
    t0 = time.perf_counter()
    for launch in row.launches:
        launch.enqueue()
    if holder is not None:
        late = holder.finish_within(stream, 2.0)
    check(cu.cuStreamSynchronize(stream), "sync")
    seconds = time.perf_counter() - t0
    return seconds * 1e3, held, (late if holder is not None else None)


def main() -> None:
    rows = [r for r in read_records(sys.argv[1]) if r.status == "built"][: int(sys.argv[2]) if len(sys.argv) > 2 else 3]
    ctx = Context(0)
    holders = {"held": SmHolder(ctx.info.sm_count)}
    for record in rows:
        row = load_row(record, ctx.stream)
        trial = make_trial_inputs(record.problem, record.group_id, 0)
        row.prepare(trial.storage, trial.seed)
        plain = [wall(row, ctx.stream)[0] for _ in range(3)]
        line = [f"{record.name[:50]:50} plain {min(plain):8.3f} ms"]
        for name, holder in holders.items():
            ms, held, late = wall(row, ctx.stream, holder)
            line.append(f"{name} {ms:8.3f} ms held {held} late {late}")
        print(" | ".join(line), flush=True)
        row.free()


if __name__ == "__main__":
    main()
