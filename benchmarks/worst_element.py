"""Where one member disagrees with its reference: runs a row of a dataset on the GPU on every
trial (host-drawn inputs, as `ptxds verify --inputs host`), prints per trial the worst element's
|err|/bound with its output, reference and bound, and saves each trial's inputs, output,
reference and bound to OUT/<trial>.npz for study on a machine without a GPU.

Usage: python benchmarks/worst_element.py DATASET ROW_NAME_GLOB OUT
"""
import fnmatch
import sys
from pathlib import Path

import numpy as np

from dataset_spec.store.shards import read_records
from verify.judge.compare import error_stats
from verify.trials.inputs import exact_values
from verify.runner import prepare_problem
from verify.worker import GpuWorker


def main(dataset: str, pattern: str, out: str) -> int:
    rows = [r for r in read_records(dataset) if fnmatch.fnmatch(r.name, pattern)]
    if not rows:
        print(f"no row of {dataset} matches {pattern!r}")
        return 2
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    worker = GpuWorker(0)
    worker.start()
    try:
        for index, row in enumerate(rows):
            prepared = prepare_problem(row.problem, row.group_id, reference="numpy")
            if prepared.refusal:
                print(f"{row.name}: refused: {prepared.refusal}")
                continue
            for trial, storage, reference in zip(prepared.trials, prepared.host_storage(), prepared.references):
                payload = [(trial.trial, f"{row.problem.digest()}:{trial.trial}", trial.seed, storage)]
                reply = worker.run_outputs([(row.name, row.to_json())], row.group_id, payload, 60.0)
                run = (reply.get("runs") or {}).get(row.name) or reply
                if "outputs" not in run:
                    print(f"{row.name} trial {trial.trial} ({trial.kind}): {run.get('error')}: {run.get('message')}")
                    continue
                saved = {f"in_{k}": np.asarray(v) for k, v in trial.values.items()}
                for spec in prepared.specs:
                    got = exact_values(run["outputs"][spec.name], spec.dtype, spec.shape)
                    bound = spec.bounds[trial.trial]
                    stats = error_stats(got, reference[spec.name], bound, spec.dtype)
                    ratio = np.abs(got - reference[spec.name]) / np.broadcast_to(bound, got.shape)
                    worst = int(np.nanargmax(np.where(np.isnan(ratio), np.inf, ratio)))
                    print(f"{row.name[:60]} trial {trial.trial} ({trial.kind}) {spec.name}: "
                          f"{stats.n_bad}/{stats.n_total} bad, worst flat {worst}: got {got.flat[worst]!r} "
                          f"ref {reference[spec.name].flat[worst]!r} bound {np.broadcast_to(bound, got.shape).flat[worst]!r} "
                          f"ratio {ratio.flat[worst]:.3g}")
                    saved.update({f"out_{spec.name}": got, f"ref_{spec.name}": reference[spec.name],
                                  f"bound_{spec.name}": np.broadcast_to(bound, got.shape)})
                np.savez_compressed(out_dir / f"row{index}-trial{trial.trial}.npz", **saved)
    finally:
        worker.close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
