"""Triton builders: compile the built-in @triton.jit suite for explicit targets (no GPU needed),
and ingest existing Triton cache / kernel-dump directories.

``TritonBuilder`` ("triton") lists one work item per (group, config, arch). A group is one
function at one problem size (e.g. ``triton/softmax/float32/M1823xN781``); its members are
the configs (block sizes, num_warps, num_stages). ``extra["shapes"]`` (builders/shapes.py)
states every suite function at a shape set's sizes; sizes of one function, config and arch
whose compile inputs agree (``compile_key``) share one item: one compile, a row per size. ``build`` compiles with
``triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32))`` pinned to PTX ISA 8.7,
and turns PTX + metadata into a runnable Launch: block = 32 x num_warps (the PTX carries
``.reqntid``), cluster = num_ctas, dynamic shared memory = ``metadata.shared``, and the two
trailing ``.u64`` scratch pointers Triton 3.x appends (global scratch, profile scratch):
null when their size is 0, otherwise a scratch buffer of size x programs bytes.

Specialisation follows Triton's JIT: pointer and integer arguments that are multiples of 16
get ``tt.divisibility = 16`` (recorded in ``variant["specialization"]``), and integer
arguments equal to 1 become constexprs (they are then not kernel parameters).

``TritonDumpBuilder`` ("triton-dump") reads a ``TRITON_CACHE_DIR`` or ``TRITON_KERNEL_DUMP``
tree (documented in ``docs/triton-dump.md``; its rows say source ``triton-dump``): variants of one kernel name and signature
form a group, mapped to a Problem through the problem spec file below, or kept as
``no_problem`` rows that say why. A dump folder has no metadata json: ``build`` recovers its
launch facts by recompiling its IR until the dumped PTX is reproduced (``recover.py``).

Problem spec file (``extra["problem_file"]``, JSON or YAML): a list of entries
    {"kernel": "add_kernel",                      # Triton kernel name
     "signature": "*fp32,*fp32,*fp32,i32",        # optional: runtime param types, in order
     "problem": {...Problem fields...},
     "vars": {"n": 98432},                         # optional named numbers for expressions
     "args": ["x", "y", "out", "n"],               # one per runtime param
     "grid": ["cdiv(n, max_range)", 1, 1],
     "grid_by_hash": {"<hash prefix>": [..]}}      # optional per-variant grid
An ``args`` string naming a problem buffer is that buffer's pointer; ``null`` is a null
pointer; anything else is an expression giving a scalar (its type comes from the signature).
Expressions see ``vars``, numeric problem params, ``num_warps``, ``num_stages``,
``num_ctas``, ``ranges`` (distinct ``tt.make_range`` sizes of the kernel, ascending),
``max_range``, ``min_range`` and the functions ``cdiv``, ``min``, ``max``, ``next_pow2``
(and ``abs``), evaluated without ``eval`` (``expressions.py``, which also refuses unknown
keys in an entry).
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Optional

from builders.base import Builder, WorkItem, shared_memory_misfit
from builders.shapes import OP_KINDS, ShapeSet, load_shape_set, shape_label, shape_params
from builders.triton.expressions import cdiv, evaluate, next_pow2
from builders.triton.dump_messages import describe_params, no_problem_message
from builders.triton.dump_specs import load_specs, match_variant, problems_by_group
from builders.triton.recover import Recovery, recover_launch_facts
from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem, SpecError
from dataset_spec.one_problem import check_joins, problems_in_folder

PTX_ISA = 87
ARCH_CC = {"sm_80": 80, "sm_90a": 90, "sm_90": 90}
TRITON_DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
SCALAR_TYPES = {"i32": "s32", "i64": "s64", "u32": "u32", "u64": "u64", "fp32": "f32",
                "f32": "f32", "fp64": "f64", "i16": "s16", "i8": "s8", "i1": "b8"}
SCRATCH_PARAMS = (("global_scratch", "global_scratch_size"), ("profile_scratch", "profile_scratch_size"))
PERSISTENT_PROGRAMS = 132  # SMs of an H100 SXM: one persistent program each
NO_PROBLEM_HINT = ("map it with a problem spec file (--problem FILE, see docs/triton-dump.md): "
                   "an entry with kernel, problem, args and grid")


# --------------------------------------------------------------------------- suite

def ptr(name: str, buffer: str, dtype: str) -> dict:
    return {"name": name, "kind": "ptr", "buffer": buffer, "dtype": dtype}


def num(name: str, value, dtype: str = "i32") -> dict:
    return {"name": name, "kind": "scalar", "dtype": dtype, "value": value}


def buf(name: str, dtype: str, shape, role: str = "in") -> dict:
    return {"name": name, "dtype": dtype, "shape": list(shape), "role": role}


def elementwise_group(op: str, dtype: str, n: int, hint: bool, record_shape: bool = False) -> dict:
    """vector_add (x + y) or square (x * x) over n elements."""
    ins = ["x", "y"] if op == "vector_add" else ["x"]
    kernel = "add_kernel" if op == "vector_add" else "square_kernel"
    buffers = [buf(b, dtype, (n,)) for b in ins] + [buf("out", dtype, (n,), "out")]
    params = [ptr(f"{b}_ptr", b, dtype) for b in ins] + [ptr("output_ptr", "out", dtype),
                                                         num("n_elements", n)]
    configs = [{"BLOCK_SIZE": bs, "num_warps": w, "num_stages": s}
               for bs, w, s in ((256, 2, 1), (512, 4, 1), (1024, 4, 2), (1024, 8, 3),
                                (2048, 8, 2), (4096, 16, 1))]
    return {"op": op, "kernel": kernel, "dtype": dtype, "size": f"n{n}", "hint": hint,
            "buffers": buffers, "params": params,
            "op_params": with_shape({}, "elementwise", n, record_shape), "configs": configs,
            "grid": lambda cfg: (cdiv(n, cfg["BLOCK_SIZE"]),)}


def softmax_group(m: int, n: int, record_shape: bool = False) -> dict:
    """Row softmax (tutorial 02); persistent programs, so the program count is a knob."""
    buffers = [buf("x", "float32", (m, n)), buf("out", "float32", (m, n), "out")]
    params = [ptr("output_ptr", "out", "float32"), ptr("input_ptr", "x", "float32"),
              num("input_row_stride", n), num("output_row_stride", n),
              num("n_rows", m), num("n_cols", n)]
    block = next_pow2(n)
    configs = [{"BLOCK_SIZE": block, "num_warps": w, "num_stages": s, "programs": p}
               for w, s, p in ((4, 1, m), (8, 1, m), (16, 1, m), (4, 2, 264),
                               (8, 2, 528), (8, 4, 132), (16, 3, 264))]
    return {"op": "softmax", "kernel": "softmax_kernel", "dtype": "float32",
            "size": f"M{m}xN{n}", "hint": True, "buffers": buffers, "params": params,
            "op_params": with_shape({}, "rows", (m, n), record_shape), "configs": configs,
            "constexpr_from_config": {"num_stages": "num_stages"},
            "grid": lambda cfg: (min(cfg["programs"], m),)}


def extra_gemm_configs() -> list:
    """Configs the shape sets add to the default suite's eight: larger tiles and deeper
    pipelines, thread-block clusters of 2 CTAs (sm_90a only: ``runs_on``), and the persistent
    and tensor-descriptor matmuls of tutorial 09 with one program per SM of an H100."""
    tile = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")
    configs = [dict(zip(tile, t), GROUP_SIZE_M=8, num_warps=w, num_stages=s)
               for *t, w, s in ((128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (64, 64, 128, 4, 5))]
    configs += [dict(zip(tile, t), GROUP_SIZE_M=8, num_warps=w, num_stages=s, num_ctas=2)
                for *t, w, s in ((128, 128, 64, 8, 3), (128, 256, 64, 8, 3))]
    configs += [dict(kernel=kernel, **dict(zip(tile, t)), GROUP_SIZE_M=8, NUM_SMS=PERSISTENT_PROGRAMS,
                     num_warps=w, num_stages=s)
                for kernel in ("matmul_kernel_persistent", "matmul_kernel_descriptor_persistent")
                for *t, w, s in ((128, 128, 64, 8, 3), (128, 256, 64, 8, 3))]
    return configs


def gemm_group(dtype: str, m: int, n: int, k: int, record_shape: bool = False) -> dict:
    """C = A @ B, row-major A (M,K), B (K,N), C (M,N) (tutorial 03)."""
    buffers = [buf("A", dtype, (m, k)), buf("B", dtype, (k, n)), buf("C", dtype, (m, n), "out")]
    params = [ptr("a_ptr", "A", dtype), ptr("b_ptr", "B", dtype), ptr("c_ptr", "C", dtype),
              num("M", m), num("N", n), num("K", k),
              num("stride_am", k), num("stride_ak", 1), num("stride_bk", n),
              num("stride_bn", 1), num("stride_cm", n), num("stride_cn", 1)]
    tiles = ((128, 128, 64, 8, 3), (128, 128, 32, 4, 4), (64, 128, 64, 4, 3), (128, 64, 32, 4, 4),
             (64, 64, 64, 4, 2), (64, 64, 32, 4, 4), (128, 128, 64, 4, 2), (64, 128, 32, 8, 3))
    configs = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8,
                "num_warps": w, "num_stages": s} for bm, bn, bk, w, s in tiles]
    if record_shape:  # shape sets other than default (which stays today's build) also get
        configs += extra_gemm_configs()  # clusters, larger tiles, tutorial 09's matmuls
    element = {"float16": 2, "bfloat16": 2, "float32": 4}[dtype]

    def misfit(cfg):  # TMA descriptors need 16-byte row strides
        if cfg.get("kernel") == "matmul_kernel_descriptor_persistent" and (k * element % 16 or n * element % 16):
            return (f"matmul_kernel_descriptor_persistent: row strides of {k} and {n} {dtype} elements "
                    f"are not multiples of 16 bytes, as tensor descriptors need")
        return ""

    def grid(cfg):
        tiles = cdiv(m, cfg["BLOCK_SIZE_M"]) * cdiv(n, cfg["BLOCK_SIZE_N"])
        return (min(tiles, cfg["NUM_SMS"]),) if "NUM_SMS" in cfg else (tiles,)
    return {"op": "gemm", "kernel": "matmul_kernel", "dtype": dtype, "size": f"M{m}xN{n}xK{k}",
            "hint": True, "buffers": buffers, "params": params,
            "op_params": with_shape({"layout_a": "row", "layout_b": "row", "alpha": 1.0, "beta": 0.0},
                                    "gemm", (m, n, k), record_shape),
            "configs": configs, "misfit": misfit, "grid": grid}


def norm_group(op: str, dtype: str, m: int, n: int, hint: bool, record_shape: bool = False) -> dict:
    """rmsnorm (x, w) or layernorm (x, w, b) over rows of x (tutorial 05 style)."""
    eps = 1e-6 if op == "rmsnorm" else 1e-5
    rows = [buf("x", dtype, (m, n)), buf("w", dtype, (n,))]
    if op == "rmsnorm":
        buffers = rows + [buf("out", dtype, (m, n), "out")]
        params = [ptr("X", "x", dtype), ptr("W", "w", dtype), ptr("Y", "out", dtype)]
        kernel = "rmsnorm_kernel"
    else:
        buffers = rows + [buf("b", dtype, (n,)), buf("out", dtype, (m, n), "out")]
        params = [ptr("X", "x", dtype), ptr("Y", "out", dtype), ptr("W", "w", dtype),
                  ptr("B", "b", dtype), ptr("Mean", "mean", "float32"), ptr("Rstd", "rstd", "float32")]
        kernel = "layer_norm_fwd_kernel"
    params += [num("stride", n), num("N", n), num("eps", eps, "fp32")]
    configs = [{"BLOCK_SIZE": bs, "num_warps": w, "num_stages": 1}
               for bs, w in ((256, 2), (512, 4), (1024, 4), (1024, 8), (2048, 8), (4096, 16))]
    group = {"op": op, "kernel": kernel, "dtype": dtype, "size": f"M{m}xN{n}", "hint": hint,
             "buffers": buffers, "params": params,
             "op_params": with_shape({"eps": eps}, "rows", (m, n), record_shape),
             "configs": configs, "grid": lambda cfg: (m,)}
    if op == "layernorm":
        group["scratch"] = [buf("mean", "float32", (m,), "scratch"),
                            buf("rstd", "float32", (m,), "scratch")]
    return group


def attention_group(b: int, sq: int, skv: int, d: int) -> dict:
    """O = softmax(Q @ K) @ V, K stored [B, D, Skv] (dataset_spec/attention.py): the canonical
    problem itself, inputs drawn from the function's float16-safe domain."""
    from dataset_spec import attention as canonical_attention
    buffers = [dict(buf(x.name, x.dtype, x.shape, x.role), **({"init": {"kind": x.init.kind, "params": dict(x.init.params)}}
                                                              if x.init is not None else {}))
               for x in canonical_attention.buffers(b, sq, skv, d)]
    params = [ptr("Q", "Q", "float16"), ptr("K", "K", "float16"), ptr("V", "V", "float16"),
              ptr("O", "O", "float16"), num("Sq", sq), num("Skv", skv),
              num("stride_qb", sq * d), num("stride_qm", d), num("stride_kb", d * skv), num("stride_kd", skv),
              num("stride_vb", skv * d), num("stride_vn", d), num("stride_ob", sq * d), num("stride_om", d)]
    tiles = ((16, 64, 4, 2), (16, 128, 4, 3), (32, 64, 4, 2), (64, 32, 2, 2), (64, 64, 4, 2),
             (64, 128, 4, 3), (128, 64, 8, 2), (128, 128, 8, 3))
    configs = [{"BLOCK_M": bm, "BLOCK_N": bn, "HEAD_DIM": d, "num_warps": w, "num_stages": st}
               for bm, bn, w, st in tiles]
    return {"op": "attention", "kernel": "attention_kernel", "dtype": "float16",
            "size": shape_label("attention", (b, sq, skv, d)), "hint": True, "buffers": buffers,
            "params": params, "op_params": canonical_attention.params(b, sq, skv, d), "configs": configs,
            "grid": lambda cfg: (cdiv(sq, cfg["BLOCK_M"]), b)}


