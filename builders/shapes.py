"""Shape sets: the problem sizes a build states each function at (``ptxds build --shapes``).

A group is one function at one size, so a shape set multiplies groups, not compiles: the
builders compile once per kernel where the PTX does not depend on the size and make one
row per size. Three kinds of size cover the built-in sources:

- ``gemm``: ``[M, N, K]`` (Triton's matmul suite, every CUTLASS GEMM),
- ``rows``: ``[M, N]``, M rows of N columns (softmax, rmsnorm, layernorm),
- ``elementwise``: ``n`` elements (vector_add, square),
- ``conv2d``: ``[N, H, W, C, K, R, S, stride, pad]`` (CUTLASS NHWC convolutions; the same
  stride and padding in every spatial dim, dilation 1),
- ``conv3d``: ``[N, D, H, W, C, K, T, R, S, stride, pad]`` (NDHWC),
- ``grouped``: a list of ``[M, N, K]`` problems (grouped GEMM: MoE expert layers with
  uneven tokens per expert, builders/moe_shapes.py).
- ``attention``: ``[B, Sq, Skv, D]`` (attention heads, queries, keys, head dim).

Built-in sets: ``default`` (each source's own sizes, the groups every earlier build made),
``llm`` (transformer-layer sizes), ``sweep`` (powers of two and odd sizes, small to
large) and ``crossource`` (the ``llm`` sizes of the functions several sources build: GEMM,
softmax, RMSNorm, attention; merged with ``ptxds merge``). Builders may round the sizes of a built-in set up to what a kernel family needs
(CUTLASS alignments); sizes from a user's file are taken exactly, and a kernel that cannot
run one gets a ``not_applicable`` row that says why.

File form (YAML or JSON; every key optional, at least one size in all)::

    name: my-sizes
    gemm: [[4096, 4096, 4096], {M: 16, N: 4096, K: 4096}]
    rows: [[4096, 8192]]
    elementwise: [1048576]
    grouped: [[[128, 256, 512], [40, 256, 512]]]   # each size a list of [M, N, K] problems
    softmax: [[16, 4096]]        # per-op lists (softmax, rmsnorm, layernorm, vector_add,
                                 # square, mixed_input_gemm, grouped_blockwise_scaled_gemm, ...)
                                 # replace their kind's list for that op
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from dataset_spec.documents import load_document
from dataset_spec.model import SpecError
from dataset_spec.ops import ops_where
from builders.moe_shapes import (LLM_GROUPED, LLM_GROUPED_BLOCKWISE, LLM_GROUPED_COMPLEX, SWEEP_GROUPED,
                                 SWEEP_GROUPED_BLOCKWISE, SWEEP_GROUPED_COMPLEX, grouped_label)

KINDS = {"gemm": ("M", "N", "K"), "rows": ("M", "N"), "elementwise": ("n",),
         "conv2d": ("N", "H", "W", "C", "K", "R", "S", "stride", "pad"),
         "conv3d": ("N", "D", "H", "W", "C", "K", "T", "R", "S", "stride", "pad"),
         "attention": ("B", "Sq", "Skv", "D")}
GROUPED = "grouped"  # a size of this kind is a tuple of (M, N, K) problems
# The kind of each op's sizes, as its OpSpec states it; conv2d and conv3d are the shape
# sets' names for every convolution op of that rank.
OP_KINDS = {**ops_where("sizes"), "conv2d": "conv2d", "conv3d": "conv3d"}
# Host-side float64 copies the verifier keeps per group (inputs, outputs, reference and
# error scale) must stay a few hundred MB; built-in sets are checked against this.
MAX_GROUP_HOST_BYTES = 768 << 20


@dataclass(frozen=True)
class ShapeSet:
    """Named sizes per kind (and optional per-op overrides). ``exact`` sizes come from
    the user and are never adjusted; ``is_default`` means "each source's own sizes"."""
    name: str
    gemm: tuple = ()
    rows: tuple = ()
    elementwise: tuple = ()
    conv2d: tuple = ()
    conv3d: tuple = ()
    grouped: tuple = ()
    attention: tuple = ()
    per_op: dict = field(default_factory=dict)
    exact: bool = False
    is_default: bool = False

    def sizes_for(self, op: str) -> tuple:
        """The sizes an op is built at: its own list when the set names one, else its kind's."""
        if op in self.per_op:
            return self.per_op[op]
        return getattr(self, OP_KINDS[op])


