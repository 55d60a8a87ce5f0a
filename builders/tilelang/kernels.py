"""The TileLang source's programs: a GEMM, a FlashAttention forward, an RMSNorm and a row
softmax written in TileLang, each with the tile/pipeline configurations its group's members
take, and the ptxds Problem each computes (buffers named as the registry's op expects, so
the problems join other sources' groups through ``dataset_spec.canonical``).

``Workload`` is plain data (it travels to build workers); ``program(workload, config)``
builds the TileLang PrimFunc and imports tilelang, so only the build step needs it.
"""
from __future__ import annotations

from dataclasses import dataclass

from dataset_spec import attention as canonical_attention
from dataset_spec.model import Buffer, Problem

SOURCE = "tilelang"
RMSNORM_EPS = 1e-6
# scores are exponentiated as 2^((s - max) * log2(e)): exp(s - max), the registry's attention (no 1/sqrt(d))
LOG2_E = 1.4426950408889634


@dataclass(frozen=True)
class Workload:
    """One program at one size: ``kind`` (gemm, attention, rmsnorm, softmax), its dtype,
    ``size`` (the group id's last part: small/large, or a shape set's label such as
    ``M4096xN4096xK4096``) and ``dims`` (gemm: M, N, K; attention: B (batch*heads), Sq, Skv,
    head dim; rmsnorm, softmax: rows, columns)."""
    kind: str
    dtype: str
    size: str
    dims: tuple

    @property
    def name(self) -> str:
        return f"{self.kind}_{DTYPE_TAGS[self.dtype]}"

    @property
    def group_id(self) -> str:
        return f"{SOURCE}/{self.name}/{self.size}"

    @property
    def archs(self) -> tuple:
        """Archs the program compiles for (fp8 tensor-core GEMMs need sm_90a's wgmma)."""
        return ("sm_90a",) if self.dtype.startswith("float8") else ("sm_80", "sm_90a")


DTYPE_TAGS = {"float16": "fp16", "bfloat16": "bf16", "float8_e4m3": "fp8e4m3", "float32": "fp32"}
TILELANG_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float8_e4m3": "float8_e4m3fn"}

# GEMM configs: block_M, block_N, block_K, num_stages, threads
GEMM_CONFIGS = (
    (128, 128, 32, 3, 128), (128, 128, 64, 2, 128), (64, 64, 32, 2, 128), (128, 256, 32, 3, 256),
    (64, 128, 32, 3, 128), (128, 64, 64, 3, 128), (256, 128, 32, 2, 256), (64, 64, 64, 4, 128),
    (128, 128, 32, 4, 256), (64, 256, 32, 2, 128),
)
# fp8 (sm_90a): K tiles of 64 or 128 bytes, B stored N x K (wgmma reads fp8 operands K-major)
FP8_GEMM_CONFIGS = (
    (128, 128, 64, 3, 128), (128, 128, 128, 2, 128), (64, 64, 64, 2, 128), (128, 256, 64, 3, 256),
    (64, 128, 64, 3, 128), (128, 64, 128, 3, 128), (256, 128, 64, 2, 256), (64, 64, 128, 4, 128),
    (128, 128, 64, 4, 256), (64, 256, 64, 2, 128),
)
# FlashAttention configs: block_M (queries), block_N (keys), num_stages, threads; the last
# six take 16 or 32 queries a block, for decode steps (Sq = 16) that larger tiles overrun
ATTENTION_CONFIGS = (
    (64, 64, 1, 128), (64, 64, 2, 128), (128, 64, 2, 128), (128, 128, 2, 256), (64, 128, 2, 128),
    (128, 64, 1, 256), (128, 32, 2, 128), (64, 32, 3, 128), (128, 128, 1, 256), (64, 64, 3, 256),
    (16, 64, 2, 32), (16, 128, 2, 32), (32, 64, 2, 64), (16, 64, 1, 32), (16, 32, 2, 32), (16, 128, 1, 32),
)
# RMSNorm configs: block_M (rows per block), block_N (columns per step), num_stages, threads
RMSNORM_CONFIGS = (
    (1, 1024, 1, 128), (1, 512, 2, 128), (2, 1024, 1, 256), (4, 256, 2, 128), (4, 1024, 2, 256),
    (8, 512, 2, 256), (2, 256, 3, 128), (8, 128, 3, 128), (1, 256, 2, 64), (16, 256, 2, 256),
)