def with_shape(op_params: dict, kind: str, size, record: bool) -> dict:
    """Problem params, plus ``shape`` for groups of a non-default shape set. Default-set
    problems stay as they were so their problem digests, and so kernel ids, never change."""
    return dict(op_params, shape=shape_params(kind, size)) if record else op_params


def default_suite_groups() -> list[dict]:
    """The built-in suite at its own sizes (the ``default`` shape set), in a fixed order."""
    return [
        elementwise_group("vector_add", "float32", 1 << 20, hint=True),
        elementwise_group("vector_add", "float32", 1_000_003, hint=False),
        elementwise_group("vector_add", "float16", 1 << 20, hint=True),
        elementwise_group("square", "float32", 1 << 20, hint=True),
        softmax_group(1823, 781),
        gemm_group("float16", 512, 512, 512),
        gemm_group("bfloat16", 768, 512, 384),
        norm_group("rmsnorm", "float16", 2048, 1024, hint=True),
        norm_group("layernorm", "float32", 1151, 1000, hint=False),
    ]


# (op, dtype, kind, group constructor) of every suite function, in suite order; a shape set
# states each of them at its sizes of that kind.
SUITE_FUNCTIONS = (
    ("vector_add", "float32", lambda n, rec: elementwise_group("vector_add", "float32", n, True, rec)),
    ("vector_add", "float16", lambda n, rec: elementwise_group("vector_add", "float16", n, True, rec)),
    ("square", "float32", lambda n, rec: elementwise_group("square", "float32", n, True, rec)),
    ("softmax", "float32", lambda s, rec: softmax_group(*s, record_shape=rec)),
    ("gemm", "float16", lambda s, rec: gemm_group("float16", *s, record_shape=rec)),
    ("gemm", "bfloat16", lambda s, rec: gemm_group("bfloat16", *s, record_shape=rec)),
    ("rmsnorm", "float16", lambda s, rec: norm_group("rmsnorm", "float16", *s, hint=True, record_shape=rec)),
    ("layernorm", "float32", lambda s, rec: norm_group("layernorm", "float32", *s, hint=True, record_shape=rec)),
    ("attention", "float16", lambda s, rec: attention_group(*s)),
)


