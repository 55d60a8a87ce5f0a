"""Copy a seeded random sample of a built dataset's groups into a new dataset folder.

For measuring a dataset too large to verify whole within one GPU call: the sample's pass rate
and rows per minute stand for the whole set's, with the groups drawn evenly across the
dataset's first group-id component (a model, for the network sources) so no model is left out.

Usage: python benchmarks/sample_groups.py DATASET OUT --groups N [--seed S] [--arch ARCH]
"""
from __future__ import annotations

import argparse
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.store.shards import ShardWriter, read_records  # noqa: E402


def sample_group_ids(group_ids, count: int, seed: int) -> list:
    """``count`` group ids, drawn round-robin over the strata named by the id's second
    component (``inductor/<model-config>/<kernel>``), each stratum shuffled by ``seed``."""
    strata = defaultdict(list)
    for group_id in sorted(group_ids):
        parts = group_id.split("/")
        strata[parts[1] if len(parts) > 2 else parts[0]].append(group_id)
    rng = random.Random(seed)
    queues = [rng.sample(members, len(members)) for _, members in sorted(strata.items())]
    rng.shuffle(queues)
    chosen = []
    while len(chosen) < count and any(queues):
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.append(queue.pop())
    return sorted(chosen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("out")
    parser.add_argument("--groups", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arch", default=None, help="keep only rows of this arch")
    args = parser.parse_args()
    records = [r for r in read_records(args.dataset) if args.arch in (None, r.arch)]
    chosen = set(sample_group_ids({r.group_id for r in records}, args.groups, args.seed))
    kept = [r for r in records if r.group_id in chosen]
    with ShardWriter(args.out) as writer:
        writer.write(kept)
    readme = Path(args.dataset) / "README.md"
    if readme.exists():
        (Path(args.out) / "README.md").write_text(readme.read_text())
    print(f"{len(chosen)} groups, {len(kept)} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
