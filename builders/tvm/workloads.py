"""The TVM source's workloads: per workload a TE definition and the ptxds Problem it
computes, at a small and a large size.

Each workload is one tensor program; its buffers are named as the registry's op expects
(``dataset_spec/ops/``), so the TE placeholders and the Problem's buffers share
names and the lowered kernels' pointer parameters map onto them by name.
"""
from __future__ import annotations

from dataclasses import dataclass

from dataset_spec.model import Buffer, Problem

SOURCE = "tvm"
RMSNORM_EPS = 1e-6  # Triton's rmsnorm groups use it too, so both join one canonical group


@dataclass(frozen=True)
class Workload:
    """One tensor program at one size. ``dims`` are its sizes; ``build_te`` and ``problem``
    read them."""
    name: str
    size: str       # small / large
    op: str         # registry op
    dims: tuple

    @property
    def group_id(self) -> str:
        return f"{SOURCE}/{self.name}/{self.size}"

    @property
    def symbol(self) -> str:
        return f"tvm_{self.name}"

    @property
    def tensor_core_inputs(self) -> bool:
        """float16 operands with float32 accumulation: tensor cores can compute it."""
        return self.name in TENSOR_CORE_WORKLOADS

    @property
    def tensor_core_members(self) -> bool:
        """The group gets tensor-core members: WMMA (float16) or mma.sync (float16, bfloat16)."""
        return self.name in TENSOR_CORE_WORKLOADS or self.name in MMA_WORKLOADS


# workloads whose groups also get tensor-core members (float16 operands, float32 accumulation)
TENSOR_CORE_WORKLOADS = ("matmul_fp16", "batch_matmul_fp16")
# their tensor-core schedules: (key, dlight rule, the intrinsic it tensorizes with, block tile).
# The tile is (warps along M, warps along N, 16x16 fragments per warp along M, along N,
# 16-wide k steps per shared-memory stage); None keeps the rule's own (4, 4, 2, 2, 4):
# 128x128x64 per block, 16 warps.
WMMA = "wmma m16n16k16 f16.f16.f32"
TENSOR_CORE_SCHEDULES = (
    ("dlight-tc/wmma", "MatmulTensorization", WMMA, None),
    ("dlight-tc/wmma/w4x2f2x2k2", "MatmulTensorization", WMMA, (4, 2, 2, 2, 2)),    # 128x64x32, 8 warps
    ("dlight-tc/wmma/w2x4f4x2k2", "MatmulTensorization", WMMA, (2, 4, 4, 2, 2)),    # 128x128x32, 8 warps
)
# workloads whose groups also get mma.sync tensor-core members (builders/tvm/mma.py), with
# their operand dtype; bfloat16 too, which dlight's WMMA rule does not take
MMA_WORKLOADS = {"matmul_fp16": "float16", "matmul_bf16": "bfloat16", "batch_matmul_fp16": "float16",
                 "conv2d_nhwc_fp16": "float16"}
# Left out: 64x64 block tiles, (2, 2, 2, 2, 4) and (4, 4, 1, 1, 4), fail in TVM's LowerIntrin
# ("tvm_access_ptr element type must match the source buffer", float16 vs float32)


def _gemm_te(dims, dtype, te):
    m, n, k = dims
    A = te.placeholder((m, k), dtype, name="A")
    B = te.placeholder((k, n), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    if dtype == "float32":
        C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="D")
        return [A, B, C]
    acc = te.compute((m, n), lambda i, j: te.sum(A[i, r].astype("float32") * B[r, j].astype("float32"), axis=r),
                     name="acc")
    D = te.compute((m, n), lambda i, j: acc[i, j].astype(dtype), name="D")
    return [A, B, D]