def suite_groups(shape_set: Optional[ShapeSet] = None) -> list[dict]:
    """The suite's groups for a shape set: every function at every size of its kind. A
    size that the default suite already states a function at gives that very group, so
    its rows (and resume keys) are the default ones."""
    shape_set = load_shape_set(shape_set)
    defaults = default_suite_groups()
    if shape_set.is_default:
        return defaults
    known = {(g["op"], g["dtype"], g["size"]): g for g in defaults}
    groups = []
    for op, dtype, make in SUITE_FUNCTIONS:
        for size in dict.fromkeys(shape_set.sizes_for(op)):
            label = shape_label(OP_KINDS[op], size)
            groups.append(known.get((op, dtype, label)) or make(size, True))
    return groups


def group_id_of(group: dict) -> str:
    return f"triton/{group['op']}/{group['dtype']}/{group['size']}"


def config_label(config: dict) -> str:
    return "_".join(f"{k}{v}" for k, v in config.items())


# --------------------------------------------------------------------------- compile plan

def specialize(params: list, hint: bool) -> tuple[list, dict]:
    """Mirror Triton's JIT: ints equal to 1 become constexprs; pointers (if ``hint``) and
    ints that are multiples of 16 get tt.divisibility=16. Returns (params with a ``role``
    of runtime/constexpr and a ``divisible`` flag, the specialisation summary)."""
    planned, divisible, ones = [], [], []
    for p in params:
        p = dict(p)
        is_int = p["kind"] == "scalar" and p["dtype"].startswith("i")
        p["constexpr"] = is_int and int(p["value"]) == 1
        p["divisible"] = hint and not p["constexpr"] and (
            p["kind"] == "ptr" or (is_int and int(p["value"]) % 16 == 0))
        if p["constexpr"]:
            ones.append(p["name"])
        if p["divisible"]:
            divisible.append(p["name"])
        planned.append(p)
    return planned, {"divisibility_16": divisible, "equal_to_1": ones}


