"""Print a launch plan (plan.py) as CUDA C: one ``extern "C"`` kernel per plan kernel.

A customized kernel follows its block graph: tiles are copied from global to shared
memory (16-byte ``cp.async`` where the tile rows allow; the for-loop's tiles are
multi-stage pipelined, loaded ``stages - 1`` iterations ahead; matmul-only operand tiles
are XOR-swizzled), ``tb_matmul`` runs on tensor cores (``ldmatrix`` +
``mma.sync.m16n8k16``, float32 accumulation) whenever N is a multiple of 8 and K of 16,
accumulators are float32 in shared memory, and every other
tensor is half, as in the muGraph. Entry names are hashes of the kernel text, so equal
kernels get equal names (and equal PTX) whichever muGraph they come from.
"""
from __future__ import annotations

import hashlib
import math

from .graph import broadcast_strides
from .plan import GraphPlan, KernelPlan, Step, Tile

PRELUDE = r"""#include <cuda_fp16.h>
#include <stdint.h>

namespace mrt {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem_u32(dst)), "l"(src));
}

__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::);
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

// Wait until at most PENDING of this thread's committed copy groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t* r, const half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t* r, const half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(smem_u32(p)));
}

__device__ __forceinline__ void mma16816(float* c, const uint32_t* a, const uint32_t* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Element offset of the 16-byte chunk `chunk` of row `row` in a tile with COLS columns:
// row-major, or with the chunk index XORed by row % 8 (SWIZZLE), so the 8 rows one
// ldmatrix reads fall in 8 different bank groups whatever the row pitch.
template <int COLS, bool SWIZZLE>
__device__ __forceinline__ int chunk_offset(int row, int chunk) {
  return row * COLS + ((SWIZZLE ? (chunk ^ (row & 7)) : chunk) << 3);
}

// C[M,N] = A[M,K] @ B[K,N] (half tiles in shared memory, row-major or swizzled: SWA, SWB),
// float32 accumulation on tensor cores. Each warp owns NB side-by-side 16x8 output tiles
// at a time (one A fragment feeds NB independent mma chains); rows past M read row M-1
// and are never stored, so M needs no padding.
template <int M, int N, int K, bool SWA = false, bool SWB = false, int NB = 1>
__device__ __forceinline__ void matmul_tc(const half* A, const half* B, half* C) {
  constexpr int MT = (M + 15) / 16, NG = N / 8 / NB;
  static_assert(N % (8 * NB) == 0, "NB must divide the 8-column tiles");
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int t = warp; t < MT * NG; t += warps) {
    const int mt = t / NG, nt0 = (t % NG) * NB;
    float acc[NB][4] = {};
    const int arow = min(mt * 16 + (lane % 16), M - 1);
#pragma unroll 4
    for (int k = 0; k < K; k += 16) {
      uint32_t a[4];
      ldmatrix_x4(a, A + chunk_offset<K, SWA>(arow, k / 8 + lane / 16));
#pragma unroll
      for (int j = 0; j < NB; ++j) {
        uint32_t b[2];
        ldmatrix_x2_trans(b, B + chunk_offset<N, SWB>(k + lane % 16, nt0 + j));
        mma16816(acc[j], a, b);
      }
    }
    const int r0 = mt * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < NB; ++j) {
      const int c = (nt0 + j) * 8 + (lane % 4) * 2;
      if (r0 < M) {
        C[r0 * N + c] = __float2half(acc[j][0]);
        C[r0 * N + c + 1] = __float2half(acc[j][1]);
      }
      if (r0 + 8 < M) {
        C[(r0 + 8) * N + c] = __float2half(acc[j][2]);
        C[(r0 + 8) * N + c + 1] = __float2half(acc[j][3]);
      }
    }
  }
}

// The same product with one thread per output element, for shapes the mma tiles do not fit.
template <int M, int N, int K>
__device__ __forceinline__ void matmul_simt(const half* A, const half* B, half* C) {
  for (int i = threadIdx.x; i < M * N; i += blockDim.x) {
    const int r = i / N, c = i % N;
    float s = 0.f;
    for (int k = 0; k < K; ++k) s += __half2float(A[r * K + k]) * __half2float(B[k * N + c]);
    C[i] = __float2half(s);
  }
}

}  // namespace mrt
"""