# softmax configs (fp32 rows): block_M (rows per block), block_N (columns per step), num_stages, threads
SOFTMAX_CONFIGS = (
    (1, 1024, 2, 128), (1, 512, 2, 128), (2, 1024, 1, 256), (4, 256, 2, 128), (4, 512, 2, 256),
    (8, 128, 3, 128), (1, 2048, 1, 256), (2, 128, 2, 64), (16, 128, 2, 256), (1, 128, 2, 32),
)

CONFIG_KEYS = {
    "gemm": ("block_M", "block_N", "block_K", "num_stages", "threads"),
    "attention": ("block_M", "block_N", "num_stages", "threads"),
    "rmsnorm": ("block_M", "block_N", "num_stages", "threads"),
    "softmax": ("block_M", "block_N", "num_stages", "threads"),
}


def configs(workload: Workload) -> list:
    """The workload's configurations, in member order, as dicts of CONFIG_KEYS."""
    table = {"gemm": FP8_GEMM_CONFIGS if workload.dtype.startswith("float8") else GEMM_CONFIGS,
             "attention": ATTENTION_CONFIGS, "rmsnorm": RMSNORM_CONFIGS,
             "softmax": SOFTMAX_CONFIGS}[workload.kind]
    return [dict(zip(CONFIG_KEYS[workload.kind], c)) for c in table]


def _misfit(extent: int, block: int, what: str):
    if block > extent or extent % block:
        return f"{what} {extent} is not a multiple of the tile's {block}"
    return None


def config_misfit(workload: Workload, config: dict):
    """Why ``config`` cannot run ``workload``'s size (its tiles would overrun a dimension:
    the programs read and write whole tiles), or None. A shape set's sizes are whatever the
    user gives, so a tile is kept only where it divides its dimension."""
    if workload.kind == "gemm":
        m, n, k = workload.dims
        checks = ((m, "block_M", "M"), (n, "block_N", "N"), (k, "block_K", "K"))
    elif workload.kind == "attention":
        _, sq, skv, _ = workload.dims
        checks = ((sq, "block_M", "Sq"), (skv, "block_N", "Skv"))
    else:
        m, n = workload.dims
        checks = ((m, "block_M", "M (rows)"), (n, "block_N", "N (columns)"))
    for extent, knob, what in checks:
        reason = _misfit(extent, config[knob], what)
        if reason:
            return f"{reason} ({knob})"
    return None


# Small sizes state the functions other sources build (Triton's fp16 512^3 and bf16
# 768x512x384 GEMMs and fp16 2048x1024 RMSNorm; TVM's 2048^3 fp16 GEMM), so their
# canonical groups join; large sizes run well over 50 us on an H100.
WORKLOADS = [
    Workload("gemm", "float16", "small", (512, 512, 512)),
    Workload("gemm", "float16", "large", (2048, 2048, 2048)),
    Workload("gemm", "bfloat16", "small", (768, 512, 384)),
    Workload("gemm", "bfloat16", "large", (2048, 2048, 2048)),
    Workload("gemm", "float8_e4m3", "small", (512, 512, 512)),
    Workload("gemm", "float8_e4m3", "large", (4096, 4096, 4096)),
    Workload("attention", "float16", "small", (8, 512, 512, 64)),
    Workload("attention", "float16", "large", (32, 2048, 2048, 64)),
    Workload("rmsnorm", "float16", "small", (2048, 1024)),
    Workload("rmsnorm", "float16", "large", (8192, 4096)),
]

# Programs a shape set states at its sizes (``--shapes``): (kind, dtype, the op whose sizes
# it takes); fp8 GEMM keeps its own two sizes. Softmax is built at a shape set's sizes only.
SHAPED_PROGRAMS = (("gemm", "float16", "gemm"), ("gemm", "bfloat16", "gemm"), ("attention", "float16", "attention"),
                   ("rmsnorm", "float16", "rmsnorm"), ("softmax", "float32", "softmax"))


def shaped_workloads(shape_set) -> list:
    """The workloads of a shape set: each shaped program at each size the set gives its op,
    the size's label in the group id (``tilelang/attention_fp16/B2xSq256xSkv4096xD64``);
    ``default`` gives WORKLOADS."""
    from builders.shapes import OP_KINDS, shape_label
    if shape_set.is_default:
        return list(WORKLOADS)
    out = []
    for kind, dtype, op in SHAPED_PROGRAMS:
        for size in dict.fromkeys(tuple(s) for s in shape_set.sizes_for(op)):
            out.append(Workload(kind, dtype, shape_label(OP_KINDS[op], size), tuple(int(v) for v in size)))
    return out