def suite_payload(group: dict, config: dict, arch: str) -> dict:
    """Everything ``build`` needs, as plain picklable values."""
    params, spec = specialize(group["params"], group["hint"])
    for param_name, key in group.get("constexpr_from_config", {}).items():
        params.append({"name": param_name, "kind": "config", "value": config[key], "constexpr": True})
    problem = {"problem_id": group_id_of(group), "op": group["op"], "buffers": group["buffers"],
               "params": group["op_params"]}
    payload = {"kernel": config.get("kernel", group["kernel"]), "arch": arch,
               "config": config, "params": params,
               "specialization": spec, "problem": problem, "grid": list(group["grid"](config)),
               "scratch": group.get("scratch", []), "group_id": group_id_of(group)}
    reason = group["misfit"](config) if group.get("misfit") else ""
    if reason:
        payload["not_applicable"] = reason
    return payload


def runs_on(config: dict, arch: str) -> bool:
    """Thread-block clusters (num_ctas > 1) need sm_90."""
    return config.get("num_ctas", 1) == 1 or arch.startswith("sm_90")


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


@dataclass(frozen=True)
class TritonOptions:
    """``shapes``: the problem sizes (builders/shapes.py); ``from_dump``: a dump tree, which
    makes the build the triton-dump source's (the library path delegates the same way)."""
    shapes: Optional[str] = None
    from_dump: Optional[str] = None
    problem_file: Optional[str] = None


