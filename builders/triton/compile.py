"""Compiling a Triton kernel for an explicit target and turning its PTX and metadata into
rows: the pinned PTX ISA and arch table, the ASTSource signature of a kernel's params, the
compile options and the key of what a compile depends on (``compile_key``), and the Launch
with Triton's trailing scratch pointers (``make_launch``), toolchain and provenance.

The suite (``builder.py``), ``triton_jit``, ``triton_dump`` and ``handhack`` share these.
``compile_kernel`` compiles a kernel of the suite (``kernels.py``) with
``triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32))`` pinned to PTX ISA 8.7;
a launch's block is 32 x num_warps (the PTX carries ``.reqntid``), its cluster num_ctas, its
dynamic shared memory ``metadata.shared``, and the two trailing ``.u64`` scratch pointers
Triton 3.x appends (global scratch, profile scratch) are null when their size is 0,
otherwise a scratch buffer of size x programs bytes.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from builders.base import shared_memory_misfit
from dataset_spec.model import Arg, Buffer, Launch

PTX_ISA = 87
ARCH_CC = {"sm_80": 80, "sm_90a": 90, "sm_90": 90}
TRITON_DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
SCALAR_TYPES = {"i32": "s32", "i64": "s64", "u32": "u32", "u64": "u64", "fp32": "f32",
                "f32": "f32", "fp64": "f64", "i16": "s16", "i8": "s8", "i1": "b8"}
SCRATCH_PARAMS = (("global_scratch", "global_scratch_size"), ("profile_scratch", "profile_scratch_size"))


def config_label(config: dict) -> str:
    return "_".join(f"{k}{v}" for k, v in config.items())


# --------------------------------------------------------------------------- compile

def triton_signature(params: list, kernel_arg_names: list, config: dict):
    """(signature, constexprs, attrs) for ASTSource, in the kernel's argument order."""
    by_name = {p["name"]: p for p in params}
    signature, constexprs, attrs = {}, {}, {}
    for index, arg in enumerate(kernel_arg_names):
        p = by_name.get(arg)
        if p is None:  # a tl.constexpr taken from the config (BLOCK_SIZE, ...)
            signature[arg] = "constexpr"
            constexprs[arg] = config[arg]
        elif p["constexpr"]:
            signature[arg] = "constexpr"
            constexprs[arg] = p["value"]
        else:
            signature[arg] = "*" + TRITON_DTYPES[p["dtype"]] if p["kind"] == "ptr" else p["dtype"]
            if p["divisible"]:
                attrs[(index,)] = [["tt.divisibility", 16]]
    return signature, constexprs, attrs


def compile_options(config: dict) -> dict:
    return {"num_warps": config["num_warps"], "num_stages": config["num_stages"],
            "num_ctas": config.get("num_ctas", 1), "ptx_version": PTX_ISA}


def compile_kernel(kernel_name: str, params: list, config: dict, arch: str):
    """Compile one suite kernel for ``arch``; returns triton's CompiledKernel."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from builders.triton import kernels as triton_kernels

    fn = getattr(triton_kernels, kernel_name)
    signature, constexprs, attrs = triton_signature(params, kernel_arg_names(kernel_name), config)
    source = ASTSource(fn, signature, constexprs, attrs)
    return triton.compile(source, target=GPUTarget("cuda", ARCH_CC[arch], 32),
                          options=compile_options(config))


# --------------------------------------------------------------------------- launches

def scratch_args(metadata: dict, programs: int, num_ctas: int) -> tuple[list, list]:
    """Args and scratch buffers for Triton's trailing global/profile scratch pointers."""
    args, buffers = [], []
    for name, size_key in SCRATCH_PARAMS:
        size = int(metadata.get(size_key) or 0)
        if size == 0:
            args.append(Arg.null())
            continue
        buffers.append(Buffer(name, "uint8", (size * programs * num_ctas,), "scratch"))
        args.append(Arg.buf(name))
    return args, buffers


def kernel_arg_names(kernel_name: str) -> list:
    from builders.triton import kernels as triton_kernels
    return list(getattr(triton_kernels, kernel_name).arg_names)


def runtime_args(params: list, arg_names: list) -> list:
    """Launch args for the runtime (non-constexpr) params, in the kernel's argument order."""
    by_name, args = {p["name"]: p for p in params}, []
    for p in (by_name[n] for n in arg_names if n in by_name):
        if p["constexpr"]:
            continue
        if p["kind"] == "ptr":
            args.append(Arg.buf(p["buffer"]))
        else:
            args.append(Arg.scalar(SCALAR_TYPES[p["dtype"]], p["value"]))
    return args


def make_launch(name: str, metadata: dict, grid: list, user_args: list) -> tuple[Launch, list]:
    """A Launch (and scratch buffers) from triton's metadata and the problem's grid."""
    num_ctas = int(metadata.get("num_ctas") or 1)
    grid = list(grid) + [1] * (3 - len(grid))
    programs = grid[0] * grid[1] * grid[2]
    extra_args, scratch = scratch_args(metadata, programs, num_ctas)
    launch = Launch(entry=name, grid=(grid[0] * num_ctas, grid[1], grid[2]),
                    block=(32 * int(metadata["num_warps"]), 1, 1), cluster=(num_ctas, 1, 1),
                    dynamic_smem=int(metadata.get("shared") or 0), args=user_args + extra_args)
    return launch, scratch


def metadata_dict(metadata: Any) -> dict:
    if isinstance(metadata, dict):
        return metadata
    return metadata._asdict() if hasattr(metadata, "_asdict") else dict(vars(metadata))


def one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[-1] if lines else ""
    return f"{type(exc).__name__}: {text}"[:500]


def triton_version() -> str:
    import triton
    return triton.__version__


def toolchain() -> dict:
    return {"triton": triton_version(), "ptx_isa": f"{PTX_ISA // 10}.{PTX_ISA % 10}"}


def provenance(kernel: str) -> dict:
    return {"generator": "ptxds builders.triton", "kernel": f"builders.triton.kernels:{kernel}",
            "triton_version": triton_version(), "licence": "MIT (Triton)"}


# Config keys that only shape the launch (the grid), never the compiled code.
LAUNCH_ONLY_KEYS = ("programs",)


def compile_key(payload: dict) -> str:
    """What Triton's compile depends on: kernel, arch, each param's type, constexpr value
    and divisibility hint, and the compile-time config. Payloads with equal keys compile to
    the same PTX, whatever sizes their runtime scalars hold."""
    params = [[p["name"], p["kind"], p.get("dtype"), p["constexpr"],
               p.get("value") if p["constexpr"] else None, p.get("divisible", False)]
              for p in payload["params"]]
    config = {k: v for k, v in payload["config"].items() if k not in LAUNCH_ONLY_KEYS}
    text = json.dumps([payload["kernel"], payload["arch"], params, config], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_shared_memory(metadata: dict, arch: str) -> None:
    misfit = shared_memory_misfit(arch, int(metadata.get("shared") or 0))
    if misfit:
        raise RuntimeError(misfit)
