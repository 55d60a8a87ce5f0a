"""Tensor-core members from ``mma.sync m16n8k16``: a TIR schedule of the TVM matmul,
batch_matmul and NHWC conv (as its implicit GEMM) workloads that tiles the output per thread
block and per warp, stages A and B in dynamic shared memory through a multi-stage
``cp.async`` pipeline, loads 16x16 fragments with ``ldmatrix`` and tensorizes the products
with TVM's mma intrinsics.

One schedule function, parameterised by an ``MmaConfig`` (block tile, warp tile, k chunk,
pipeline stages); ``MMA_CONFIGS`` are the members. float16 uses the intrinsics of the
pinned TVM wheel (``tvm.s_tir.tensor_intrin.cuda``); that module builds its ldmatrix and
mma intrinsics for float16 only, so ``register_intrinsics`` registers the bfloat16 ones from
the same description (PTX ``ldmatrix`` moves 16-bit elements of either type and
``mma.sync.m16n8k16`` takes ``bf16`` operands with a float32 accumulator).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from .workloads import MMA_WORKLOADS

WARP_SIZE = 32
FRAGMENT = 16          # an ldmatrix x4 / two m16n8k16 mma.sync cover a 16x16 tile
COPY_VECTOR = 8        # 16-bit elements per 16-byte cp.async
SHARED_PAD = 8         # elements added to each shared-memory row: ldmatrix rows hit distinct banks
EPILOGUE_PAD = 4       # float32 elements added to each row of the accumulator's shared staging
# lowering options: pipeline stage 0 becomes cp.async; and no common-subexpression pass: its
# let-bound fragment offsets (``cse_v9`` for ``threadIdx.x * 8``) hide the lane coefficient
# from LowerWarpMemory, which then fails ("require positive constant coefficient on warp index")
LOWERING_CONFIG = {"tirx.use_async_copy": 1, "tirx.disable_cse_tir": 1}
DTYPES = {"float16": "f16", "bfloat16": "bf16"}


@dataclass(frozen=True)
class MmaConfig:
    """One member: the thread block's output tile (block_m x block_n) and k chunk staged per
    pipeline stage, each warp's output tile (warp_m x warp_n), and the number of
    shared-memory stages the cp.async pipeline keeps in flight."""
    block_m: int
    block_n: int
    block_k: int
    warp_m: int
    warp_n: int
    stages: int

    @property
    def key(self) -> str:
        return (f"mma/b{self.block_m}x{self.block_n}x{self.block_k}"
                f"/w{self.warp_m}x{self.warp_n}/s{self.stages}")

    @property
    def warps(self) -> int:
        return (self.block_m // self.warp_m) * (self.block_n // self.warp_n)

    def unfit(self, m: int, n: int, k: int) -> str:
        """Why this tile cannot schedule an m x n x k product, or ""."""
        if m % self.block_m or n % self.block_n or k % self.block_k:
            return f"block tile {self.block_m}x{self.block_n}x{self.block_k} does not divide {m}x{n}x{k}"
        if k // self.block_k < self.stages:
            return f"{k // self.block_k} k chunks are fewer than {self.stages} pipeline stages"
        return ""

    def check(self) -> None:
        """Raise ValueError for a tile the schedule cannot express."""
        if self.block_m % self.warp_m or self.block_n % self.warp_n:
            raise ValueError(f"{self.key}: warp tile must divide the block tile")
        if self.warp_m % FRAGMENT or self.warp_n % FRAGMENT or self.block_k % FRAGMENT:
            raise ValueError(f"{self.key}: warp tile and k chunk must be multiples of {FRAGMENT}")
        if self.stages < 2:
            raise ValueError(f"{self.key}: a pipeline needs at least 2 stages")
        per_copy = self.warps * WARP_SIZE * COPY_VECTOR
        if (self.block_m * self.block_k) % per_copy or (self.block_k * self.block_n) % per_copy:
            raise ValueError(f"{self.key}: the A and B tiles must split into {per_copy}-element cooperative copies")


# The most dynamic shared memory one block may opt in to: A100 (sm_80) 163 KiB, H100 227 KiB
MMA_CONFIGS = (
    MmaConfig(128, 128, 32, 64, 64, 3),    # 4 warps, the classic Ampere tile
    MmaConfig(128, 128, 32, 64, 64, 4),
    MmaConfig(128, 128, 32, 64, 32, 3),    # 8 warps
    MmaConfig(128, 256, 32, 64, 64, 3),    # 8 warps
    MmaConfig(256, 128, 32, 64, 64, 3),    # 8 warps
    MmaConfig(128, 128, 64, 64, 64, 2),    # a longer k chunk, double buffered
    MmaConfig(128, 128, 64, 64, 64, 3),    # ... and triple buffered
    MmaConfig(128, 256, 64, 64, 64, 3),    # 8 warps; 2048^2 outputs in one wave of 128 CTAs
    MmaConfig(256, 128, 64, 64, 64, 3),
    MmaConfig(64, 64, 32, 32, 32, 4),      # 4 warps, for the small sizes
    MmaConfig(64, 128, 32, 32, 64, 3),
)


def intrinsic_label(dtype: str, stages: int) -> str:
    """``variant.intrinsic`` of a member."""
    short = DTYPES[dtype]
    return f"mma.sync m16n8k16 {short}.{short}.f32 (ldmatrix, cp.async {stages} stages)"


def _ldmatrix_intrin(dtype: str, matrix: str):
    """(desc, impl) of a 16x16 ldmatrix.x4 from dynamic shared memory into a warp fragment,
    for row-major A (i, k) or row-major B (k, j; loaded transposed): TVM's
    ``get_ldmatrix_intrin(16, ..., transposed=False, "shared.dyn")`` with ``dtype`` in place of
    float16."""
    from tvm.s_tir.tensor_intrin.cuda import shared_16x16_to_ldmatrix_32x8_layout as layout
    from tvm.script import tirx as T
    from tvm.runtime import convert
    local = FRAGMENT * FRAGMENT // WARP_SIZE
    half_warp = convert(WARP_SIZE // 2)
    transpose = matrix == "B"

    @T.prim_func(s_tir=True)
    def desc(warp_handle: T.handle, shared_handle: T.handle) -> None:
        shared = T.match_buffer(shared_handle, (FRAGMENT, FRAGMENT), dtype, align=64, offset_factor=FRAGMENT,
                                scope="shared.dyn")
        warp = T.match_buffer(warp_handle, (WARP_SIZE, local), dtype, align=64, offset_factor=FRAGMENT, scope="warp")
        with T.sblock("root"):
            T.reads(shared[0:FRAGMENT, 0:FRAGMENT])
            T.writes(warp[0:WARP_SIZE, 0:local])
            for ax0, ax1 in T.grid(FRAGMENT, FRAGMENT):
                with T.sblock("shared_warp"):
                    v0, v1 = T.axis.remap("SS", [ax0, ax1])
                    T.reads(shared[v0, v1])
                    thread_id, local_id = T.meta_var(layout(v0, v1))
                    T.writes(warp[thread_id, local_id])
                    warp[thread_id, local_id] = shared[v0, v1]

    @T.prim_func(s_tir=True)
    def impl(warp_handle: T.handle, shared_handle: T.handle) -> None:
        s0 = T.int32()
        s1 = T.int32()
        shared = T.match_buffer(shared_handle, (FRAGMENT, FRAGMENT), dtype, align=64, offset_factor=FRAGMENT,
                                scope="shared.dyn", strides=[s0, s1])
        warp = T.match_buffer(warp_handle, (WARP_SIZE, local), dtype, align=64, offset_factor=FRAGMENT, scope="warp")
        with T.sblock("root"):
            T.reads(shared[0:FRAGMENT, 0:FRAGMENT])
            T.writes(warp[0:WARP_SIZE, 0:local])
            for tx in T.thread_binding(0, WARP_SIZE, "threadIdx.x"):
                T.evaluate(T.ptx_legacy.ldmatrix(
                    transpose, 4, ".b16", warp.data, warp.elem_offset + convert(local) * tx,
                    shared.access_ptr("r"), s0 * (tx % half_warp) + 8 * (tx // half_warp), dtype=dtype))

    return desc, impl


def _mma_intrin(dtype: str):
    """(desc, impl) of a 16x16x16 product of two warp fragments accumulated in float32, as two
    ``mma.sync.m16n8k16.row.col``: TVM's ``get_mma_intrin(16, ...)`` with ``dtype`` operands."""
    from tvm.s_tir.tensor_intrin.cuda import shared_16x16_to_ldmatrix_32x8_layout as layout
    from tvm.script import tirx as T
    from tvm.runtime import convert
    from tvm.tirx import Cast
    local = FRAGMENT * FRAGMENT // WARP_SIZE
    short = {"float16": "fp16", "bfloat16": "bf16"}[dtype]

    @T.prim_func(s_tir=True)
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (WARP_SIZE, local), dtype, align=64, offset_factor=FRAGMENT, scope="warp")
        B = T.match_buffer(b, (WARP_SIZE, local), dtype, align=64, offset_factor=FRAGMENT, scope="warp")
        C = T.match_buffer(c, (WARP_SIZE, local), "float32", align=64, offset_factor=FRAGMENT, scope="warp")
        with T.sblock("root"):
            T.reads(C[0:WARP_SIZE, 0:local], A[0:WARP_SIZE, 0:local], B[0:WARP_SIZE, 0:local])
            T.writes(C[0:WARP_SIZE, 0:local])
            for i, j, k in T.grid(FRAGMENT, FRAGMENT, FRAGMENT):
                with T.sblock("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    thread_c, local_c = T.meta_var(layout(vi, vj))
                    thread_a, local_a = T.meta_var(layout(vi, vk))
                    thread_b, local_b = T.meta_var(layout(vk, vj))
                    T.reads(C[thread_c, local_c], A[thread_a, local_a], B[thread_b, local_b])
                    T.writes(C[thread_c, local_c])
                    C[thread_c, local_c] += Cast("float32", A[thread_a, local_a]) * Cast("float32", B[thread_b, local_b])

    @T.prim_func(s_tir=True)
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (WARP_SIZE, local), dtype, align=64, offset_factor=FRAGMENT, scope="warp")
        B = T.match_buffer(b, (WARP_SIZE, local), dtype, align=64, offset_factor=FRAGMENT, scope="warp")
        C = T.match_buffer(c, (WARP_SIZE, local), "float32", align=64, offset_factor=FRAGMENT, scope="warp")
        with T.sblock("root"):
            T.reads(C[0:WARP_SIZE, 0:local], A[0:WARP_SIZE, 0:local], B[0:WARP_SIZE, 0:local])
            T.writes(C[0:WARP_SIZE, 0:local])
            for tx in T.thread_binding(0, WARP_SIZE, "threadIdx.x"):
                # two m16n8k16 products: the fragment's left and right 8 columns
                T.evaluate(T.ptx_legacy.mma(
                    "m16n8k16", "row", "col", short, short, "fp32",
                    A.data, A.elem_offset + tx * convert(local),
                    B.data, B.elem_offset + tx * convert(local),
                    C.data, C.elem_offset + tx * convert(local), False, dtype="float32"))
                T.evaluate(T.ptx_legacy.mma(
                    "m16n8k16", "row", "col", short, short, "fp32",
                    A.data, A.elem_offset + tx * convert(local),
                    B.data, B.elem_offset + tx * convert(local) + convert(local) // 2,
                    C.data, C.elem_offset + tx * convert(local) + convert(local) // 2, False, dtype="float32"))

    return desc, impl


@functools.lru_cache(maxsize=None)
def register_intrinsics(dtype: str, trans_b: bool = False) -> dict:
    """{load_a, load_b, compute, init, store}: names of the tensor intrinsics for ``dtype``
    operands (TVM's own for float16; registered here, once, for bfloat16); ``trans_b``: B
    is stored N x K (a conv's filter), float16 only."""
    import tvm.s_tir.tensor_intrin  # noqa: F401  (registers TVM's CUDA intrinsics)
    from tvm.s_tir import TensorIntrin
    from tvm.s_tir.tensor_intrin import cuda as intrin
    shared = {"init": intrin.MMA_fill_16x16_f32_INTRIN, "store": intrin.MMA_store_16x16_f32_shared_dyn_INTRIN_SIMPLE}
    if dtype == "float16" and trans_b:
        return {"load_a": intrin.LDMATRIX_f16_A_DYN_INTRIN, "load_b": intrin.LDMATRIX_f16_B_TRANS_DYN_INTRIN,
                "compute": intrin.MMA_f16f16f32_TRANS_B_INTRIN, **shared}
    if dtype == "float16":
        return {"load_a": intrin.LDMATRIX_f16_A_DYN_INTRIN, "load_b": intrin.LDMATRIX_f16_B_DYN_INTRIN,
                "compute": intrin.MMA_f16f16f32_INTRIN, **shared}
    if dtype not in DTYPES or trans_b:
        raise ValueError(f"mma.sync schedules take {', '.join(DTYPES)} operands (B transposed: float16 only), "
                         f"not {dtype}{' with B transposed' if trans_b else ''}")
    short = DTYPES[dtype]
    names = {"load_a": f"ptxds_mma_ldmatrix_{short}_a_dyn", "load_b": f"ptxds_mma_ldmatrix_{short}_b_dyn",
             "compute": f"ptxds_mma_{short}{short}f32"}
    TensorIntrin.register(names["load_a"], *_ldmatrix_intrin(dtype, "A"), override=True)
    TensorIntrin.register(names["load_b"], *_ldmatrix_intrin(dtype, "B"), override=True)
    TensorIntrin.register(names["compute"], *_mma_intrin(dtype), override=True)
    return {**names, **shared}


def _fragment_layout(*axes):
    """Warp-fragment layout: (..., i, j) -> (..., i // 16, j // 16, thread, register)."""
    from tvm.s_tir.tensor_intrin.cuda import shared_16x16_to_ldmatrix_32x8_layout as layout
    *outer, i, j = axes
    return (*outer, i // FRAGMENT, j // FRAGMENT, *layout(i % FRAGMENT, j % FRAGMENT))


def _implicit_gemm(sch, acc) -> None:
    """Rewrite an NHWC convolution block ``acc`` (loops n, p, q, k, r, s, c over padded input
    ``pad[n, p + r, q + s, c]`` and filter ``w[k, r, s, c]``) as a GEMM block with loops
    (n p q, k, r s c): its operands become A[n p q, r s c] (im2col, never materialised: the
    shared-memory copy inlines it) and B[k, r s c] (so B is read transposed), its output
    C[n p q, k]."""
    block = sch.get(acc)
    extents = [int(v.dom.extent) for v in block.iter_vars]
    _, p, q, _, r, s, c = extents
    a_tile, b_tile, c_tile = (sch.reindex(acc, ("read", 0)), sch.reindex(acc, ("read", 1)),
                              sch.reindex(acc, ("write", 0)))
    rows = lambda n_, p_, q_: (n_ * p + p_) * q + q_   # noqa: E731
    depth = lambda r_, s_, c_: (r_ * s + s_) * c + c_   # noqa: E731
    sch.transform_layout(a_tile, ("write", 0), lambda n_, p_, q_, r_, s_, c_: (rows(n_, p_, q_), depth(r_, s_, c_)))
    sch.transform_layout(b_tile, ("write", 0), lambda k_, r_, s_, c_: (k_, depth(r_, s_, c_)))
    sch.transform_layout(c_tile, ("read", 0), lambda n_, p_, q_, k_: (rows(n_, p_, q_), k_))
    sch.transform_block_layout(acc, lambda n_, p_, q_, k_, r_, s_, c_: (rows(n_, p_, q_), k_, depth(r_, s_, c_)))


def _inline_producers(sch, block) -> None:
    """Inline every computed producer of ``block`` into it (a conv's im2col and padding)."""
    producers = sch.get_producers(block)
    while producers:
        for producer in producers:
            sch.compute_inline(producer)
        producers = sch.get_producers(block)


def _inline_consumers(sch, block) -> None:
    """Inline the chain of elementwise consumers of ``block`` (copies, the cast) into it."""
    consumers = sch.get_consumers(block)
    while consumers:
        sch.reverse_compute_inline(consumers[0])
        consumers = sch.get_consumers(block)


def schedule_mma(func, config: MmaConfig, dtype: str, conv: bool = False):
    """The mma.sync schedule of ``func`` (a TVM matmul or batch_matmul: a float32 reduction
    block ``acc`` over ``dtype`` operands, then a cast to the output; with ``conv``, an NHWC
    convolution, scheduled as its implicit GEMM) at ``config``.

    Loops: blockIdx.x over output tiles (blockIdx.y over the batch), threadIdx.y over warps;
    per k chunk, the A and B tiles are copied to padded dynamic shared memory (pipeline stage
    0, asynchronous) and consumed ``stages - 1`` chunks later; within a chunk each 16-deep
    step loads the warp's fragments with ldmatrix (double-buffered) and runs the mma.sync
    grid. The accumulators go through shared memory to a coalesced, vectorised store."""
    from tvm import s_tir
    config.check()
    names = register_intrinsics(dtype, trans_b=conv)
    sch = s_tir.Schedule(func, debug_mask="none")
    acc = sch.get_sblock("acc")
    if conv:
        _implicit_gemm(sch, acc)
    *batch, i, j, k = sch.get_loops(acc)
    i, i_frag = sch.split(i, [None, FRAGMENT])
    j, j_frag = sch.split(j, [None, FRAGMENT])
    k, k_frag = sch.split(k, [None, FRAGMENT])
    sch.reorder(i, j, k, i_frag, j_frag, k_frag)
    outer, inner = sch.blockize(i_frag), acc

    warps_m, warps_n = config.block_m // config.warp_m, config.block_n // config.warp_n
    i_block, i_warp, i_step = sch.split(i, [None, warps_m, config.warp_m // FRAGMENT])
    j_block, j_warp, j_step = sch.split(j, [None, warps_n, config.warp_n // FRAGMENT])
    k_chunk, k_step = sch.split(k, [None, config.block_k // FRAGMENT])
    sch.reorder(i_block, j_block, i_warp, j_warp, k_chunk, k_step, i_step, j_step)
    sch.bind(sch.fuse(i_block, j_block), "blockIdx.x")
    if batch:
        sch.bind(batch[0], "blockIdx.y")
    warp = sch.fuse(i_warp, j_warp)
    sch.bind(warp, "threadIdx.y")

    for operand in (0, 1):
        copy = sch.cache_read(outer, operand, "shared.dyn")
        sch.compute_at(copy, k_chunk)
        _inline_producers(sch, copy)
        fused = sch.fuse(*sch.get_loops(copy)[-2:])
        _, by_warp, by_lane, vector = sch.split(fused, [None, config.warps, WARP_SIZE, COPY_VECTOR])
        sch.bind(by_warp, "threadIdx.y")
        sch.bind(by_lane, "threadIdx.x")
        sch.vectorize(vector)
        sch.storage_align(copy, 0, axis=-2, factor=32, offset=SHARED_PAD)

    a_frag = sch.cache_read(outer, 0, "warp")
    b_frag = sch.cache_read(outer, 1, "warp")
    sch.compute_at(a_frag, k_step)
    sch.compute_at(b_frag, k_step)
    staged = sch.cache_write(outer, 0, "shared.dyn")
    c_frag = sch.cache_write(outer, 0, "warp")
    sch.reverse_compute_at(c_frag, warp)
    sch.reverse_compute_at(staged, warp)
    rows, cols = sch.get_loops(c_frag)[-2:]
    rows_outer, rows = sch.split(rows, [None, FRAGMENT])
    cols_outer, cols = sch.split(cols, [None, FRAGMENT])
    sch.reorder(rows_outer, cols_outer, rows, cols)
    init = sch.get_child_blocks(sch.decompose_reduction(outer, k_chunk))[0]

    fragment_loops = []
    for block in (a_frag, b_frag):
        rows, cols = sch.get_loops(block)[-2:]
        rows_outer, rows = sch.split(rows, [None, FRAGMENT])
        cols_outer, cols = sch.split(cols, [None, FRAGMENT])
        sch.reorder(rows_outer, cols_outer, rows, cols)
        sch.unroll(rows_outer)
        sch.unroll(cols_outer)
        fragment_loops.append(rows)
    sch.transform_layout(a_frag, ("write", 0), _fragment_layout)
    sch.transform_layout(b_frag, ("write", 0), _fragment_layout)
    sch.transform_layout(c_frag, ("read", 0), _fragment_layout)
    sch.tensorize(fragment_loops[0], names["load_a"])
    sch.tensorize(fragment_loops[1], names["load_b"])
    sch.tensorize(sch.get_loops(inner)[-3], names["compute"])
    sch.tensorize(sch.get_loops(init)[-2], names["init"])
    store_name = sch.get(c_frag).name_hint
    sch.tensorize(sch.get_loops(c_frag)[-2], names["store"])
    # pad the staging rows against bank conflicts (set on the tensorized store, which writes them)
    sch.storage_align(sch.get_sblock(store_name + "_o"), 0, axis=-2, factor=16, offset=EPILOGUE_PAD)
    sch.unroll(i_step)
    sch.unroll(j_step)

    # the cast to the output dtype (and a conv's copy back to NHWC) join the shared-to-global store
    _inline_consumers(sch, staged)
    fused = sch.fuse(*sch.get_loops(staged)[-2:])
    _, lane, vector = sch.split(fused, [None, WARP_SIZE, 4])
    sch.bind(lane, "threadIdx.x")
    sch.vectorize(vector)

    # k_chunk's body: A copy, B copy, then k_step's pipeline (prologue, body, epilogue) once
    # k_step is pipelined itself, which happens first
    pipelined_steps = config.block_k // FRAGMENT > 1
    if pipelined_steps:
        sch.annotate(k_step, "software_pipeline_stage", [0, 0, 1])
        sch.annotate(k_step, "software_pipeline_order", [0, 1, 2])
    consumers = 3 if pipelined_steps else 1
    sch.annotate(k_chunk, "software_pipeline_stage", [0, 0] + [config.stages - 1] * consumers)
    sch.annotate(k_chunk, "software_pipeline_order", list(range(2 + consumers)))
    sch.annotate(k_chunk, "software_pipeline_async_stages", [0])
    return sch


def workload_dims(workload) -> tuple:
    """(m, n, k) of a matmul or batch_matmul workload, or of a conv's implicit GEMM
    (N P Q, K, R S C; stride 1, same padding)."""
    if workload.name.startswith("conv2d"):
        n, h, w, c, k, r = workload.dims
        return n * h * w, k, r * r * c
    return tuple(workload.dims[-3:])


def configs_for(workload) -> list:
    """The MMA_CONFIGS whose tiles fit the workload's sizes (none for other workloads)."""
    if workload.name not in MMA_WORKLOADS:
        return []
    m, n, k = workload_dims(workload)
    return [c for c in MMA_CONFIGS if not c.unfit(m, n, k)]


def mma_schedule(func, workload, key: str):
    """The member ``key`` (an MmaConfig key) of ``workload``: a ``schedules.Schedule``, with
    the error instead of a module where it could not be made."""
    from .schedules import Schedule, tensorize_blocker
    (config,) = [c for c in MMA_CONFIGS if c.key == key]
    dtype = MMA_WORKLOADS[workload.name]
    variant = {"generator": "mma", "tensor_core": True, "intrinsic": intrinsic_label(dtype, config.stages),
               "block_tile": [config.block_m, config.block_n, config.block_k],
               "warp_tile": [config.warp_m, config.warp_n], "warps": config.warps, "stages": config.stages}
    blocker = tensorize_blocker()
    if blocker:
        return Schedule("mma", key, variant, error=blocker)
    try:
        sch = schedule_mma(func, config, dtype, conv=workload.name.startswith("conv2d"))
        variant["trace"] = str(sch.trace)
        return Schedule("mma", key, variant, sch.mod, pass_config=dict(LOWERING_CONFIG))
    except Exception as exc:  # TVM raises its own error types
        return Schedule("mma", key, variant, error=f"{type(exc).__name__}: {exc}"[:4000])
