"""Where float64 references are computed: numpy, or torch on the GPU for the ops whose
reference functions are written against the array API both share (matrix products are the
slow part of a big GEMM group's verification); users' reference functions (op custom) on
the GPU where they give numpy's answer there, and kept on disk per input content
(custom_reference.py, reference_cache.py). torch stays optional."""
from __future__ import annotations

import functools

import numpy as np

from dataset_spec.ops import ops_where

# Reference functions that use only operators and methods numpy and torch share.
ARRAY_API_OPS = frozenset(ops_where("array_api"))
BACKENDS = ("auto", "numpy", "torch")
# Below this many multiply-adds the copy to the GPU costs more than numpy's float64 work.
MIN_GPU_WORK = 1 << 24


@functools.lru_cache(maxsize=1)
def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def output_elements(problem) -> int:
    return sum(b.numel for b in problem.buffers if b.role in ("out", "inout"))


def _work(problem) -> int:
    return output_elements(problem) * int(problem.params.get("K", 1))


def torch_for(backend: str):
    """torch (with a CUDA device) when ``backend`` may use it, else None; ``torch`` without
    it is an error naming the fix."""
    if backend not in BACKENDS:
        raise ValueError(f"reference backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "numpy":
        return None
    torch = _torch_cuda()
    if torch is None and backend == "torch":
        raise ValueError("reference backend torch needs torch with a CUDA device; use --reference numpy")
    return torch


def choose_backend(op_name: str, problem, backend: str = "auto") -> str:
    if backend not in BACKENDS:
        raise ValueError(f"reference backend must be one of {BACKENDS}, got {backend!r}")
    if op_name not in ARRAY_API_OPS or torch_for(backend) is None:
        return "numpy"
    if backend == "auto" and _work(problem) < MIN_GPU_WORK:
        return "numpy"
    return "torch"


def reference_outputs(op, values: dict, problem, backend: str = "auto") -> dict:
    """op.reference on float64 inputs, returned as float64 numpy arrays."""
    if choose_backend(op.name, problem, backend) == "numpy":
        return {k: np.asarray(v, dtype=np.float64) for k, v in op.reference(values, problem).items()}
    torch = _torch_cuda()
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)).cuda() for k, v in values.items()}
    return {k: v.double().cpu().numpy() for k, v in op.reference(tensors, problem).items()}


def evaluating_op(op, backend: str = "auto", quiet_gpu=None):
    """``op`` as the verifier evaluates it: a user's reference (op custom) and its error
    scale kept on disk per input content, and run in float64 on the GPU when torch with a
    CUDA device is there, ``backend`` allows it and the function gives numpy's answer there
    (custom_reference.py); ``quiet_gpu``: the lock no GPU work may run beside a timed
    member without. Other ops are returned unchanged."""
    from .custom_reference import CUSTOM_OP, evaluating_op as custom_evaluating_op
    if op.name != CUSTOM_OP:
        return op
    torch = torch_for(backend)
    device = torch.device("cuda", 0) if torch is not None else None
    return custom_evaluating_op(op, torch, device, quiet_gpu)