def problem(w: Workload) -> Problem:
    """The Problem ``w`` computes, in the registry's terms."""
    if w.kind == "gemm":
        m, n, k = w.dims
        fp8 = w.dtype.startswith("float8")
        out = "float16" if fp8 else w.dtype
        # fp8 wgmma adds in about 14 bits, not float32's 24 (numerics.ACCUMULATORS), as CUTLASS's
        # fp8 problems state it; TileLang keeps the whole K in the tensor-core accumulator
        params = {"M": m, "N": n, "K": k, "layout_a": "row", "layout_b": "col" if fp8 else "row",
                  "alpha": 1.0, "beta": 0.0, "accumulator": "fp8_tensor_core" if fp8 else "float32"}
        return Problem(w.group_id, "gemm", [Buffer("A", w.dtype, (m, k)),
                                            Buffer("B", w.dtype, (n, k) if fp8 else (k, n)),
                                            Buffer("D", out, (m, n), "out")], params)
    if w.kind == "attention":
        # the canonical attention function itself: its buffers and its float16-safe domain
        return Problem(w.group_id, "attention", canonical_attention.buffers(*w.dims), canonical_attention.params(*w.dims))
    if w.kind == "softmax":
        m, n = w.dims
        return Problem(w.group_id, "softmax", [Buffer("x", w.dtype, (m, n)), Buffer("out", w.dtype, (m, n), "out")])
    if w.kind == "rmsnorm":
        m, n = w.dims
        return Problem(w.group_id, "rmsnorm", [Buffer("x", w.dtype, (m, n)), Buffer("w", w.dtype, (n,)),
                                               Buffer("out", w.dtype, (m, n), "out")], {"eps": RMSNORM_EPS})
    raise ValueError(f"unknown TileLang workload kind {w.kind!r}")


def program(w: Workload, config: dict):
    """The TileLang PrimFunc of ``w`` under ``config``; its parameters are the problem's
    buffers in order, named alike."""
    if w.kind == "gemm":
        return _gemm(*w.dims, TILELANG_DTYPES[w.dtype], **config)
    if w.kind == "attention":
        return _attention(*w.dims, **config)
    if w.kind == "rmsnorm":
        return _rmsnorm(*w.dims, **config)
    if w.kind == "softmax":
        return _softmax(*w.dims, **config)
    raise ValueError(f"unknown TileLang workload kind {w.kind!r}")


def _gemm(M, N, K, dtype, block_M, block_N, block_K, num_stages, threads):
    """D = A @ B; fp8 reads B stored N x K (``transpose_B``), as its wgmma needs."""
    import tilelang.language as T
    if dtype.startswith("float8"):
        return _gemm_fp8(M, N, K, dtype, block_M, block_N, block_K, num_stages, threads)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), D: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, acc)
            T.copy(acc, D[by * block_M, bx * block_N])
    return main


def _gemm_fp8(M, N, K, dtype, block_M, block_N, block_K, num_stages, threads):
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), D: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, acc, transpose_B=True)
            T.copy(acc, D[by * block_M, bx * block_N])
    return main


def _attention(BH, Sq, Skv, Dh, block_M, block_N, num_stages, threads):
    """O = softmax(Q @ K) @ V with K stored [BH, d, Skv] (the canonical layout), online
    softmax over key blocks (FlashAttention-2's forward); a block takes block_M queries."""
    import tilelang.language as T
    dtype, accum = "float16", "float32"

    @T.prim_func
    def main(Q: T.Tensor((BH, Sq, Dh), dtype), K: T.Tensor((BH, Dh, Skv), dtype),
             V: T.Tensor((BH, Skv, Dh), dtype), O: T.Tensor((BH, Sq, Dh), dtype)):
        with T.Kernel(T.ceildiv(Sq, block_M), BH, threads=threads) as (bx, bz):
            Q_shared = T.alloc_shared((block_M, Dh), dtype)
            K_shared = T.alloc_shared((Dh, block_N), dtype)
            V_shared = T.alloc_shared((block_N, Dh), dtype)
            O_shared = T.alloc_shared((block_M, Dh), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), accum)
            acc_s_cast = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, Dh), accum)
            scores_max = T.alloc_fragment((block_M,), accum)
            scores_max_prev = T.alloc_fragment((block_M,), accum)
            scores_scale = T.alloc_fragment((block_M,), accum)
            scores_sum = T.alloc_fragment((block_M,), accum)
            logsum = T.alloc_fragment((block_M,), accum)

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            for k in T.Pipelined(T.ceildiv(Skv, block_N), num_stages=num_stages):
                T.copy(K[bz, :, k * block_N:(k + 1) * block_N], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2((scores_max_prev[i] - scores_max[i]) * LOG2_E)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2((acc_s[i, j] - scores_max[i]) * LOG2_E)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, Dh):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, k * block_N:(k + 1) * block_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, Dh):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, O[bz, bx * block_M:(bx + 1) * block_M, :])
    return main


