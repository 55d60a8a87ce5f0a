"""Grouped GEMM sizes: mixture-of-experts layers with uneven tokens per expert.

A grouped size is a tuple of (M, N, K) problems. An MoE layer's expert GEMMs share N and K
(the expert's projection) and split the routed token rows unevenly: ``moe_split`` draws the
split from a seeded Zipf-like skew (pure Python ``random``, so a seed gives the same sizes
everywhere) and pads every expert's rows to a multiple of 8 (as MoE kernels pad per-expert
token blocks; it keeps each problem's operands 16-byte aligned in the concatenated buffers
and column-major A's contiguous extent a multiple of the kernels' alignment).
"""
from __future__ import annotations

import hashlib
import random

ROW_MULTIPLE = 8


def moe_split(experts: int, rows: int, seed: int, skew: float = 1.0, multiple: int = ROW_MULTIPLE) -> tuple:
    """Rows per expert: ``rows`` routed rows split over ``experts`` with weight 1/rank^skew
    (ranks shuffled by ``seed``), each rounded to a multiple of ``multiple`` (at least one),
    largest remainders first so the total stays ``rows`` rounded to ``multiple``."""
    if experts < 1 or rows < experts * multiple:
        raise ValueError(f"moe_split: need experts >= 1 and rows >= experts * {multiple}, got {experts}, {rows}")
    rng = random.Random(seed)
    ranks = list(range(1, experts + 1))
    rng.shuffle(ranks)
    weights = [1.0 / r ** skew for r in ranks]
    blocks = rows // multiple - experts  # blocks beyond each expert's one
    shares = [blocks * w / sum(weights) for w in weights]
    whole = [int(s) for s in shares]
    order = sorted(range(experts), key=lambda i: (shares[i] - whole[i], -i), reverse=True)
    for i in order[:blocks - sum(whole)]:
        whole[i] += 1
    return tuple((1 + w) * multiple for w in whole)


def moe_layer(experts: int, rows: int, n: int, k: int, seed: int, skew: float = 1.0,
              multiple: int = ROW_MULTIPLE) -> tuple:
    """One MoE projection as a grouped size: ((M_e, N, K) per expert)."""
    return tuple((m, n, k) for m in moe_split(experts, rows, seed, skew, multiple))


def grouped_label(size) -> str:
    """``E8xT1024xN1792xK4096`` when every problem shares N and K (T: rows in all), else
    ``G4x`` and a digest of the problem list."""
    problems = [tuple(int(v) for v in p) for p in size]
    if len({(n, k) for _, n, k in problems}) == 1:
        _, n, k = problems[0]
        return f"E{len(problems)}xT{sum(m for m, _, _ in problems)}xN{n}xK{k}"
    digest = hashlib.sha256(repr(problems).encode()).hexdigest()[:8]
    return f"G{len(problems)}x{digest}"


# A few problems of different M, N and K (K tails of 520 and 136, M of 8 and 40).
DEFAULT_GROUPED = (((128, 256, 520), (40, 128, 64), (256, 64, 136), (8, 256, 256)),)
# Mixtral 8x7B's w1 (4096 -> 14336) on one of 8 tensor-parallel ranks (N = 1792), 1024
# routed rows; a 64-expert fine-grained MoE (Qwen3-MoE-like 2048 -> 768, 2 ranks: N = 384)
# with 1024 tokens routed to 8 experts each. Both stay under the verifier's host budget.
LLM_GROUPED = (moe_layer(8, 1024, 1792, 4096, seed=8), moe_layer(64, 8192, 384, 2048, seed=64))
# Decode-sized and prefill-sized splits, strongly skewed, and an even 8-expert split.
SWEEP_GROUPED = (moe_layer(8, 128, 1792, 4096, seed=1, skew=2.0), moe_layer(8, 4096, 512, 1024, seed=2),
                 moe_layer(64, 1024, 256, 512, seed=3, skew=1.5), moe_layer(8, 512, 256, 256, seed=4, skew=0.0))

# Grouped blockwise-scaled FP8 (DeepSeek-style MoE experts with 1x128 / 128x128 scales): K a
# multiple of 16 (16-byte TMA rows of FP8 A and B), expert rows padded to 16 (a TMA epilogue
# stores FP8 D in 16-byte rows along M). Default: four problems of different M, N and K (partial
# M tiles of 48 and 16 rows, K of 5, 3, 2 and 4 blocks of 128).
DEFAULT_GROUPED_BLOCKWISE = (((256, 512, 640), (48, 256, 384), (128, 768, 256), (16, 512, 512)),)
# DeepSeek-V3-like routed experts (hidden 7168, expert width 2048 on 4 tensor-parallel ranks:
# 512), 1024 routed rows over 8 experts: the up projection (K = 7168) and the down projection
# (N = 7168, K = 512). Both stay under the verifier's host budget.
LLM_GROUPED_BLOCKWISE = (moe_layer(8, 1024, 512, 7168, seed=8, multiple=16),
                         moe_layer(8, 1024, 7168, 512, seed=9, multiple=16))
# A skewed decode-sized split, an even split, and a partial last K block (1040 = 8 x 128 + 16).
SWEEP_GROUPED_BLOCKWISE = (moe_layer(8, 256, 512, 1024, seed=1, skew=2.0, multiple=16),
                           moe_layer(8, 1024, 256, 256, seed=4, skew=0.0, multiple=16),
                           moe_layer(4, 512, 384, 1040, seed=5, multiple=16))

# Grouped planar complex (CUTLASS's planar complex array kernels): MoE-shaped batches (uneven
# rows, shared N and K) at widths where complex operands (twice a real one's host memory) stay
# under the verifier's budget even for kernels whose one leading dimension makes every problem
# take the largest M (a column-major A): 8 experts over 1024 rows (N 512, K 2048) and 16 over
# 2048 rows (N 256, K 1024).
LLM_GROUPED_COMPLEX = (moe_layer(8, 1024, 512, 2048, seed=8), moe_layer(16, 2048, 256, 1024, seed=16))
SWEEP_GROUPED_COMPLEX = (moe_layer(8, 128, 896, 2048, seed=1, skew=2.0), moe_layer(8, 4096, 512, 1024, seed=2),
                         moe_layer(64, 1024, 256, 512, seed=3, skew=1.5), moe_layer(8, 512, 256, 256, seed=4, skew=0.0))