@dataclass(frozen=True)
class TritonDumpOptions:
    """An existing TRITON_CACHE_DIR / TRITON_KERNEL_DUMP tree and its problem spec."""
    from_dump: Optional[str] = field(default=None, metadata={
        "flag": "--from-dump", "path": "dir", "required": "DIR",
        "help": "ingest a TRITON_CACHE_DIR / TRITON_KERNEL_DUMP tree (with --source triton)"})
    problem_file: Optional[str] = field(default=None, metadata={
        "flag": "--problem", "path": "file", "help": "problem spec file mapping kernels to problems"})
    dump_dir: Optional[str] = None  # the older name of from_dump


class TritonBuilder(Builder):
    """The built-in Triton suite: one item per (group, config, arch); with a non-default
    shape set, the sizes whose compile is identical share one item (one compile, a row
    per size)."""
    name = "triton"
    Options = TritonOptions
    pip_extra = "triton"
    takes_shapes = True
    # 118 default rows in 35 s on a fresh 2-core machine
    cpu_seconds_per_row = 0.6

    def shape_set(self) -> ShapeSet:
        return load_shape_set(self.settings.shapes)

    def work_items(self) -> list:
        if self.settings.from_dump:
            return TritonDumpBuilder(self.options).work_items()
        shape_set = self.shape_set()
        groups = suite_groups(shape_set)
        if shape_set.is_default:
            return [self.single_item(group, config, arch)
                    for group in groups for config in group["configs"] for arch in self.options.archs
                    if runs_on(config, arch)]
        items = []
        by_function: dict = {}
        for group in groups:
            by_function.setdefault((group["op"], group["dtype"]), []).append(group)
        for (op, dtype), function_groups in by_function.items():
            # a default group (a size the default suite states) has only the first configs
            for index in range(max(len(g["configs"]) for g in function_groups)):
                having = [g for g in function_groups if index < len(g["configs"])]
                for arch in self.options.archs:
                    if not runs_on(having[0]["configs"][index], arch):
                        continue
                    buckets: dict = {}
                    for group in having:
                        payload = suite_payload(group, group["configs"][index], arch)
                        buckets.setdefault(compile_key(payload), []).append((group, payload))
                    for key, members in buckets.items():
                        items.append(self.single_item(members[0][0], members[0][1]["config"], arch)
                                     if len(members) == 1 else self.shared_item(op, dtype, key, members))
        return items

    @staticmethod
    def single_item(group: dict, config: dict, arch: str) -> WorkItem:
        label = f"{group_id_of(group)}/{config_label(config)}/{arch}"
        return WorkItem(key=label, group_id=group_id_of(group), label=label,
                        payload=suite_payload(group, config, arch))

    @staticmethod
    def shared_item(op: str, dtype: str, key: str, members: list) -> WorkItem:
        """One compile for several sizes: a row per member, in member order."""
        sizes = "+".join(group["size"] for group, _ in members)
        first = members[0][1]
        label = (f"triton/{op}/{dtype}/{sizes}/"
                 f"{config_label({k: v for k, v in first['config'].items() if k not in LAUNCH_ONLY_KEYS})}"
                 f"/{first['arch']}")
        shared = {"compile_key": key, "groups": [group_id_of(group) for group, _ in members]}
        return WorkItem(key=label, group_id=group_id_of(members[0][0]), label=label,
                        payload={"members": [payload for _, payload in members], "shared_compile": shared},
                        rows=len(members))

    def build(self, item: WorkItem) -> list:
        if item.payload.get("dump"):
            return TritonDumpBuilder(self.options).build(item)
        members = item.payload.get("members") or [item.payload]
        records = [self.empty_record(p) for p in members]
        first = members[0]
        try:
            compiled = compile_kernel(first["kernel"], first["params"], first["config"], first["arch"])
            metadata = metadata_dict(compiled.metadata)
            check_shared_memory(metadata, first["arch"])
        except Exception as exc:  # a compile failure is a row, never an exception
            for record in records:
                record.status, record.status_message = "build_failed", one_line(exc)
            return records
        shared = item.payload.get("shared_compile")
        for index, (record, p) in enumerate(zip(records, members)):
            if shared:  # the PTX is the same for every size of this item: compiled once
                record.provenance["shared_compile"] = dict(shared, reused=index > 0)
            if p.get("not_applicable"):  # the PTX, but no launch: the kernel cannot run this size
                record.name, record.ptx = metadata["name"], compiled.asm["ptx"]
                record.status, record.status_message = "not_applicable", p["not_applicable"]
                continue
            launch, scratch = make_launch(metadata["name"], metadata, p["grid"],
                                          runtime_args(p["params"], kernel_arg_names(p["kernel"])))
            record.name, record.ptx, record.launches = metadata["name"], compiled.asm["ptx"], [launch]
            record.scratch = [Buffer(**b) for b in p["scratch"]] + scratch
        return records

    @staticmethod
    def empty_record(p: dict) -> KernelRecord:
        variant = dict(p["config"], num_ctas=p["config"].get("num_ctas", 1),
                       specialization=p["specialization"])
        return KernelRecord(group_id=p["group_id"], source="triton", variant=variant,
                            name=p["kernel"], arch=p["arch"], ptx="", launches=[],
                            problem=Problem(**p["problem"]), toolchain=toolchain(),
                            provenance=provenance(p["kernel"]))


