"""The Triton suite: compile the built-in @triton.jit suite for explicit targets (no GPU
needed); the compile helpers are ``compile.py``, the ingest of Triton cache / kernel-dump
directories is the ``triton-dump`` source (``builders/triton_dump/``).

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
"""
from __future__ import annotations

from typing import Optional
from dataclasses import dataclass

from builders import load_builder  # the triton-dump source by name: it imports this package
from builders.base import Builder, WorkItem
from builders.shapes import OP_KINDS, ShapeSet, load_shape_set, shape_label, shape_params
from builders.triton.compile import (LAUNCH_ONLY_KEYS, check_shared_memory, compile_key,
                                     compile_kernel, config_label, kernel_arg_names, make_launch,
                                     metadata_dict, one_line, provenance, runtime_args, toolchain)
from builders.triton.expressions import cdiv, next_pow2
from dataset_spec.model import Buffer, KernelRecord, Problem

PERSISTENT_PROGRAMS = 132  # SMs of an H100 SXM: one persistent program each


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


@dataclass(frozen=True)
class TritonOptions:
    """``shapes``: the problem sizes (builders/shapes.py); ``from_dump``: a dump tree, which
    makes the build the triton-dump source's (the library path delegates the same way)."""
    shapes: Optional[str] = None
    from_dump: Optional[str] = None
    problem_file: Optional[str] = None


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
            return load_builder("triton-dump")(self.options).work_items()
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
            return load_builder("triton-dump")(self.options).build(item)
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
