"""A counter-based random generator in torch tensor ops: Philox4x32-10, keyed by a trial's
seed, with counters (element block, buffer index, stream).

Every value is a pure function of (seed, buffer index, stream, element index), computed
with exact integer arithmetic (32-bit products split into 16-bit halves, so no int64
product overflows). The same seed therefore gives the same bits on any GPU and on the
CPU; floats made from them (Box-Muller's log, sqrt and cos in float64) agree to the last
bit or two of float64, far below any storage dtype's rounding. The verifier records
``GENERATOR`` in each row so that a witness redraws a trial the way it was drawn.
"""
from __future__ import annotations

import math

GENERATOR = "philox4x32-10/torch/1"

_MASK32 = 0xFFFFFFFF
_M0, _M1 = 0xD2511F53, 0xCD9E8D57  # Philox4x32 multipliers (Salmon et al., SC'11)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # key schedule increments
_ROUNDS = 10


def _mulhilo(constant: int, word):
    """(high, low) 32-bit halves of ``constant * word`` for int64 tensors ``word`` < 2^32."""
    high_part = word * (constant >> 16)         # < 2^48
    low_part = word * (constant & 0xFFFF)       # < 2^48
    y = ((high_part & 0xFFFF) << 16) + low_part  # < 2^49
    return (high_part >> 16) + (y >> 32), y & _MASK32


def philox_words(seed: int, buffer_index: int, stream: int, blocks: int, device):
    """Four int64 tensors of ``blocks`` 32-bit words each: Philox4x32-10 of counters
    (block, block >> 32, buffer_index, stream) under key (seed low, seed high words)."""
    import torch
    block = torch.arange(blocks, dtype=torch.int64, device=device)
    c0, c1 = block & _MASK32, block >> 32
    c2 = torch.full_like(block, int(buffer_index) & _MASK32)
    c3 = torch.full_like(block, int(stream) & _MASK32)
    k0, k1 = int(seed) & _MASK32, (int(seed) >> 32) & _MASK32
    for _ in range(_ROUNDS):
        hi0, lo0 = _mulhilo(_M0, c0)
        hi1, lo1 = _mulhilo(_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
    return c0, c1, c2, c3


def uniform(seed: int, buffer_index: int, stream: int, n: int, device):
    """``n`` float64 values in [0, 1), 53 random bits each (two per Philox block)."""
    import torch
    if n == 0:
        return torch.zeros(0, dtype=torch.float64, device=device)
    w0, w1, w2, w3 = philox_words(seed, buffer_index, stream, (n + 1) // 2, device)
    first = ((w0 >> 5) << 26) + (w1 >> 6)
    second = ((w2 >> 5) << 26) + (w3 >> 6)
    bits = torch.stack((first, second), dim=1).reshape(-1)[:n]
    return bits.to(torch.float64) * (2.0 ** -53)


def normal(seed: int, buffer_index: int, stream: int, n: int, device, mean: float = 0.0, std: float = 1.0):
    """``n`` normal values (Box-Muller over streams ``stream`` and ``stream + 1``)."""
    import torch
    u1 = uniform(seed, buffer_index, stream, n, device)
    u2 = uniform(seed, buffer_index, stream + 1, n, device)
    radius = torch.sqrt(-2.0 * torch.log1p(-u1))  # 1 - u1 lies in (0, 1]: no log of 0
    return mean + std * (radius * torch.cos((2.0 * math.pi) * u2))


def integers(seed: int, buffer_index: int, stream: int, n: int, low: int, high: int, device):
    """``n`` integers in [low, high) as float64 (exact while high - low < 2^53)."""
    import torch
    u = uniform(seed, buffer_index, stream, n, device)
    span = float(high - low)
    return torch.clamp(torch.floor(u * span), max=span - 1.0) + float(low)
