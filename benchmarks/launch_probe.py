"""Run each selected row of a dataset once, alone, in its own process, and say how its
launch ends: the driver's error (a fault is sticky, hence one process per row and mode) or
the trial-0 output's error against the float64 reference.

It isolates a crash from the verifier: ``plain`` loads the PTX through the driver JIT into
exact-size allocations, ``fenced`` uses the verifier's virtual-memory fences, ``cubin``
assembles the PTX as the verifier does (ptxas) first; ``before``, ``extra``, ``noise`` and
``trialK`` add the verifier's other ingredients one at a time (see ``child``).
``--memcheck`` runs each child under compute-sanitizer so a faulting access is named by
instruction and address.

Usage: python benchmarks/launch_probe.py DATASET [--match TEXT] [--limit N]
           [--modes plain,fenced,before,extra,noise,cubin,trial4] [--memcheck] [--timeout S]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def select(dataset: str, match: str, limit: int) -> list:
    from dataset_spec.store.shards import read_records
    rows = [r for r in read_records(dataset) if r.status not in ("build_failed", "not_applicable")
            and r.launches and all(part in f"{r.group_id} {r.name} {r.arch}" for part in match.split(","))]
    return rows[:limit] if limit else rows


def child(dataset: str, build_key: str, mode: str) -> dict:
    """One row, one mode: load, upload a trial's inputs, launch, synchronise, compare.
    Modes add one of the verifier's ingredients to ``plain`` (exact-size allocations, trial
    0, the driver JIT): ``fenced``/``before`` the virtual-memory fences in either placement,
    ``extra`` more dynamic shared memory, ``noise`` the concurrent noise kernel, ``cubin``
    the verifier's ptxas assembly, ``nvjitlink`` nvJitLink (which the verifier once used and
    no longer does), ``trialK`` trial K's inputs."""
    from dataset_spec.store.shards import read_records
    from verify.device.driver import Context, DriverError, NoiseKernel, check, cu, function_attribute
    from verify.trials.inputs import make_trial_inputs
    from verify.member.row import load_row
    record = next(r for r in read_records(dataset) if r.build_key == build_key)
    ctx = Context(0)
    page = None
    placement = "before" if mode == "before" else "after"
    if mode in ("fenced", "before"):
        from verify.member.fence import GuardPage
        page = GuardPage(ctx.info.ordinal)
    cubin = None
    if mode == "cubin":
        from verify.device.assembly_pool import assemble_for_gpu
        cubin = assemble_for_gpu(record.ptx, record.arch).cubin
    if mode == "nvjitlink":
        from verify.device.assembly_pool import nvjitlink_assemble
        cubin = nvjitlink_assemble(record.ptx, record.arch)
    trial = int(mode[5:]) if mode.startswith("trial") else 0
    out = {"row": record.name, "mode": mode}
    try:
        row = load_row(record, ctx.stream, cubin, guards=page is not None, guard_page=page)
        out["load_path"] = row.load_path
        function = row.module.function(record.launches[0].entry)
        out["static_smem"] = function_attribute(function, "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES")
        out["regs"] = function_attribute(function, "CU_FUNC_ATTRIBUTE_NUM_REGS")
        inputs = make_trial_inputs(record.problem, record.group_id, trial)
        row.prepare(inputs.storage, inputs.seed, placement=placement)
        launches = row.launch_set(placement, mode == "extra")
        if mode == "extra":
            out["smem_note"] = row.smem_note
        noise = NoiseKernel(ctx.info.sm_count) if mode == "noise" else None
        if noise:
            noise.enqueue()
        for launch in launches:
            launch.enqueue()
        check(cu.cuStreamSynchronize(ctx.stream), "cuStreamSynchronize")
        if noise:
            noise.synchronize()
    except DriverError as exc:
        out["error"] = f"{exc.name} in {exc.call}"
        return out
    try:
        out["errors"] = output_errors(record, row, inputs)
    except Exception as exc:  # the launch's outcome above is what matters; say why there is no comparison
        out["errors"] = f"no comparison: {type(exc).__name__}: {exc}"
    return out


def output_errors(record, row, inputs) -> dict:
    """Per output: the largest absolute error against the float64 reference, relative to the
    reference's largest magnitude, and NaN count."""
    import numpy as np

    from dataset_spec.ops import get_op
    from verify.trials.inputs import STORAGE_NUMPY, from_storage, storage_shape
    reference = get_op(record.problem.op).reference(inputs.values, record.problem)
    errors = {}
    for name, expected in reference.items():
        spec = record.problem.buffer(name)
        stored = row.buffers[name].download(STORAGE_NUMPY[spec.dtype], storage_shape(spec.dtype, spec.shape))
        got = from_storage(stored, spec.dtype, spec.shape)
        expected = np.asarray(expected, dtype=np.float64)
        scale = float(np.max(np.abs(expected))) or 1.0
        diff = np.abs(got - expected)
        errors[name] = {"max_abs": float(np.nanmax(diff)), "rel_to_max": float(np.nanmax(diff)) / scale,
                        "nan": int(np.isnan(got).sum())}
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--match", default="")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--modes", default="plain,fenced,cubin")
    parser.add_argument("--memcheck", action="store_true")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--child", nargs=2, metavar=("BUILD_KEY", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("PROBE " + json.dumps(child(args.dataset, *args.child)), flush=True)
        return 0
    sanitizer = shutil.which("compute-sanitizer")
    for record in select(args.dataset, args.match, args.limit):
        for mode in args.modes.split(","):
            command = [sys.executable, __file__, args.dataset, "--child", record.build_key, mode]
            if args.memcheck and sanitizer:
                command = [sanitizer, "--tool", "memcheck", "--print-limit", "3", *command]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
                lines = [ln for ln in done.stdout.splitlines() if ln.startswith("PROBE ")]
                result = lines[-1][6:] if lines else f"no result (exit {done.returncode}): {done.stderr.strip()[-600:]}"
                extra = ""
                if args.memcheck:
                    extra = "\n    " + "\n    ".join([ln for ln in (done.stdout + done.stderr).splitlines()
                                                    if ln.startswith("=========")][:14])
            except subprocess.TimeoutExpired:
                result, extra = f"timed out after {args.timeout:.0f} s", ""
            print(f"{record.group_id} {record.name} [{mode}]: {result}{extra}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
