"""Attention as a CUDA build of torch runs it, while the model is traced on the CPU.

The capture traces the model over fake CPU tensors (a CPU-only torch cannot index a fake CUDA
tensor: Python indexing opens a CUDA device guard, which needs the CUDA runtime), so
``F.scaled_dot_product_attention`` would become the CPU's fused attention op
(``_scaled_dot_product_flash_attention_for_cpu``) and the kernels Inductor writes around it
would be the CPU path's. ``CudaAttention`` makes the traced graph call what torch's CUDA
dispatch picks instead (``sdp_utils.cpp``'s order on sm_80 and newer): FlashAttention-2
(``_scaled_dot_product_flash_attention``) for float16/bfloat16 without a mask, head size at
most 256; else memory-efficient attention (``_scaled_dot_product_efficient_attention``,
float32 too, with a mask) where the head size is aligned; else the math path
(matmul, softmax, matmul), which Inductor fuses into Triton kernels. Inductor lowers the two
fused ops to their CUDA kernels (extern calls, not captured) and writes Triton kernels that
lay out their operands as those kernels require.
"""
from __future__ import annotations

import math

FLASH_DTYPES = ("float16", "bfloat16")
EFFICIENT_ALIGNMENT = {"float16": 8, "bfloat16": 8, "float32": 4}
FLASH_MAX_HEAD = 256


def sdpa_backend(query, key, value, attn_mask=None, enable_gqa: bool = False) -> str:
    """``flash``, ``efficient`` or ``math``: the backend torch's CUDA dispatch picks for
    these operands (4-D, dense, last dimension contiguous) on sm_80 or newer."""
    dtype = str(query.dtype).replace("torch.", "")
    dense = all(t.dim() == 4 and t.stride(-1) == 1 for t in (query, key, value))
    same_heads = query.shape[1] == key.shape[1] == value.shape[1]
    head = query.shape[-1]
    if not dense or not (same_heads or enable_gqa) or min(query.shape[2], key.shape[2]) == 0:
        return "math"
    if (dtype in FLASH_DTYPES and attn_mask is None and head == key.shape[-1] == value.shape[-1]
            and head <= FLASH_MAX_HEAD):
        return "flash"
    alignment = EFFICIENT_ALIGNMENT.get(dtype)
    if alignment and head % alignment == 0 and key.shape[-1] == head and value.shape[-1] % alignment == 0 \
            and same_heads:
        return "efficient"
    return "math"


def cuda_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """``F.scaled_dot_product_attention`` as the CUDA build computes it, in ATen ops."""
    import torch
    aten = torch.ops.aten
    scale = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    backend = sdpa_backend(query, key, value, attn_mask, enable_gqa)
    if backend == "flash":  # grouped-query attention (fewer key/value heads) runs in the kernel itself
        return aten._scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, False,
                                                          scale=scale)[0]
    if backend == "efficient":
        bias = attn_mask
        if bias is not None and bias.dtype == torch.bool:  # the CUDA path turns a boolean mask into -inf
            bias = torch.zeros(bias.shape, dtype=query.dtype, device=query.device).masked_fill(~bias, float("-inf"))
        return aten._scaled_dot_product_efficient_attention(query, key, value, bias, False, dropout_p, is_causal,
                                                              scale=scale)[0]
    return aten._scaled_dot_product_attention_math(query, key, value, attn_mask, dropout_p, is_causal, None,
                                                   scale=scale, enable_gqa=enable_gqa)[0]


def cuda_attention_mode():
    """A TorchFunctionMode under which ``F.scaled_dot_product_attention`` is ``cuda_sdpa``."""
    import torch
    from torch.overrides import TorchFunctionMode
    sdpa = torch.nn.functional.scaled_dot_product_attention

    class CudaAttention(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is sdpa:
                return cuda_sdpa(*args, **(kwargs or {}))
            return func(*args, **(kwargs or {}))

    return CudaAttention()