def check_shared_memory(metadata: dict, arch: str) -> None:
    misfit = shared_memory_misfit(arch, int(metadata.get("shared") or 0))
    if misfit:
        raise RuntimeError(misfit)


# --------------------------------------------------------------------------- dump ingestion

TTIR_FUNC = re.compile(r"tt\.func\s+public\s+@([\w$.]+)\((.*?)\)\s*(?:attributes|\{)", re.S)
TTIR_ARG = re.compile(r"%([\w$.]+)\s*:\s*(!tt\.ptr<\w+>|\w+)")
MAKE_RANGE = re.compile(r"tt\.make_range\s*\{end\s*=\s*(\d+)\s*:\s*i32,\s*start\s*=\s*(\d+)")
MODULE_ATTR = re.compile(r'"?ttg\.([\w-]+)"?\s*=\s*"?([\w:]+)"?')
PTX_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)
PTX_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)
MLIR_TYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "f64": "fp64"}


def triton_type(mlir_type: str) -> str:
    """'!tt.ptr<f32>' -> '*fp32', 'i32' -> 'i32', 'f32' -> 'fp32'."""
    pointee = re.fullmatch(r"!tt\.ptr<(\w+)>", mlir_type)
    if pointee:
        return "*" + MLIR_TYPES.get(pointee.group(1), pointee.group(1))
    return MLIR_TYPES.get(mlir_type, mlir_type)


def ttir_params(ttir: str) -> list[tuple[str, str, bool]]:
    """(name, triton type, divisible by 16) for each runtime parameter of the kernel."""
    match = TTIR_FUNC.search(ttir)
    if not match:
        return []
    params = []
    for piece in split_top_level(match.group(2)):
        arg = TTIR_ARG.search(piece)
        if arg:
            params.append((arg.group(1), triton_type(arg.group(2)), "tt.divisibility = 16" in piece))
    return params


def split_top_level(text: str) -> list[str]:
    """Split an MLIR argument list at commas outside brackets and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "({<[":
            depth += 1
        elif not quoted and ch in ")}>]":
            depth -= 1
        elif not quoted and ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def ttir_ranges(ttir: str) -> list[int]:
    return sorted({int(end) - int(start) for end, start in MAKE_RANGE.findall(ttir)})


def ttgir_metadata(ttgir: str) -> dict:
    """num_warps, num_ctas and target capability from a TTGIR module's attributes."""
    header = next((line for line in ttgir.splitlines() if line.startswith("module attributes")), "")
    attrs = dict(MODULE_ATTR.findall(header))
    meta = {}
    if "num-warps" in attrs:
        meta["num_warps"] = int(attrs["num-warps"])
    if "num-ctas" in attrs:
        meta["num_ctas"] = int(attrs["num-ctas"])
    if attrs.get("target", "").startswith("cuda:"):
        meta["target"] = {"backend": "cuda", "arch": int(attrs["target"].split(":")[1])}
    return meta


def arch_of(ptx: str, metadata: dict) -> str:
    target = PTX_TARGET.search(ptx)
    if target:
        return target.group(1)
    cc = (metadata.get("target") or {}).get("arch")
    return f"sm_{cc}{'a' if cc and int(cc) >= 90 else ''}" if cc else "unknown"


def read_text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def find_variants(root: Path) -> list[Path]:
    """Every ``<hash>/<name>.ptx`` under root, in sorted order."""
    return sorted(p for p in root.rglob("*.ptx") if p.is_file())


