"""Rewrites Inductor's CUDA lowering makes anyway, made in the traced graph before it, so the
buffers they produce are values of graph nodes and each kernel that reads one has a reference.

Inductor lowers a CUDA convolution with a bias as the convolution without it (an extern
cuDNN call: "peel off the bias, cudnn is slower with it", ``torch/_inductor/kernel/conv.py``)
plus ``add(result, bias.view(C, 1, ...))``, which it fuses into the next Triton kernel.
That kernel reads the bias-free result, which no node of the traced graph computes; traced
the same way (``convolution_decompositions``), the graph has that node, and Inductor's
lowering of it is the same (a convolution without a bias, then the add).
"""
from __future__ import annotations


def peel_convolution_bias(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """``aten.convolution`` with a bias as Inductor lowers it for CUDA; NotImplemented (the op
    itself) without one."""
    import torch
    if bias is None:
        return NotImplemented
    aten = torch.ops.aten
    result = aten.convolution.default(x, weight, None, stride, padding, dilation, transposed, output_padding,
                                      groups)
    return aten.add.Tensor(result, aten.view.default(bias, [result.shape[1]] + [1] * (result.dim() - 2)))


def convolution_decompositions() -> dict:
    """The decomposition table entry that traces every biased convolution as ``peel_convolution_bias``."""
    import torch
    return {torch.ops.aten.convolution.default: peel_convolution_bias}
