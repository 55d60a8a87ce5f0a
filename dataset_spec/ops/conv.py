"""Convolutions, NCHW with stride 1: conv2d_bias_relu and depthwise_conv2d."""
from __future__ import annotations

import numpy as np

from ..model import Problem
from .spec import OpSpec, _inputs_of, _out_name, on_magnitudes, range_int_products, range_products


def pointwise_conv(inputs, problem, reference):
    """The bias add after the C R S products."""
    return scale_conv2d_bias_relu(inputs, problem)


def stress_conv(problem, buffer, context, previous):
    """Filters tail-heavy, alternating or wide along their C R S reduction; X likewise
    along its rows. No NaN: relu(NaN) is max(NaN, 0), which IEEE maxNum makes 0."""
    from .. import stress as st
    shape = tuple(buffer.shape)
    if buffer.name == "W":
        flat = st.row_stress(st.PRODUCTS, (shape[0], int(np.prod(shape[1:]))), context)
        return flat.reshape(shape)
    if buffer.name == "X":
        return st.row_stress(st.PRODUCTS, shape, context)
    return st.row_stress((st.p_normal,), shape, context)


def _windows(x, problem, kernel):
    """(N, C, H', W', R, S) sliding windows of the zero-padded NCHW input (stride 1)."""
    pad = int(problem.params.get("padding", 0))
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    return np.lib.stride_tricks.sliding_window_view(x, kernel, axis=(2, 3))


def _conv_nchw(x, w, problem):
    x = x.reshape(problem.buffer("X").shape)
    w = w.reshape(problem.buffer("W").shape)
    return np.einsum("nchwij,kcij->nkhw", _windows(x, problem, w.shape[2:]), w, optimize=True)


def ref_conv2d_bias_relu(inputs, problem):
    """Y = relu(conv2d(X, W) + bias), NCHW / KCRS, stride 1, zero padding params.padding."""
    x, w, bias = _inputs_of(problem, inputs, "X", "W", "bias")
    y = _conv_nchw(x, w, problem) + bias.reshape(1, -1, 1, 1)
    return {_out_name(problem): np.maximum(y, 0.0)}


def scale_conv2d_bias_relu(inputs, problem):
    x, w, bias = _inputs_of(problem, inputs, "X", "W", "bias")  # the relu's clamp is not part of S
    return {_out_name(problem): _conv_nchw(np.abs(x), np.abs(w), problem) + np.abs(bias).reshape(1, -1, 1, 1)}


def conv_length(problem: Problem) -> int:
    k, c, r, s = problem.buffer("W").shape
    return int(c * r * s)


def _depthwise(x, w, problem):
    x = x.reshape(problem.buffer("X").shape)
    w = w.reshape(problem.buffer("W").shape)   # (C, 1, R, S)
    pad = int(problem.params.get("padding", 0))
    h, wd = x.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros(x.shape[:2] + (h + 2 * pad - w.shape[2] + 1, wd + 2 * pad - w.shape[3] + 1))
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            out += xp[:, :, i:i + out.shape[2], j:j + out.shape[3]] * w[:, 0, i, j].reshape(1, -1, 1, 1)
    return out


def ref_depthwise_conv2d(inputs, problem):
    """Y[n, c] = conv2d(X[n, c], W[c, 0]), NCHW, stride 1, zero padding params.padding."""
    x, w = _inputs_of(problem, inputs, "X", "W")
    return {_out_name(problem): _depthwise(x, w, problem)}


scale_depthwise_conv2d = on_magnitudes(ref_depthwise_conv2d)


def depthwise_length(problem: Problem) -> int:
    c, _, r, s = problem.buffer("W").shape
    return int(r * s)


OPS = [
    OpSpec("conv2d_bias_relu", ref_conv2d_bias_relu, conv_length,
           "Y = relu(conv2d(X, W) + bias), NCHW, stride 1, params.padding", scale_conv2d_bias_relu,
           range_products(conv_length), "conv2d(|X|, |W|) + |bias|, n = C R S",
           range_int_products(conv_length, "X", "W"),
           pointwise_conv, stress_conv, "S_i (the bias add)", exact_flops=True),
    OpSpec("depthwise_conv2d", ref_depthwise_conv2d, depthwise_length,
           "Y[n, c] = conv2d(X[n, c], W[c]), NCHW, stride 1, params.padding", scale_depthwise_conv2d,
           range_products(depthwise_length), "depthwise_conv2d(|X|, |W|), n = R S",
           range_int_products(depthwise_length, "X", "W"),
           stress=stress_conv, exact_flops=True),
]
