"""Stand-ins for Mirage's batch-8 saved muGraph files, made from the batch-1 files a checkout
has (``../shared/mirage/saved_mugraphs``), for timing builds where the upstream files cannot
be downloaded.

    python benchmarks/mirage_proxies.py OUT_DIR [--factor 8] [--from DIR]

Each ``<name>_bs1.json`` of the attention, rmsnorm and ntrans families becomes
``<name>_bs8proxy.json``: every kernel-level tensor's batch dimension (dim 0, the first
input's) is ``factor`` times larger and the grid axis that walks it has ``factor`` times
the blocks (an axis that walks nothing is given to it); where a tile holds the whole batch
dimension, the tile and every thread-block tensor of that batch grow with it. The
schedules, tile shapes and muGraph counts are those of the batch-1 file, so tensor sizes
(what float64 analysis costs) are those of the batch-8 files while the muGraph counts stay
those of batch 1. They are timing stand-ins, not Mirage's files: never a dataset's source.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("gqa_bs1", "mha_bs1", "mqa_bs1", "ntrans_bs1", "rmsnorm_bs1")
AXES = ("x", "y", "z")


def _dims(t: dict) -> list:
    return t["dim"][:int(t["num_dims"])]


def _scale_tensor(t: dict, batch: int, factor: int) -> None:
    if int(t["num_dims"]) >= 2 and t["dim"][0] == batch:
        t["dim"][0] = batch * factor


def _scale_customized(op: dict, batch: int, factor: int) -> None:
    g = op["bgraph"]
    maps = [tb.get("input_map") or tb.get("output_map") for tb in g["operators"]
            if tb["op_type"] in ("tb_input_op", "tb_output_op")]
    walking = {a for m in maps for a in AXES if int(m.get(a, -1)) == 0}
    if walking:  # a grid axis walks the batch in tiles: more blocks, same tiles
        for a in walking:
            g["grid_dim"][a] = int(g["grid_dim"][a]) * factor
    else:
        free = next((a for a in AXES if int(g["grid_dim"][a]) == 1 and all(int(m.get(a, -1)) == -1 for m in maps)),
                    None)
        if batch == 1 and free is not None:  # give the batch to an idle axis, one batch per block
            g["grid_dim"][free] = factor
            for tb in g["operators"]:
                if tb["op_type"] in ("tb_input_op", "tb_output_op"):
                    (tb.get("input_map") or tb.get("output_map"))[free] = 0
        else:  # the tiles hold the whole batch: they grow with it
            for tb in g["operators"]:
                for t in tb.get("input_tensors", []) + tb.get("output_tensors", []):
                    _scale_tensor(t, batch, factor)
    for tb in g["operators"]:
        if "dtensor" in tb:
            _scale_tensor(tb["dtensor"], batch, factor)


def scaled(graph: list, factor: int) -> list:
    graph = copy.deepcopy(graph)
    batch = next(_dims(op["output_tensors"][0])[0] for op in graph if op["op_type"] == "kn_input_op")
    for op in graph:
        if op["op_type"] == "kn_customized_op":
            _scale_customized(op, batch, factor)
        for t in op.get("input_tensors", []) + op.get("output_tensors", []):
            _scale_tensor(t, batch, factor)
    return graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--factor", type=int, default=8)
    parser.add_argument("--from", dest="source", type=Path,
                        default=ROOT / ".." / "shared" / "mirage" / "saved_mugraphs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in FAMILIES:
        path = args.source / f"{name}.json"
        if not path.exists():
            sys.exit(f"{path} not found: pass --from DIR (a folder of Mirage's batch-1 saved muGraphs)")
        graphs = [scaled(g, args.factor) for g in json.loads(path.read_text())]
        target = args.out / f"{name[:-4]}_bs{args.factor}proxy.json"
        target.write_text(json.dumps(graphs))
        print(f"{target}: {len(graphs)} muGraphs")


if __name__ == "__main__":
    main()