def load_variant(ptx_path: Path) -> dict:
    """Read one dumped/cached variant: ptx, metadata (json, or recovered from TTGIR), params."""
    folder, stem = ptx_path.parent, ptx_path.stem
    ptx = read_text(ptx_path)
    metadata_path = folder / f"{stem}.json"
    metadata = json.loads(metadata_path.read_text()) if metadata_path.exists() else {}
    has_json = bool(metadata)
    if not has_json:  # num_warps/num_ctas/target only; build() recovers the rest (recover.py)
        metadata = ttgir_metadata(read_text(folder / f"{stem}.ttgir"))
    ttir = read_text(folder / f"{stem}.ttir") or read_text(folder / f"{stem}.source")
    params = ttir_params(ttir)
    return {"path": str(ptx_path), "folder": folder.name, "name": metadata.get("name", stem),
            "metadata": metadata, "has_json": has_json, "params": params,
            "ranges": ttir_ranges(ttir), "arch": arch_of(ptx, metadata),
            "signature": ",".join(t for _, t, _ in params)}


def recover_dump_metadata(variant: dict) -> Optional[Recovery]:
    """For a folder without metadata json, recompile its IR (recover.py) and, when the PTX is
    reproduced, take the launch facts into ``variant["metadata"]``. None for a cache folder."""
    if variant["has_json"]:
        return None
    ptx_path = Path(variant["path"])
    recovery = recover_launch_facts(ptx_path.parent, ptx_path.stem, read_text(ptx_path))
    if recovery.trusted:
        variant["metadata"].update(recovery.facts)
    return recovery


def dump_group_id(name: str, signature: str) -> str:
    digest = hashlib.sha256(signature.encode()).hexdigest()[:8]
    return f"triton-dump/{name}/{digest}"


def expression_scope(spec: dict, problem: Problem, variant: dict) -> dict:
    meta, ranges = variant["metadata"], variant["ranges"] or [1]
    scope = {k: v for k, v in problem.params.items() if isinstance(v, (int, float))}
    scope.update(spec.get("vars", {}))
    scope.update(num_warps=int(meta.get("num_warps", 4)), num_stages=int(meta.get("num_stages", 0)),
                 num_ctas=int(meta.get("num_ctas", 1)), ranges=ranges,
                 max_range=max(ranges), min_range=min(ranges))
    return scope  # the functions (cdiv, min, max, next_pow2, abs): expressions.FUNCTIONS


def spec_args(spec: dict, problem: Problem, variant: dict, scope: dict) -> list:
    """Launch args for the runtime params from the spec's ``args`` list."""
    names = {b.name for b in problem.buffers}
    params, wanted = variant["params"], spec.get("args", [])
    if len(wanted) != len(params):
        raise SpecError(f"spec gives {len(wanted)} args, kernel {variant['name']} has "
                        f"{len(params)} runtime params ({variant['signature']}): "
                        f"{describe_params(variant, variant_ttir(variant))}")
    args = []
    for value, (pname, ptype, _) in zip(wanted, params):
        if ptype.startswith("*"):
            if value is None or value == "null":
                args.append(Arg.null())
            elif value in names:
                args.append(Arg.buf(value))
            else:
                raise SpecError(f"param {pname} is a pointer; {value!r} names no problem buffer")
        else:
            args.append(Arg.scalar(SCALAR_TYPES.get(ptype, "s32"), evaluate(value, scope)))
    return args


def spec_grid(spec: dict, variant: dict, scope: dict) -> list:
    by_hash = spec.get("grid_by_hash", {})
    grid = next((g for h, g in by_hash.items() if variant["folder"].lower().startswith(h.lower())),
                spec.get("grid"))
    if not grid:
        raise SpecError("spec has no grid")
    return [int(evaluate(g, scope)) for g in grid]


def placeholder_problem(name: str) -> Problem:
    return Problem(problem_id=f"unknown/{name}", op="unknown",
                   buffers=[Buffer("out", "float32", (1,), "out")])


def dump_variant_knobs(variant: dict) -> dict:
    meta = variant["metadata"]
    knobs = {k: meta[k] for k in ("num_warps", "num_stages", "num_ctas", "shared") if k in meta}
    knobs.update(hash=variant["folder"], ranges=variant["ranges"],
                 specialization={"divisibility_16": [n for n, _, d in variant["params"] if d]})
    return knobs


