"""Execute a muGraph's launch plan with numpy, the way the generated CUDA does: block by
block over the grid, iteration by iteration over the for-loop, tile by tile through the
maps, with every half tensor rounded to float16 and accumulators kept in float32.

Used by the tests (against the float64 formulas, at the files' real shapes) and by the
error-model tests (as an emulation of the kernels' rounding).
"""
from __future__ import annotations

import itertools

import numpy as np

from .plan import GraphPlan, KernelPlan, Step, Tile

F16, F32 = np.float16, np.float32


def run_plan(plan: GraphPlan, inputs: dict) -> dict:
    """{buffer: float16 array} for every buffer after the launch sequence; ``inputs`` maps
    input names to arrays (converted to float16)."""
    device = {b.name: np.asarray(inputs[b.name]).astype(F16).reshape(b.shape) for b in plan.buffers
              if b.role == "in"}
    for b in plan.buffers:
        if b.role != "in":
            device[b.name] = np.full(b.shape, np.nan, dtype=F16)  # poison: unwritten shows
    for kernel in plan.kernels:
        if kernel.kind == "customized":
            _run_customized(kernel, device)
        else:
            _run_predefined(kernel, device)
    return device


def _round(x) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=F32).astype(F16).astype(F32)


def unary(op: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        if op == "exp":
            return np.exp(x)
        if op == "silu":
            return x / (F32(1) + np.exp(-x))
    raise ValueError(op)


def binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return {"add": np.add, "mul": np.multiply, "div": np.divide}[op](a, b)


def _run_predefined(kernel: KernelPlan, device: dict) -> None:
    args = [device[p].astype(F32) for p in kernel.params[:-1]]
    out = kernel.params[-1]
    if kernel.kind == "matmul":
        value = np.matmul(args[0], args[1])
    elif len(args) == 1:
        value = unary(kernel.kind, args[0])
    else:
        value = binary(kernel.kind, args[0], args[1])
    device[out] = _round(np.broadcast_to(value, device[out].shape)).astype(F16)


def _slices(tile: Tile, block: tuple, iteration: int) -> tuple:
    return tuple(slice(s, s + n) for s, n in zip(tile.starts(block, iteration), tile.tile_shape))


def _run_customized(kernel: KernelPlan, device: dict) -> None:
    pre = [s for s in kernel.steps if s.phase == "pre"]
    loop = [s for s in kernel.steps if s.phase == "loop"]
    post = [s for s in kernel.steps if s.phase == "post"]
    for block in itertools.product(*(range(n) for n in kernel.grid)):
        smem: dict = {}
        for step in pre:
            _step(step, kernel, smem, device, block, 0)
        for iteration in range(kernel.forloop_range):
            for step in loop:
                _step(step, kernel, smem, device, block, iteration)
        for step in post:
            _step(step, kernel, smem, device, block, 0)


def _step(step: Step, kernel: KernelPlan, smem: dict, device: dict, block: tuple, iteration: int) -> None:
    op = step.op
    x = [smem[n] for n in step.inputs]
    if op == "load":
        smem[step.outputs[0]] = device[step.tile.buffer][_slices(step.tile, block, iteration)].astype(F32)
        return
    if op == "store":
        device[step.tile.buffer][_slices(step.tile, block, 0)] = x[0].astype(F16)
        return
    if op == "zero":
        smem[step.outputs[0]] = np.zeros(kernel.smem[step.outputs[0]].shape, dtype=F32)
        return
    out = step.outputs[0]
    if op == "matmul":
        smem[out] = _round(np.matmul(x[0], x[1]))
    elif op in ("exp", "silu"):
        smem[out] = _round(unary(op, x[0]))
    elif op in ("add", "mul", "div"):
        smem[out] = _round(binary(op, x[0], x[1]))
    elif op == "rms_norm":
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            scale = F32(1) / np.sqrt(np.mean(x[0] * x[0], axis=-1, keepdims=True, dtype=F32))
        smem[out] = _round(x[0] * scale)
    elif op == "accum_nored":
        smem[out] = smem[out] + x[0]
    elif op == "accum_red_ld_sum":
        smem[out] = smem[out] + x[0].sum(axis=-1, keepdims=True, dtype=F32)
    elif op == "accum_red_ld_rms":
        smem[out] = smem[out] + (x[0] * x[0]).sum(axis=-1, keepdims=True, dtype=F32)
    elif op == "accum_redtox_ld_sum":
        # element j of the result sums x[..., k * dimx + j] over k (see docs/mirage.md)
        shape = x[0].shape[:-1] + (x[0].shape[-1] // step.param, step.param)
        smem[out] = smem[out] + x[0].reshape(shape).sum(axis=-2, dtype=F32)
    elif op == "finalize":
        smem[out] = _round(x[0])
    elif op == "finalize_rms":
        smem[out] = _round(np.sqrt(x[0] / F32(step.param)))
    else:
        raise ValueError(f"unknown step {op}")