def shape_label(kind: str, size) -> str:
    """The size as group ids spell it: ``M512xN768xK520``, ``M4096xN4096``, ``n1048576``."""
    if kind == GROUPED:
        return grouped_label(size)
    values = (size,) if isinstance(size, int) else size
    return "x".join(f"{name}{value}" for name, value in zip(KINDS[kind], values))


def shape_params(kind: str, size) -> dict:
    """The size as a problem records it in ``params["shape"]``."""
    if kind == GROUPED:
        return {"problems": [[int(v) for v in p] for p in size]}
    values = (size,) if isinstance(size, int) else size
    return dict(zip(KINDS[kind], (int(v) for v in values)))


# ResNet-50 (batch 8): the 3x3 64-channel conv at 56x56, a 1x1 256 -> 64 bottleneck
# reduction, the 3x3 stride-2 128-channel conv and the 7x7 stride-2 stem (3 channels,
# which kernels round up to their alignment); a ViT-B/16 patch embedding (16x16 stride 16,
# 3 -> 768); for 3-D, a video ResNet's 3x3x3 64-channel conv over 8 frames.
LLM_CONV2D = ((8, 56, 56, 64, 64, 3, 3, 1, 1), (8, 56, 56, 256, 64, 1, 1, 1, 0), (8, 56, 56, 128, 128, 3, 3, 2, 1),
              (8, 224, 224, 3, 64, 7, 7, 2, 3), (8, 224, 224, 3, 768, 16, 16, 16, 0))
LLM_CONV3D = ((2, 8, 56, 56, 64, 64, 3, 3, 3, 1, 1),)

# Transformer-layer sizes: projections of a 4096-wide model (square, fused KV with GQA,
# a decode step of 16 tokens) and a 2048-wide MLP; norms/softmax at 4096-8192 columns and
# up to 32k rows (per-head rows of 128); element-wise at activation sizes.
LLM = ShapeSet(
    name="llm",
    gemm=((4096, 4096, 4096), (8192, 1024, 4096), (16, 4096, 4096), (2048, 5632, 2048)),
    rows=((16, 4096), (4096, 4096), (2048, 8192), (32768, 128)),
    elementwise=(65536, 11534336, 16777216),
    # decode-time attention over 4096 keys, head dim 64: the sizes of Mirage's saved GQA
    # (2 KV heads x 256 query rows), MHA (32 heads x 16 tokens) and MQA (1 x 1024) muGraphs
    attention=((2, 256, 4096, 64), (32, 16, 4096, 64), (1, 1024, 4096, 64)),
    conv2d=LLM_CONV2D,
    conv3d=LLM_CONV3D,
    grouped=LLM_GROUPED,
    # a weight-only int4 4096 -> 14336 MLP projection, in the mixed-input kernels' terms (the
    # quantised weight is A: M = 14336 output features, K = 4096, N = tokens), at decode
    # (16 tokens) and prefill (4096 tokens)
    per_op={"mixed_input_gemm": ((14336, 16, 4096), (14336, 4096, 4096)),
            # DeepSeek-V3-like FP8 layers (hidden 7168, expert width 2048): 4096 tokens up, 2048
            # tokens down, a 16-token decode step
            "blockwise_scaled_gemm": ((4096, 2048, 7168), (2048, 7168, 2048), (16, 7168, 7168)),
            # their routed experts as grouped blockwise GEMMs (builders/moe_shapes.py)
            "grouped_blockwise_scaled_gemm": LLM_GROUPED_BLOCKWISE,
            "grouped_complex_gemm": LLM_GROUPED_COMPLEX,  # complex parts: narrower shards
            # 2:4 sparse weights (A) at the projection sizes; the decode step at M = 32, the
            # smallest M whose metadata rows the SM80 reorder accepts
            "sparse_gemm": ((4096, 4096, 4096), (8192, 1024, 4096), (32, 4096, 4096), (2048, 5632, 2048))},
)