def _batch_matmul_te(dims, te, dtype="float32"):
    b, m, n, k = dims
    A = te.placeholder((b, m, k), dtype, name="A")
    B = te.placeholder((b, k, n), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    if dtype == "float32":
        C = te.compute((b, m, n), lambda z, i, j: te.sum(A[z, i, r] * B[z, r, j], axis=r), name="C")
        return [A, B, C]
    acc = te.compute((b, m, n), lambda z, i, j: te.sum(A[z, i, r].astype("float32") * B[z, r, j].astype("float32"),
                                                       axis=r), name="acc")
    C = te.compute((b, m, n), lambda z, i, j: acc[z, i, j].astype(dtype), name="C")
    return [A, B, C]


def _conv_te(dims, te, topi):
    n, c, h, w, k, r = dims
    X = te.placeholder((n, c, h, w), "float32", name="X")
    W = te.placeholder((k, c, r, r), "float32", name="W")
    bias = te.placeholder((k,), "float32", name="bias")
    conv = topi.nn.conv2d_nchw(X, W, stride=1, padding=r // 2, dilation=1)
    Y = te.compute(conv.shape, lambda a, b, i, j: te.max(conv[a, b, i, j] + bias[b], 0.0), name="Y")
    return [X, W, bias, Y]


def _conv_nhwc_te(dims, te):
    """conv2d fprop, NHWC activations, KRSC filters (the registry's conv2d_fprop and CUTLASS's
    layout), stride 1, padding R // 2, float16 operands with float32 accumulation."""
    import tvm
    n, h, w, c, k, r = dims
    pad = r // 2
    x = te.placeholder((n, h, w, c), "float16", name="x")
    filt = te.placeholder((k, r, r, c), "float16", name="w")
    padded = te.compute(
        (n, h + 2 * pad, w + 2 * pad, c),
        lambda a, i, j, ch: te.if_then_else(te.all(i >= pad, i < h + pad, j >= pad, j < w + pad),
                                            x[a, i - pad, j - pad, ch], tvm.tirx.const(0, "float16")),
        name="pad")
    rr, rs, rc = te.reduce_axis((0, r), "rr"), te.reduce_axis((0, r), "rs"), te.reduce_axis((0, c), "rc")
    acc = te.compute((n, h, w, k), lambda a, p, q, f: te.sum(
        padded[a, p + rr, q + rs, rc].astype("float32") * filt[f, rr, rs, rc].astype("float32"), axis=[rr, rs, rc]),
        name="acc")
    y = te.compute((n, h, w, k), lambda a, p, q, f: acc[a, p, q, f].astype("float16"), name="y")
    return [x, filt, y]


def _depthwise_te(dims, te, topi):
    n, c, h, w, r = dims
    X = te.placeholder((n, c, h, w), "float32", name="X")
    W = te.placeholder((c, 1, r, r), "float32", name="W")
    Y = topi.nn.depthwise_conv2d_nchw(X, W, stride=1, padding=r // 2, dilation=1)
    return [X, W, Y]


def _softmax_te(dims, te, topi):
    rows, cols = dims
    x = te.placeholder((rows, cols), "float32", name="x")
    return [x, topi.nn.softmax(x)]


def _rmsnorm_te(dims, te, eps=RMSNORM_EPS):
    """RMSNorm of float16 rows with a float32 mean of squares, as Triton's and the
    registry's rmsnorm state it: out = x / sqrt(mean(x^2) + eps) * w."""
    rows, cols = dims
    x = te.placeholder((rows, cols), "float16", name="x")
    w = te.placeholder((cols,), "float16", name="w")
    r = te.reduce_axis((0, cols), name="k")
    squares = te.compute((rows,), lambda i: te.sum(x[i, r].astype("float32") * x[i, r].astype("float32"), axis=r),
                         name="squares")
    out = te.compute(
        (rows, cols),
        lambda i, j: (x[i, j].astype("float32") * te.rsqrt(squares[i] / float(cols) + eps)
                      * w[j].astype("float32")).astype("float16"),
        name="out")
    return [x, w, out]


def _row_sum_te(dims, te):
    rows, cols = dims
    x = te.placeholder((rows, cols), "float32", name="x")
    r = te.reduce_axis((0, cols), name="k")
    return [x, te.compute((rows,), lambda i: te.sum(x[i, r], axis=r), name="out")]


def build_te(workload: Workload) -> list:
    """The TE tensors [inputs..., output] of ``workload``."""
    from tvm import te, topi
    d = workload.dims
    kind = workload.name
    if kind == "matmul_fp32":
        return _gemm_te(d, "float32", te)
    if kind == "matmul_fp16":
        return _gemm_te(d, "float16", te)
    if kind == "matmul_bf16":
        return _gemm_te(d, "bfloat16", te)
    if kind == "rmsnorm":
        return _rmsnorm_te(d, te)
    if kind == "batch_matmul":
        return _batch_matmul_te(d, te)
    if kind == "batch_matmul_fp16":
        return _batch_matmul_te(d, te, "float16")
    if kind == "conv2d_bias_relu":
        return _conv_te(d, te, topi)
    if kind == "depthwise_conv2d":
        return _depthwise_te(d, te, topi)
    if kind == "conv2d_nhwc_fp16":
        return _conv_nhwc_te(d, te)
    if kind == "softmax":
        return _softmax_te(d, te, topi)
    if kind == "row_sum":
        return _row_sum_te(d, te)
    raise ValueError(f"unknown TVM workload {kind!r}")


def problem(workload: Workload) -> Problem:
    """The Problem of ``workload``: the registry op, buffers named as the TE tensors."""
    d, kind, pid = workload.dims, workload.name, workload.group_id
    if kind.startswith("matmul"):
        m, n, k = d
        dtype = {"matmul_fp16": "float16", "matmul_bf16": "bfloat16"}.get(kind, "float32")
        return Problem(pid, "gemm", [Buffer("A", dtype, (m, k)), Buffer("B", dtype, (k, n)),
                                     Buffer("D", dtype, (m, n), "out")],
                       {"M": m, "N": n, "K": k, "accumulator": "float32"})
    if kind == "batch_matmul":
        b, m, n, k = d
        return Problem(pid, "batch_matmul", [Buffer("A", "float32", (b, m, k)), Buffer("B", "float32", (b, k, n)),
                                             Buffer("C", "float32", (b, m, n), "out")])
    if kind == "batch_matmul_fp16":
        b, m, n, k = d
        return Problem(pid, "batch_matmul", [Buffer("A", "float16", (b, m, k)), Buffer("B", "float16", (b, k, n)),
                                             Buffer("C", "float16", (b, m, n), "out")],
                       {"accumulator": "float32"})
    if kind == "conv2d_bias_relu":
        n, c, h, w, k, r = d
        return Problem(pid, "conv2d_bias_relu",
                       [Buffer("X", "float32", (n, c, h, w)), Buffer("W", "float32", (k, c, r, r)),
                        Buffer("bias", "float32", (k,)), Buffer("Y", "float32", (n, k, h, w), "out")],
                       {"stride": 1, "padding": r // 2, "layout": "NCHW"})
    if kind == "conv2d_nhwc_fp16":
        n, h, w, c, k, r = d
        return Problem(pid, "conv2d_fprop",
                       [Buffer("x", "float16", (n, h, w, c)), Buffer("w", "float16", (k, r, r, c)),
                        Buffer("y", "float16", (n, h, w, k), "out")],
                       {"conv_kind": "fprop", "stride": [1, 1], "padding": [r // 2] * 2, "dilation": [1, 1],
                        "groups": 1, "alpha": 1.0, "beta": 0.0, "accumulator": "float32"})
    if kind == "depthwise_conv2d":
        n, c, h, w, r = d
        return Problem(pid, "depthwise_conv2d",
                       [Buffer("X", "float32", (n, c, h, w)), Buffer("W", "float32", (c, 1, r, r)),
                        Buffer("DepthwiseConv2d", "float32", (n, c, h, w), "out")],
                       {"stride": 1, "padding": r // 2, "layout": "NCHW"})
    if kind == "softmax":
        rows, cols = d
        return Problem(pid, "softmax", [Buffer("x", "float32", (rows, cols)),
                                        Buffer("T_softmax_norm", "float32", (rows, cols), "out")])
    if kind == "rmsnorm":
        rows, cols = d
        return Problem(pid, "rmsnorm", [Buffer("x", "float16", (rows, cols)), Buffer("w", "float16", (cols,)),
                                        Buffer("out", "float16", (rows, cols), "out")],
                       {"eps": RMSNORM_EPS})
    if kind == "row_sum":
        rows, cols = d
        return Problem(pid, "row_sum", [Buffer("x", "float32", (rows, cols)), Buffer("out", "float32", (rows,), "out")])
    raise ValueError(f"unknown TVM workload {kind!r}")


# Large sizes: the fastest member runs >= 50 us on an H100, and the float64 reference of
# each stays a few seconds on the host (at most ~600 MiB of float64 copies).
WORKLOADS = [
    Workload("matmul_fp32", "small", "gemm", (256, 256, 256)),
    Workload("matmul_fp32", "large", "gemm", (2048, 2048, 2048)),
    Workload("matmul_fp16", "small", "gemm", (256, 256, 256)),
    Workload("matmul_fp16", "large", "gemm", (2048, 2048, 2048)),
    Workload("matmul_bf16", "small", "gemm", (256, 256, 256)),
    Workload("matmul_bf16", "large", "gemm", (2048, 2048, 2048)),
    Workload("batch_matmul", "small", "batch_matmul", (4, 128, 128, 128)),
    Workload("batch_matmul", "large", "batch_matmul", (16, 512, 512, 512)),
    Workload("batch_matmul_fp16", "small", "batch_matmul", (4, 128, 128, 128)),
    Workload("batch_matmul_fp16", "large", "batch_matmul", (16, 512, 512, 512)),
    Workload("conv2d_bias_relu", "small", "conv2d_bias_relu", (1, 32, 28, 28, 64, 3)),
    Workload("conv2d_bias_relu", "large", "conv2d_bias_relu", (8, 64, 56, 56, 64, 3)),
    Workload("conv2d_nhwc_fp16", "small", "conv2d_fprop", (2, 16, 16, 64, 128, 3)),
    Workload("conv2d_nhwc_fp16", "large", "conv2d_fprop", (8, 56, 56, 64, 128, 3)),
    Workload("depthwise_conv2d", "small", "depthwise_conv2d", (1, 64, 56, 56, 3)),
    Workload("depthwise_conv2d", "large", "depthwise_conv2d", (8, 256, 112, 112, 3)),
    Workload("softmax", "small", "softmax", (64, 1000)),
    Workload("softmax", "large", "softmax", (8192, 4096)),
    Workload("rmsnorm", "small", "rmsnorm", (64, 1024)),
    Workload("rmsnorm", "large", "rmsnorm", (8192, 4096)),
    Workload("row_sum", "small", "row_sum", (1024, 1000)),
    Workload("row_sum", "large", "row_sum", (8192, 8192)),
]

# Workloads a shape set states at its sizes (``--shapes``), by the kind of size they take
# (builders/shapes.py); the others keep their own two sizes and are built with ``default``.
SHAPED_WORKLOADS = (("matmul_fp16", "gemm"), ("matmul_bf16", "gemm"), ("matmul_fp32", "gemm"),
                    ("softmax", "softmax"), ("rmsnorm", "rmsnorm"))


def shaped_workloads(shape_set) -> list:
    """The workloads of a shape set: each shaped workload at each size of its kind, the
    size's label (``M4096xN4096xK4096``) in the group id; ``default`` gives WORKLOADS."""
    from builders.shapes import OP_KINDS, shape_label
    if shape_set.is_default:
        return list(WORKLOADS)
    out = []
    for name, op in SHAPED_WORKLOADS:
        for size in dict.fromkeys(shape_set.sizes_for(op)):
            out.append(Workload(name, shape_label(OP_KINDS[op], size), "gemm" if op == "gemm" else op, tuple(size)))
    return out
