"""Kernels per CPU-minute: CUTLASS kernels compiled as one batched nvcc call vs one call each.

Both paths compile the same kernels from the same minimal instantiation source; the script
checks that every kernel's entry PTX is identical after normalisation, and reports cold
(no cache) and warm (content cache hit) throughput.

    python benchmarks/cutlass_build.py --family 'cutlass_tensorop_bf16_s16816gemm_bf16_*' --kernels 4
"""
from __future__ import annotations

import argparse
import json
import resource
import time

from builders import cutlass_catalog as catalog
from builders.cutlass_compile import compile_to_ptx
from builders.cutlass_ptx import normalize, split_entries
from builders.cutlass_source import kernel_source


def _child_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(fn):
    cpu, wall = _child_cpu_seconds(), time.perf_counter()
    result = fn()
    return result, _child_cpu_seconds() - cpu, time.perf_counter() - wall


def _entries_by_kernel(specs, ptx_modules: dict) -> dict:
    out = {}
    for spec in specs:
        token = f"{len(spec.name)}{spec.name}E"
        (entry,) = [e for e in ptx_modules if token in e]
        out[spec.name] = normalize(ptx_modules[entry])
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="cutlass_tensorop_bf16_s16816gemm_bf16_*")
    parser.add_argument("--arch", default="sm_80")
    parser.add_argument("--kernels", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    specs = catalog.sample_kernels(catalog.enumerate_kernels((args.family,), (args.arch,)),
                                   args.kernels, args.seed)
    n = len(specs)

    batched, batched_cpu, batched_wall = _timed(
        lambda: compile_to_ptx(kernel_source(specs), args.arch, use_cache=False).ptx)
    singles, single_cpu, single_wall = _timed(
        lambda: [compile_to_ptx(kernel_source([s]), args.arch, use_cache=False).ptx for s in specs])
    compile_to_ptx(kernel_source(specs), args.arch)  # fill the cache
    _, _, warm_wall = _timed(lambda: compile_to_ptx(kernel_source(specs), args.arch))

    batched_entries = _entries_by_kernel(specs, split_entries(batched))
    single_entries = {}
    for spec, ptx in zip(specs, singles):
        single_entries.update(_entries_by_kernel([spec], split_entries(ptx)))
    identical = all(batched_entries[s.name] == single_entries[s.name] for s in specs)

    report = {
        "kernels": [s.name for s in specs], "arch": args.arch,
        "batched": {"cpu_s": round(batched_cpu, 2), "wall_s": round(batched_wall, 2),
                    "kernels_per_cpu_minute": round(60 * n / batched_cpu, 2)},
        "one_call_per_kernel": {"cpu_s": round(single_cpu, 2), "wall_s": round(single_wall, 2),
                                "kernels_per_cpu_minute": round(60 * n / single_cpu, 2)},
        "speedup": round(single_cpu / batched_cpu, 2),
        "warm_cache_wall_s": round(warm_wall, 4),
        "identical_normalised_entry_ptx": identical,
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