# Powers of two from tiny to large, and odd sizes that leave partial tiles everywhere.
SWEEP = ShapeSet(
    name="sweep",
    gemm=((64, 64, 64), (256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048),
          (127, 255, 63), (1023, 1025, 1031), (3001, 2999, 997)),
    rows=((64, 128), (1024, 1024), (4096, 4096), (37, 129), (999, 1537), (4097, 3001)),
    elementwise=(1024, 65536, 1 << 20, 1 << 24, 127, 12345, 1000003),
    attention=((1, 64, 128, 64), (4, 128, 1024, 64), (8, 512, 2048, 128), (3, 77, 999, 64)),
    conv2d=((1, 7, 7, 32, 32, 3, 3, 1, 1), (4, 28, 28, 128, 128, 3, 3, 1, 1), (2, 17, 19, 40, 24, 3, 3, 2, 1),
            (16, 56, 56, 64, 256, 1, 1, 1, 0), (8, 224, 224, 3, 768, 16, 16, 16, 0)),
    conv3d=((1, 5, 9, 9, 16, 16, 3, 3, 3, 1, 1), (2, 8, 28, 28, 64, 64, 3, 3, 3, 2, 1)),
    grouped=SWEEP_GROUPED,
    # blockwise-scaled FP8: M a multiple of 16 (16-byte TMA rows of D and SFA); a partial N
    # tile and a partial K block (1040 = 8 x 128 + 16) in the last size
    per_op={"blockwise_scaled_gemm": ((256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048),
                                      (1008, 1000, 1040)),
            "grouped_blockwise_scaled_gemm": SWEEP_GROUPED_BLOCKWISE,
            "grouped_complex_gemm": SWEEP_GROUPED_COMPLEX,
            # 2:4 sparse: K a multiple of every tile K (256), M of 32; partial M and N tiles
            "sparse_gemm": ((64, 64, 256), (256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048),
                            (96, 200, 512), (1056, 1000, 1280))},
)

# The functions several compilers build, at the ``llm`` sizes: GEMM (Triton, CUTLASS, TVM,
# TileLang), row softmax and RMSNorm (Triton, TVM, TileLang) and attention (Triton, TileLang,
# Mirage); no element-wise ops. ``ptxds merge``
# of these builds puts each function's members from every source into one group.
CROSSOURCE = ShapeSet(name="crossource", gemm=LLM.gemm, attention=LLM.attention,
                      per_op={op: LLM.rows for op in ("softmax", "rmsnorm")})

DEFAULT = ShapeSet(name="default", is_default=True)
BUILTIN = {s.name: s for s in (DEFAULT, LLM, SWEEP, CROSSOURCE)}


def load_shape_set(spec) -> ShapeSet:
    """A ShapeSet from a built-in name, a YAML/JSON file path, or an existing ShapeSet."""
    if spec is None:
        return DEFAULT
    if isinstance(spec, ShapeSet):
        return spec
    text = str(spec)
    if text in BUILTIN:
        return BUILTIN[text]
    path = Path(text)
    if not path.is_file():
        if path.suffix.lower() in (".yaml", ".yml", ".json") or "/" in text or "\\" in text:
            raise SpecError(f"shape file {text} not found; give an existing YAML/JSON file, or a built-in set: "
                            f"{', '.join(BUILTIN)}")
        raise SpecError(f"unknown shape set {text!r}: use {', '.join(BUILTIN)} or a YAML/JSON file")
    return parse_shape_file(path)


def parse_shape_file(path: Path) -> ShapeSet:
    """Read a user's shape file; every problem with it is one line naming file and entry."""
    data = load_document(path)
    return shape_set_from_dict(data, str(path), default_name=path.stem)


def shape_set_from_dict(data, where: str, default_name: str = "custom") -> ShapeSet:
    if not isinstance(data, dict):
        raise SpecError(f"{where}: a shape file holds a mapping with keys gemm, rows, elementwise "
                        f"(or an op name), got {type(data).__name__}")
    allowed = {"name", GROUPED} | set(KINDS) | set(OP_KINDS) - {"gemm", "grouped_gemm"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r}; use name, {', '.join(KINDS)}, {GROUPED} or an op "
                        f"({', '.join(sorted(set(OP_KINDS) - {'gemm', 'grouped_gemm'}))})")
    lists = {key: _sizes(data[key], OP_KINDS.get(key, key), f"{where}: {key}")
             for key in data if key != "name"}
    if not any(lists.values()):
        raise SpecError(f"{where}: names no sizes; give at least one of {', '.join(KINDS)}, {GROUPED}")
    return ShapeSet(name=str(data.get("name") or default_name),
                    gemm=lists.get("gemm", ()), rows=lists.get("rows", ()),
                    elementwise=lists.get("elementwise", ()), grouped=lists.get(GROUPED, ()),
                    conv2d=lists.get("conv2d", ()), conv3d=lists.get("conv3d", ()), attention=lists.get("attention", ()),
                    per_op={k: v for k, v in lists.items() if k not in KINDS and k != GROUPED}, exact=True)