def _prod(shape) -> int:
    return math.prod(shape) if shape else 1


def _strides(shape) -> list:
    out, step = [], 1
    for d in reversed(shape):
        out.insert(0, step)
        step *= d
    return out


def broadcast_index(shape: tuple, out: tuple, i: str) -> str:
    """Element index into row-major ``shape`` for flat index ``i`` of the broadcast
    ``out`` (general broadcasting: any operand, any dims of size 1 or missing)."""
    if tuple(shape) == tuple(out):
        return i
    strides = broadcast_strides(tuple(shape), tuple(out))
    terms, inner = [], 1
    for d in reversed(range(len(out))):
        if strides[d] and out[d] > 1:
            index = i if inner == 1 else f"({i} / {inner})"
            if d > 0:
                index = f"({index} % {out[d]})"
            terms.append(index if strides[d] == 1 else f"{index} * {strides[d]}")
        inner *= out[d]
    return " + ".join(reversed(terms)) if terms else "0"


def tc_fits(m: int, n: int, k: int) -> bool:
    """Whether the tensor-core path handles an M x N x K tile product."""
    return n % 8 == 0 and k % 16 == 0


def n_group(m: int, n: int, warps: int) -> int:
    """Output tiles per warp step of ``matmul_tc``: the most (4, 2 or 1) that divide the
    8-column tiles and still leave every warp of the block a share of the work."""
    tiles_m, tiles_n = -(-m // 16), n // 8
    return next(nb for nb in (4, 2, 1) if nb == 1 or (tiles_n % nb == 0 and tiles_m * tiles_n // nb >= warps))


# ----------------------------------------------------------------------------- customized

class _Writer:
    def __init__(self):
        self.lines = []

    def __call__(self, line: str = "", indent: int = 1) -> None:
        self.lines.append("  " * indent + line if line else "")


def _tile_base(tile: Tile, iteration: str) -> str:
    """Element offset of the tile's first element in its device tensor."""
    terms = []
    strides = _strides(tile.tensor_shape)
    for d, (axis, size) in enumerate(zip(tile.axis_of_dim, tile.tile_shape)):
        parts = []
        if axis is not None:
            span = size * (tile.forloop_range if d == tile.forloop_dim else 1)
            parts.append(f"(long)blockIdx.{axis} * {span}")
        if d == tile.forloop_dim:
            parts.append(f"(long){iteration} * {size}")
        for p in parts:
            terms.append(f"{p} * {strides[d]}" if strides[d] != 1 else p)
    return " + ".join(terms) if terms else "0"


def _row_offset(tile: Tile, row: str) -> str:
    """Global element offset (relative to the tile base) of flattened tile row ``row``."""
    lead = tile.tile_shape[:-1]
    gstrides = _strides(tile.tensor_shape)[:-1]
    terms, inner = [], 1
    for d in reversed(range(len(lead))):
        index = row if inner == 1 else f"({row} / {inner})"
        if d > 0:
            index = f"({index} % {lead[d]})"
        if lead[d] > 1 and gstrides[d]:
            terms.append(f"(long){index} * {gstrides[d]}")
        inner *= lead[d]
    return " + ".join(terms) if terms else "0"


def _vectorisable(tile: Tile) -> bool:
    return tile.cp_async_ok


def swizzled_tiles(kernel: KernelPlan) -> set:
    """Shared tiles stored with XOR-swizzled 16-byte chunks: loaded with cp.async and read
    only as tensor-core matmul operands, with rows of whole 64-half groups and tile rows per
    batch a multiple of 8 (the swizzle phase is the row index mod 8 within each matrix)."""
    loaded = {s.outputs[0]: s.tile for s in kernel.steps if s.op == "load" and s.tile.cp_async_ok}
    out = set()
    for name, tile in loaded.items():
        shape = tile.tile_shape
        if shape[-1] % 64 or len(shape) < 2 or shape[-2] % 8:
            continue
        readers = [s for s in kernel.steps if name in s.inputs]
        if readers and all(s.op == "matmul" and _tc_step(kernel, s) for s in readers):
            out.add(name)
    return out


def _tc_step(kernel: KernelPlan, step: Step) -> bool:
    a, b = (kernel.smem[n].shape for n in step.inputs)
    return tc_fits(a[-2], b[-1], a[-1])


def _emit_copy(w: _Writer, tile: Tile, smem: str, to_global: bool, iteration: str, ptr: str,
               swizzle: bool = False) -> None:
    rows, cols = _prod(tile.tile_shape[:-1]), tile.tile_shape[-1]
    w("{")
    w(f"  const long base = {_tile_base(tile, iteration)};")
    if _vectorisable(tile):
        per_row = cols // 8
        w(f"  for (int v = threadIdx.x; v < {rows * per_row}; v += blockDim.x) {{")
        w(f"    const int row = v / {per_row}, col = (v % {per_row}) * 8;")
        w(f"    const long g = base + {_row_offset(tile, 'row')} + col;")
        if to_global:
            w(f"    *reinterpret_cast<uint4*>({ptr} + g) = *reinterpret_cast<const uint4*>({smem} + row * {cols} + col);")
        else:
            dest = f"mrt::chunk_offset<{cols}, {'true' if swizzle else 'false'}>(row, col / 8)"
            w(f"    mrt::cp_async16({smem} + {dest}, {ptr} + g);")
        w("  }")
    else:
        w(f"  for (int i = threadIdx.x; i < {rows * cols}; i += blockDim.x) {{")
        w(f"    const int row = i / {cols}, col = i % {cols};")
        w(f"    const long g = base + {_row_offset(tile, 'row')} + col;")
        if to_global:
            w(f"    {ptr}[g] = {smem}[i];")
        else:
            w(f"    {smem}[i] = {ptr}[g];")
        w("  }")
    w("}")


UNARY_EXPR = {"exp": "expf({x})", "silu": "{x} / (1.f + expf(-{x}))"}
BINARY_EXPR = {"add": "{a} + {b}", "mul": "{a} * {b}", "div": "{a} / {b}"}


def _emit_step(w: _Writer, step: Step, kernel: KernelPlan, iteration: str, pointer: dict) -> None:
    sm = kernel.smem
    op = step.op
    if op == "load":
        _emit_copy(w, step.tile, step.outputs[0], False, iteration, pointer[step.tile.buffer],
                   step.outputs[0] in swizzled_tiles(kernel))
        return
    if op == "store":
        _emit_copy(w, step.tile, step.inputs[0], True, iteration, pointer[step.tile.buffer])
        return
    out = step.outputs[0]
    n_out = sm[out].numel
    loop = f"for (int i = threadIdx.x; i < {n_out}; i += blockDim.x)"
    if op == "zero":
        w(f"{loop} {out}[i] = 0.f;")
    elif op == "matmul":
        a, b = (sm[n].shape for n in step.inputs)
        m, k, n = a[-2], a[-1], b[-1]
        batch = _prod(a[:-2])
        if tc_fits(m, n, k):
            swizzled = swizzled_tiles(kernel)
            flags = ", ".join("true" if name in swizzled else "false" for name in step.inputs)
            fn = f"matmul_tc<{m}, {n}, {k}, {flags}, {n_group(m, n, kernel.block[0] // 32)}>"
        else:
            fn = f"matmul_simt<{m}, {n}, {k}>"
        if batch == 1:
            w(f"mrt::{fn}({step.inputs[0]}, {step.inputs[1]}, {out});")
        else:
            w(f"for (int bt = 0; bt < {batch}; ++bt) mrt::{fn}("
              f"{step.inputs[0]} + bt * {m * k}, {step.inputs[1]} + bt * {k * n}, {out} + bt * {m * n});")
    elif op in UNARY_EXPR:
        x = f"__half2float({step.inputs[0]}[i])"
        w(f"{loop} {{ const float x = {x}; {out}[i] = __float2half({UNARY_EXPR[op].format(x='x')}); }}")
    elif op in BINARY_EXPR:
        out_shape = sm[out].shape
        a_index = broadcast_index(sm[step.inputs[0]].shape, out_shape, "i")
        b_index = broadcast_index(sm[step.inputs[1]].shape, out_shape, "i")
        w(f"{loop} {{ const float a = __half2float({step.inputs[0]}[{a_index}]), b = __half2float({step.inputs[1]}[{b_index}]);"
          f" {out}[i] = __float2half({BINARY_EXPR[op].format(a='a', b='b')}); }}")
    elif op == "rms_norm":
        shape = sm[step.inputs[0]].shape
        rows, cols, x = _prod(shape[:-1]), shape[-1], step.inputs[0]
        w(f"for (int r = threadIdx.x / 32; r < {rows}; r += blockDim.x / 32) {{")
        w(f"  float s = 0.f;")
        w(f"  for (int c = threadIdx.x % 32; c < {cols}; c += 32) {{ const float v = __half2float({x}[r * {cols} + c]); s += v * v; }}")
        w(f"  const float inv = rsqrtf(mrt::warp_sum(s) / {cols}.f);")
        w(f"  for (int c = threadIdx.x % 32; c < {cols}; c += 32) {out}[r * {cols} + c] = __float2half(__half2float({x}[r * {cols} + c]) * inv);")
        w("}")
    elif op == "accum_nored":
        w(f"{loop} {out}[i] += __half2float({step.inputs[0]}[i]);")
    elif op in ("accum_red_ld_sum", "accum_red_ld_rms"):
        shape = sm[step.inputs[0]].shape
        rows, cols, x = _prod(shape[:-1]), shape[-1], step.inputs[0]
        term = "v * v" if op == "accum_red_ld_rms" else "v"
        w(f"for (int r = threadIdx.x / 32; r < {rows}; r += blockDim.x / 32) {{")
        w(f"  float s = 0.f;")
        w(f"  for (int c = threadIdx.x % 32; c < {cols}; c += 32) {{ const float v = __half2float({x}[r * {cols} + c]); s += {term}; }}")
        w(f"  s = mrt::warp_sum(s);")
        w(f"  if (threadIdx.x % 32 == 0) {out}[r] += s;")
        w("}")
    elif op == "accum_redtox_ld_sum":
        shape = sm[step.inputs[0]].shape
        cols, dimx, x = shape[-1], step.param, step.inputs[0]
        # element j sums x[.., k * dimx + j] over k (docs/mirage.md)
        w(f"{loop} {{ const int r = i / {dimx}, j = i % {dimx}; float s = 0.f;")
        w(f"  for (int k = 0; k < {cols // dimx}; ++k) s += __half2float({x}[r * {cols} + k * {dimx} + j]);")
        w(f"  {out}[i] += s; }}")
    elif op == "finalize":
        w(f"{loop} {out}[i] = __float2half({step.inputs[0]}[i]);")
    elif op == "finalize_rms":
        w(f"{loop} {out}[i] = __float2half(sqrtf({step.inputs[0]}[i] / {step.param}.f));")
    else:
        raise ValueError(f"no CUDA for step {op}")


def _customized_body(kernel: KernelPlan, read_only: set) -> str:
    # Parameters are named by position, so equal kernels print equal text whatever the
    # muGraph calls its buffers.
    pointer = {p: f"g{i}" for i, p in enumerate(kernel.params)}
    w = _Writer()
    params = ", ".join(f"{'const ' if p in read_only else ''}half* __restrict__ {pointer[p]}"
                       for p in kernel.params)
    w(f"extern \"C\" __global__ void __launch_bounds__({kernel.block[0]}) ENTRY({params}) {{", 0)
    w("extern __shared__ __align__(16) unsigned char smem_raw[];")
    ahead = kernel.pipelined_loads
    staged = {step.outputs[0] for step in ahead}
    for buf in kernel.smem.values():
        ctype = "half" if buf.dtype == "half" else "float"
        name = f"{buf.name}_stages" if buf.name in staged else buf.name
        w(f"{ctype}* {name} = reinterpret_cast<{ctype}*>(smem_raw + {buf.offset});  // {list(buf.shape)}"
          + (f" x {buf.stages} stages" if buf.name in staged else ""))
    phases = {"pre": [], "loop": [], "post": []}
    for step in kernel.steps:
        if step not in ahead:
            phases[step.phase].append(step)
    _emit_phase(w, phases["pre"], kernel, "0", pointer)
    if phases["loop"] or ahead:
        stages = kernel.stages
        inner = _Writer()
        if ahead:
            # Iteration it+stages-1's tiles are requested before iteration it computes; one
            # commit group per iteration (empty near the end) keeps the wait count fixed.
            _emit_prefetch(inner, ahead, kernel, f"it + {stages - 1}", pointer, guard=True)
            inner(f"mrt::cp_async_wait<{stages - 1}>();")
            inner("__syncthreads();")
            for step in ahead:
                buf = kernel.smem[step.outputs[0]]
                inner(f"half* const {buf.name} = {buf.name}_stages + (it % {stages}) * {buf.stage_bytes // 2};")
        _emit_phase(inner, phases["loop"], kernel, "it", pointer)
        if ahead:
            for stage in range(stages - 1):
                _emit_prefetch(w, ahead, kernel, str(stage), pointer, guard=False)
        w(f"for (int it = 0; it < {kernel.forloop_range}; ++it) {{")
        w.lines += ["  " + line for line in inner.lines]
        w("}")
    _emit_phase(w, phases["post"], kernel, "0", pointer)
    w("}", 0)
    return "\n".join(w.lines)


def _emit_prefetch(w: _Writer, loads: list, kernel: KernelPlan, iteration: str, pointer: dict,
                   guard: bool) -> None:
    """cp.async of the pipelined tiles of loop iteration ``iteration`` into its stage,
    then one commit (also when ``guard`` skips the copies past the last iteration)."""
    w("{")
    w(f"  const int ahead = {iteration};")
    body = _Writer()
    for step in loads:
        buf = kernel.smem[step.outputs[0]]
        body(f"half* const {buf.name}_next = {buf.name}_stages + (ahead % {kernel.stages}) * {buf.stage_bytes // 2};")
        _emit_copy(body, step.tile, f"{buf.name}_next", False, "ahead", pointer[step.tile.buffer],
                   buf.name in swizzled_tiles(kernel))
    if guard:
        w(f"  if (ahead < {kernel.forloop_range}) {{")
        w.lines += ["    " + line for line in body.lines]
        w("  }")
    else:
        w.lines += ["  " + line for line in body.lines]
    w("  mrt::cp_async_commit();")
    w("}")


def _emit_phase(w: _Writer, steps: list, kernel: KernelPlan, iteration: str, pointer: dict) -> None:
    """Each step, then a barrier; back-to-back tile loads share one cp.async wait (only
    loads that used cp.async wait: a wait for all groups would stall the pipeline)."""
    for i, step in enumerate(steps):
        _emit_step(w, step, kernel, iteration, pointer)
        following = steps[i + 1].op if i + 1 < len(steps) else None
        if step.op == "load":
            if following == "load":
                continue
            run = steps[i::-1]
            run = run[:next((j for j, s in enumerate(run) if s.op != "load"), len(run))]
            if any(s.tile.cp_async_ok for s in run):
                w("mrt::cp_async_wait_all();")
        if step.op == "store" and following in ("store", None):
            continue
        w("__syncthreads();")


# ----------------------------------------------------------------------------- pre-defined

def _elementwise_body(kernel: KernelPlan) -> str:
    *ins, out = kernel.params
    numel = _prod(kernel.shapes[out])
    w = _Writer()
    params = ", ".join([f"const half* __restrict__ in{i}" for i in range(len(ins))] + ["half* __restrict__ out"])
    w(f"extern \"C\" __global__ void __launch_bounds__({kernel.block[0]}) ENTRY({params}) {{", 0)
    w(f"for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < {numel}L; i += (long)gridDim.x * blockDim.x) {{")
    if len(ins) == 1:
        w(f"  const float x = __half2float(in0[i]);")
        w(f"  out[i] = __float2half({UNARY_EXPR[kernel.kind].format(x='x')});")
    else:
        out_shape = kernel.shapes[out]
        a_index = broadcast_index(kernel.shapes[ins[0]], out_shape, "i")
        b_index = broadcast_index(kernel.shapes[ins[1]], out_shape, "i")
        w(f"  const float a = __half2float(in0[{a_index}]), b = __half2float(in1[{b_index}]);")
        w(f"  out[i] = __float2half({BINARY_EXPR[kernel.kind].format(a='a', b='b')});")
    w("}")
    w("}", 0)
    return "\n".join(w.lines)


MM_BN, MM_BK = 64, 32


def _matmul_body(kernel: KernelPlan) -> str:
    """A batched GEMM: 64-column block tiles, 16 columns per warp, ldmatrix + mma.sync,
    operands staged through shared memory with cp.async."""
    a_name, b_name, c_name = kernel.params
    a, b = kernel.shapes[a_name], kernel.shapes[b_name]
    m, k, n = a[-2], a[-1], b[-1]
    w = _Writer()
    w(f"extern \"C\" __global__ void __launch_bounds__(128) ENTRY(const half* __restrict__ A, "
      f"const half* __restrict__ B, half* __restrict__ C) {{", 0)
    if n % MM_BN or k % MM_BK:
        w(f"A += (long)blockIdx.z * {m * k}; B += (long)blockIdx.z * {k * n}; C += (long)blockIdx.z * {m * n};")
        w(f"for (int i = threadIdx.x; i < 64 * {MM_BN}; i += blockDim.x) {{")
        w(f"  const int r = blockIdx.y * 64 + i / {MM_BN}, c = blockIdx.x * {MM_BN} + i % {MM_BN};")
        w(f"  if (r >= {m} || c >= {n}) continue;")
        w(f"  float s = 0.f;")
        w(f"  for (int kk = 0; kk < {k}; ++kk) s += __half2float(A[(long)r * {k} + kk]) * __half2float(B[(long)kk * {n} + c]);")
        w(f"  C[(long)r * {n} + c] = __float2half(s);")
        w("}")
        w("}", 0)
        return "\n".join(w.lines)
    bm = min(64, -(-m // 16) * 16)
    mt = bm // 16
    w(f"__shared__ __align__(16) half As[{bm * MM_BK}];")
    w(f"__shared__ __align__(16) half Bs[{MM_BK * MM_BN}];")
    w(f"A += (long)blockIdx.z * {m * k}; B += (long)blockIdx.z * {k * n}; C += (long)blockIdx.z * {m * n};")
    w(f"const int m0 = blockIdx.y * {bm}, n0 = blockIdx.x * {MM_BN};")
    w("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;")
    w(f"float acc[{mt}][2][4] = {{}};")
    w(f"for (int k0 = 0; k0 < {k}; k0 += {MM_BK}) {{")
    w(f"  for (int v = threadIdx.x; v < {bm * MM_BK // 8}; v += blockDim.x) {{")
    w(f"    const int r = v / {MM_BK // 8}, c = (v % {MM_BK // 8}) * 8;")
    w(f"    const int gr = min(m0 + r, {m - 1});  // rows past M repeat the last row; never stored")
    w(f"    mrt::cp_async16(As + r * {MM_BK} + c, A + (long)gr * {k} + k0 + c);")
    w("  }")
    w(f"  for (int v = threadIdx.x; v < {MM_BK * MM_BN // 8}; v += blockDim.x) {{")
    w(f"    const int r = v / {MM_BN // 8}, c = (v % {MM_BN // 8}) * 8;")
    w(f"    mrt::cp_async16(Bs + r * {MM_BN} + c, B + (long)(k0 + r) * {n} + n0 + c);")
    w("  }")
    w("  mrt::cp_async_wait_all();")
    w("  __syncthreads();")
    w(f"  #pragma unroll")
    w(f"  for (int kk = 0; kk < {MM_BK}; kk += 16) {{")
    w("    uint32_t b[2][2];")
    w("    for (int j = 0; j < 2; ++j)")
    w(f"      mrt::ldmatrix_x2_trans(b[j], Bs + (kk + lane % 16) * {MM_BN} + warp * 16 + j * 8);")
    w(f"    for (int i = 0; i < {mt}; ++i) {{")
    w("      uint32_t a[4];")
    w(f"      mrt::ldmatrix_x4(a, As + (i * 16 + lane % 16) * {MM_BK} + kk + (lane / 16) * 8);")
    w("      for (int j = 0; j < 2; ++j) mrt::mma16816(acc[i][j], a, b[j]);")
    w("    }")
    w("  }")
    w("  __syncthreads();")
    w("}")
    w(f"for (int i = 0; i < {mt}; ++i)")
    w("  for (int j = 0; j < 2; ++j) {")
    w("    const int r = m0 + i * 16 + lane / 4, c = n0 + warp * 16 + j * 8 + (lane % 4) * 2;")
    w(f"    if (r < {m}) {{ C[(long)r * {n} + c] = __float2half(acc[i][j][0]); C[(long)r * {n} + c + 1] = __float2half(acc[i][j][1]); }}")
    w(f"    if (r + 8 < {m}) {{ C[(long)(r + 8) * {n} + c] = __float2half(acc[i][j][2]); C[(long)(r + 8) * {n} + c + 1] = __float2half(acc[i][j][3]); }}")
    w("  }")
    w("}", 0)
    return "\n".join(w.lines)


# ----------------------------------------------------------------------------- module

def kernel_sources(plan: GraphPlan) -> list:
    """(entry name, CUDA text) per plan kernel, in launch order."""
    out = []
    for index, kernel in enumerate(plan.kernels):
        if kernel.kind == "customized":
            # a buffer written by an earlier kernel is read-only here too
            written = {s.tile.buffer for s in kernel.steps if s.op == "store"}
            body = _customized_body(kernel, set(kernel.params) - written)
        elif kernel.kind == "matmul":
            body = _matmul_body(kernel)
        else:
            body = _elementwise_body(kernel)
        digest = hashlib.sha256(body.encode()).hexdigest()[:12]
        entry = f"mirage_{kernel.kind}_{digest}"
        out.append((entry, body.replace("ENTRY(", f"{entry}(", 1)))
    return out


def module_source(plan: GraphPlan) -> tuple:
    """(CUDA translation unit, entry names in launch order). A kernel used twice by the
    same muGraph is defined once."""
    sources = kernel_sources(plan)
    seen, parts = set(), [PRELUDE]
    for entry, text in sources:
        if entry not in seen:
            seen.add(entry)
            parts.append(text)
    return "\n\n".join(parts) + "\n", [entry for entry, _ in sources]