class TritonDumpBuilder(Builder):
    """Rows from an existing Triton cache or kernel-dump directory (``extra["from_dump"]``),
    grouped by the problem each variant is mapped to (dump_specs.py)."""
    name = "triton-dump"
    Options = TritonDumpOptions
    pip_extra = "triton"
    serves = ("triton", "from_dump")

    def dump_dir(self) -> Path:
        folder = self.settings.from_dump or self.settings.dump_dir
        if not folder or not Path(folder).is_dir():
            raise SpecError(f"triton-dump needs extra['from_dump'] = an existing directory, got {folder!r}")
        return Path(folder)

    def work_items(self) -> list:
        specs = load_specs(self.settings.problem_file)  # a bad spec file stops here, before any item
        variants = [load_variant(path) for path in find_variants(self.dump_dir())]
        ranges: dict = {}
        for variant in variants:
            ranges.setdefault((variant["name"], variant["signature"]), set()).add(max(variant["ranges"] or [1]))
        items = []
        for variant in variants:
            match = match_variant(specs, variant, lambda entry, v=variant: self.scope(entry, v),
                                  sorted(ranges[(variant["name"], variant["signature"])]))
            group = match.group_id or dump_group_id(variant["name"], variant["signature"])
            label = f"{group}/{variant['folder']}/{variant['name']}"
            items.append(WorkItem(key=label, group_id=group, label=label,
                                  payload={"dump": True, "ptx_path": variant["path"], "entry": match.entry,
                                           "not_applicable": match.not_applicable, "no_problem": match.no_problem}))
        return items

    @staticmethod
    def scope(entry: dict, variant: dict) -> dict:
        """What a ``fits`` condition sees: as grid and argument expressions (the metadata a
        cache folder's json gives; a dump folder's num_warps and num_ctas from its TTGIR)."""
        return expression_scope(entry, entry["problem"], variant)

    def check_output(self, out_dir) -> None:
        """Refuses a folder whose rows of a group carry another problem than the spec file's."""
        for group, problem in problems_by_group(load_specs(self.settings.problem_file)).items():
            clash = check_joins(group, problem, problems_in_folder(out_dir, group), str(out_dir))
            if clash:
                raise SpecError(f"{self.settings.problem_file}: {clash}")

    def build(self, item: WorkItem) -> list:
        variant = load_variant(Path(item.payload["ptx_path"]))
        recovery = recover_dump_metadata(variant)
        specs = load_specs(self.settings.problem_file)
        ptx = read_text(Path(variant["path"]))
        record = KernelRecord(group_id=item.group_id, source="triton-dump", variant=dump_variant_knobs(variant),
                              name=variant["name"], arch=variant["arch"], ptx=ptx,
                              launches=[], problem=placeholder_problem(variant["name"]),
                              toolchain={"triton": variant["metadata"].get("triton_version", "unknown"),
                                         "ptx_isa": ptx_version_of(ptx)},
                              provenance={"generator": "ptxds builders.triton (dump)",
                                          "dump_path": variant["path"], "licence": "MIT (Triton)",
                                          "launch_facts": (recovery.provenance() if recovery else
                                                           {"recovered": False, "method": f"{variant['name']}.json"})})
        entry = specs[item.payload["entry"]] if item.payload.get("entry") is not None else None
        reason = self.unmapped_reason(entry, variant, specs, recovery)
        if reason:
            record.status, record.status_message = "no_problem", reason
            return [record]
        record.problem = Problem.from_json(entry["problem"].to_json())
        if item.payload.get("not_applicable"):  # the PTX, no launch: it cannot cover this problem
            record.status, record.status_message = "not_applicable", item.payload["not_applicable"]
            return [record]
        try:
            scope = expression_scope(entry, record.problem, variant)
            launch, scratch = make_launch(variant["name"], variant["metadata"], spec_grid(entry, variant, scope),
                                          spec_args(entry, record.problem, variant, scope))
        except (SpecError, TypeError, ValueError, KeyError, ArithmeticError) as exc:
            record.status = "no_problem"
            record.status_message = f"problem spec for {variant['name']} does not apply: {one_line(exc)}"
            return [record]
        if item.payload.get("no_problem"):  # the entry fits the kernel, but not which variant covers it
            record.status, record.status_message = "no_problem", item.payload["no_problem"]
            return [record]
        record.launches, record.scratch = [launch], scratch
        return [record]

    @staticmethod
    def unmapped_reason(entry: Optional[dict], variant: dict, specs: list, recovery: Optional[Recovery]) -> str:
        if entry is None:
            why = ("no problem spec file given" if not specs else
                   f"no entry of the problem spec file names it with signature {variant['signature']}")
            return no_problem_message(variant, variant_ttir(variant), why)
        if recovery is not None and not recovery.trusted:
            return f"launch facts not recovered: {recovery.reason}"
        if "shared" not in variant["metadata"] or "num_warps" not in variant["metadata"]:
            return (f"{variant['folder']}/{variant['name']}.json has no shared/num_warps; "
                    f"ingest the TRITON_CACHE_DIR the kernel was compiled into")
        return ""


def variant_ttir(variant: dict) -> str:
    folder, stem = Path(variant["path"]).parent, Path(variant["path"]).stem
    return read_text(folder / f"{stem}.ttir") or read_text(folder / f"{stem}.source")


def ptx_version_of(ptx: str) -> str:
    match = re.search(r"^\s*\.version\s+(\d+\.\d+)", ptx, re.M)
    return match.group(1) if match else "unknown"