def _sizes(value, kind: str, where: str) -> tuple:
    if not isinstance(value, list):
        raise SpecError(f"{where} must be a list of sizes, got {value!r}")
    return tuple(_size(entry, kind, f"{where}[{i}]") for i, entry in enumerate(value))


def _size(entry, kind: str, where: str) -> tuple:
    if kind == GROUPED:
        if not isinstance(entry, list) or not entry:
            raise SpecError(f"{where} must be a non-empty list of [M, N, K] problems, got {entry!r}")
        return tuple(_size(p, "gemm", f"{where}[{i}]") for i, p in enumerate(entry))
    names = KINDS[kind]
    if isinstance(entry, dict):
        if set(entry) != set(names):
            raise SpecError(f"{where} must have keys {', '.join(names)}, got {entry!r}")
        entry = [entry[n] for n in names]
    elif not isinstance(entry, list):
        entry = [entry]
    if len(entry) != len(names) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                           for v in entry):
        raise SpecError(f"{where} must be {len(names)} positive int(s) ({', '.join(names)}), got {entry!r}")
    return tuple(entry) if kind != "elementwise" else entry[0]


def host_bytes(buffers: list) -> int:
    """Float64 bytes the verifier's host reference keeps for a group: every buffer once,
    and every output twice more (its reference and its error scale)."""
    total = 0
    for b in buffers:
        numel = 1
        for s in (b.shape if hasattr(b, "shape") else b["shape"]):
            numel *= int(s)
        role = b.role if hasattr(b, "role") else b.get("role", "in")
        total += numel * 8 * (3 if role in ("out", "inout") else 1)
    return total


SIZE_IN_GROUP_ID = re.compile(r"^(?:n\d+|M\d+x?N\d+(?:x?K\d+)?)$")


# a group-id part that spells named sizes: M2048xN4096, BT512xV32000, S2048xH32xKV8xD128
NAMED_SIZES_IN_GROUP_ID = re.compile(r"^[A-Za-z]+\d+(?:x[A-Za-z]+\d+)+$")


def group_shape(group_id: str, problem_json) -> str:
    """A group's size as a label: ``params["shape"]``, else a GEMM's M, N, K (a grouped
    GEMM's problem list), else the last part of the group id when it spells a size (the
    Triton suite's default groups), else the first part after the source that names sizes
    (a call description's ``liger/rms_norm/bfloat16/M2048xN4096``), else the shape of the
    problem's largest buffer (Inductor's kernels, Mirage, manifests); "-" without buffers."""
    try:
        problem = (json.loads(problem_json) or {}) if problem_json else {}
        params = problem.get("params") or {}
    except (ValueError, AttributeError):
        problem, params = {}, {}
    shape = params.get("shape")
    if isinstance(shape, dict) and shape:  # stored with sorted keys: put M, N, K back in order
        order = {name: i for i, name in enumerate(("M", "N", "K", "n", "B", "Sq", "Skv", "D"))}
        return "x".join(f"{k}{shape[k]}" for k in sorted(shape, key=lambda k: (order.get(k, 9), k)))
    if all(k in params for k in ("M", "N", "K")):
        return f"M{params['M']}xN{params['N']}xK{params['K']}"
    if isinstance(params.get("problems"), list) and params["problems"]:  # grouped GEMM
        return grouped_label(params["problems"])
    last = group_id.rsplit("/", 1)[-1]
    if SIZE_IN_GROUP_ID.match(last):
        return last
    named = [part for part in group_id.split("/")[1:] if NAMED_SIZES_IN_GROUP_ID.match(part)]
    if named:
        return named[0]
    shapes = [tuple(b.get("shape") or ()) for b in problem.get("buffers") or () if isinstance(b, dict)]
    largest = max(shapes, key=lambda shape: (math.prod(shape), len(shape)), default=None)
    return "x".join(str(int(d)) for d in largest) if largest else "-"