def _rmsnorm(M, N, block_M, block_N, num_stages, threads):
    """out = x / sqrt(mean(x^2) + eps) * w: a pipelined pass over column blocks for the
    sum of squares, a second to scale (one block when block_N = N)."""
    import tilelang.language as T
    dtype, accum = "float16", "float32"

    @T.prim_func
    def main(x: T.Tensor((M, N), dtype), w: T.Tensor((N,), dtype), out: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x_shared = T.alloc_shared((block_M, block_N), dtype)
            y_shared = T.alloc_shared((block_M, block_N), dtype)
            x_local = T.alloc_fragment((block_M, block_N), accum)
            y_local = T.alloc_fragment((block_M, block_N), dtype)
            sq = T.alloc_fragment((block_M, block_N), accum)
            partial = T.alloc_fragment((block_M,), accum)
            total = T.alloc_fragment((block_M,), accum)
            T.clear(total)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                T.copy(x[bx * block_M, k * block_N], x_shared)
                T.copy(x_shared, x_local)
                for i, j in T.Parallel(block_M, block_N):
                    sq[i, j] = x_local[i, j] * x_local[i, j]
                T.reduce_sum(sq, partial, dim=1)
                for i in T.Parallel(block_M):
                    total[i] += partial[i]
            for i in T.Parallel(block_M):
                total[i] = T.rsqrt(total[i] / N + RMSNORM_EPS)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                T.copy(x[bx * block_M, k * block_N], y_shared)
                T.copy(y_shared, x_local)
                for i, j in T.Parallel(block_M, block_N):
                    y_local[i, j] = x_local[i, j] * total[i] * w[k * block_N + j]
                T.copy(y_local, out[bx * block_M, k * block_N])
    return main


def _softmax(M, N, block_M, block_N, num_stages, threads):
    """out = exp(x - max) / sum(exp(x - max)) over each row, float32: an online pass over
    column blocks for each row's max and sum (the running sum rescaled as the max grows),
    a second to write the normalised exponentials. Each pipelined loop stages its own
    shared tile (one tile shared by two pipelines fails TileLang's sm_90a lowering).
    x - max is taken before the scaling by log2(e): x * log2(e) - max * log2(e), contracted
    to an fma, leaves the rounding error of max * log2(e) (up to 1e31 at |x| ~ 1e38) where
    the row's maximum should give exp2(0), and the row's sum becomes 0 or inf."""
    import tilelang.language as T
    dtype = "float32"

    @T.prim_func
    def main(x: T.Tensor((M, N), dtype), out: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x_shared = T.alloc_shared((block_M, block_N), dtype)
            y_shared = T.alloc_shared((block_M, block_N), dtype)
            x_local = T.alloc_fragment((block_M, block_N), dtype)
            row_max = T.alloc_fragment((block_M,), dtype)
            row_max_prev = T.alloc_fragment((block_M,), dtype)
            row_sum = T.alloc_fragment((block_M,), dtype)
            block_sum = T.alloc_fragment((block_M,), dtype)
            T.fill(row_max, -T.infinity(dtype))
            T.clear(row_sum)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                T.copy(x[bx * block_M, k * block_N], x_shared)
                T.copy(x_shared, x_local)
                T.copy(row_max, row_max_prev)
                T.reduce_max(x_local, row_max, dim=1, clear=False)
                for i, j in T.Parallel(block_M, block_N):
                    x_local[i, j] = T.exp2((x_local[i, j] - row_max[i]) * LOG2_E)
                T.reduce_sum(x_local, block_sum, dim=1)
                for i in T.Parallel(block_M):
                    row_sum[i] = row_sum[i] * T.exp2((row_max_prev[i] - row_max[i]) * LOG2_E) + block_sum[i]
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                T.copy(x[bx * block_M, k * block_N], y_shared)
                T.copy(y_shared, x_local)
                for i, j in T.Parallel(block_M, block_N):
                    x_local[i, j] = T.exp2((x_local[i, j] - row_max[i]) * LOG2_E) / row_sum[i]
                T.copy(x_local, out[bx * block_M, k * block_N])
    return main
