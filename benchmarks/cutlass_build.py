"""Kernels per CPU-minute: CUTLASS kernels compiled as one batched nvcc call, one call per
kernel on the same minimal source, and (``--profiler-source``) one call per kernel on the
CUTLASS profiler's own generated ``.cu`` (how the public cutlass_ptx set was made).

Every path compiles the same kernels; the script checks that each kernel's entry PTX is
identical after ``ptx_tools.normalize_ptx``, and reports cold (no cache) and warm (content
cache hit) throughput.

    python benchmarks/cutlass_build.py --family 'cutlass_tensorop_bf16_s16816gemm_bf16_[0-9]*' --kernels 4
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ptx_tools import compile_cuda, normalize_ptx, split_module  # noqa: E402

from builders.cutlass import catalog  # noqa: E402
from builders.cutlass.compile import BASE_FLAGS, compile_to_ptx, cutlass_include_dirs  # noqa: E402
from builders.cutlass.source import kernel_source  # noqa: E402


def _child_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(fn):
    cpu, wall = _child_cpu_seconds(), time.perf_counter()
    result = fn()
    return result, _child_cpu_seconds() - cpu, time.perf_counter() - wall


def _entry_of(spec, ptx: str) -> str:
    """The kernel's normalised standalone entry module from a compiled module."""
    modules = split_module(ptx)
    token = f"{len(spec.name)}{spec.name}E"
    (entry,) = [e for e in modules if token in e]
    return normalize_ptx(modules[entry])


def profiler_source(spec, folder: Path) -> str:
    """The .cu the profiler build generates for this one kernel (EmitGemmConfigurationLibrary)."""
    from cutlass_library.gemm_operation import EmitGemmConfigurationLibrary
    op = catalog.load_manifest_operations(spec.sm)[spec.name]
    with EmitGemmConfigurationLibrary(str(folder), spec.name) as emitter:
        emitter.emit(op)
    return (folder / f"{spec.name}.cu").read_text()


def compile_profiler_source(spec, arch: str, extra_includes=()) -> str:
    root = cutlass_include_dirs()[0].parent
    includes = cutlass_include_dirs() + [root / "tools" / "library" / "include",
                                         root / "tools" / "library" / "src", *extra_includes]
    with tempfile.TemporaryDirectory(prefix="ptxds_profiler_src_") as tmp:
        source = profiler_source(spec, Path(tmp))
    return compile_cuda(source, arch, flags=BASE_FLAGS, include_dirs=includes, timeout=1800)


def _rate(n: int, cpu: float, wall: float) -> dict:
    return {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
            "kernels_per_cpu_minute": round(60 * n / cpu, 2) if cpu else None}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="cutlass_tensorop_bf16_s16816gemm_bf16_[0-9]*")
    parser.add_argument("--arch", default="sm_80")
    parser.add_argument("--kernels", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profiler-source", action="store_true",
                        help="also compile the profiler's generated .cu, one nvcc call per kernel")
    parser.add_argument("--curand-include", default=None,
                        help="folder with curand_kernel.h (the profiler's sources include it; e.g. "
                             "from the nvidia-curand wheel's nvidia/cu13/include)")
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

    batched_entries = {s.name: _entry_of(s, batched) for s in specs}
    single_entries = {s.name: _entry_of(s, ptx) for s, ptx in zip(specs, singles)}
    report = {
        "kernels": [s.name for s in specs], "arch": args.arch,
        "batched": _rate(n, batched_cpu, batched_wall),
        "one_call_per_kernel": _rate(n, single_cpu, single_wall),
        "speedup": round(single_cpu / batched_cpu, 2),
        "warm_cache_wall_s": round(warm_wall, 4),
        "identical_normalised_entry_ptx": all(batched_entries[s.name] == single_entries[s.name] for s in specs),
    }
    if args.profiler_source:
        profiler, prof_cpu, prof_wall = _timed(
            lambda: [compile_profiler_source(s, args.arch, [args.curand_include] if args.curand_include else [])
                     for s in specs])
        prof_entries = {s.name: _entry_of(s, ptx) for s, ptx in zip(specs, profiler)}
        report["profiler_source_one_call_per_kernel"] = dict(
            _rate(n, prof_cpu, prof_wall), ptx_bytes=[len(p) for p in profiler],
            speedup_of_batched=round(prof_cpu / batched_cpu, 2),
            identical_normalised_entry_ptx=all(prof_entries[s.name] == batched_entries[s.name] for s in specs))
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
