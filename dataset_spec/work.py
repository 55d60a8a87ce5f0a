"""The least work a problem asks of any kernel: bytes it must read and flops it must do.

A row's time is checked against this floor (the roofline of the GPU it ran on): no kernel
that computes the function can move fewer bytes from memory or do fewer multiply-adds, so a
time below the floor means work was skipped, and the ratio of floor to time is a normalised
speed (``sol_ratio``) that compares rows across functions.

Only what every correct kernel must do counts, so the floor never fails a kernel that is
merely clever:
- every input element that can change an output is read once from memory (the verifier
  flushes the L2 cache before each timed sample); inputs that need not be read are left
  out: C where beta = 0, A and B where alpha = 0, a strided or dilated convolution's
  activations (taps may skip them), and every input of ops whose semantics the registry
  does not see (``custom``, ``mugraph``);
- outputs are written, but a write may stay in L2 until after the kernel ends, so only
  output bytes beyond the L2 capacity count (the verifier supplies the capacity);
- flops only for ops whose count is exact for every algorithm: 2 x outputs x the reduction
  length for GEMMs and forward or weight-gradient convolutions (a data-gradient
  convolution's length is an upper bound with stride, and complex products have 3-mult
  forms), each at the peak rate of the fastest operand dtype; none where the problem draws
  sparse operands (``params.operand_density``), whose zeros a kernel may rightly skip.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import Problem
from .ops import ops_where
from .ops.spec import reads_buffer

# Ops whose inputs are not all needed, or whose needs the registry cannot see.
OUTPUTS_ONLY = ("custom", "mugraph")
# Ops with an exact multiply-add count: 2 x output elements x reduction length.
FLOP_OPS = tuple(ops_where("exact_flops"))
GEMM_OPS = ("gemm", "mixed_input_gemm", "blockwise_scaled_gemm", "sparse_gemm", "grouped_gemm",
            "grouped_blockwise_scaled_gemm", "grouped_complex_gemm", "complex_gemm")
CONV_ACTIVATIONS = {"conv2d_fprop": ("x",), "conv3d_fprop": ("x",), "conv2d_wgrad": ("x",),
                    "conv3d_wgrad": ("x",)}
OPERANDS = ("A", "B")


@dataclass(frozen=True)
class Work:
    """``read_bytes``: input bytes every kernel must read; ``write_bytes``: output bytes;
    ``flops``: multiply-adds x 2 (0 where the op declares none); ``math_dtypes``: the
    dtypes of the operands the flops are done on (the peak rate of the fastest applies)."""
    read_bytes: int
    write_bytes: int
    flops: int = 0
    math_dtypes: tuple = ()

    def dram_bytes(self, l2_bytes: int) -> int:
        """Bytes that must cross the memory bus within the kernel's span."""
        return self.read_bytes + max(0, self.write_bytes - int(l2_bytes))


def _needed_inputs(problem: Problem) -> list:
    p = problem.params or {}
    if problem.op in OUTPUTS_ONLY:
        return []
    skip = {b.name for b in problem.buffers if not reads_buffer(problem, b.name)}
    if problem.op in GEMM_OPS and float(p.get("alpha", 1.0)) == 0.0:
        skip.update(OPERANDS)
    if problem.op in CONV_ACTIVATIONS:
        strides = p.get("stride", 1)
        dilations = p.get("dilation", 1)
        spread = [int(v) for v in (strides if isinstance(strides, (list, tuple)) else [strides])]
        spread += [int(v) for v in (dilations if isinstance(dilations, (list, tuple)) else [dilations])]
        if any(v != 1 for v in spread):
            skip.update(CONV_ACTIVATIONS[problem.op])
    return [b for b in problem.buffers if b.role == "in" and b.name not in skip]


def problem_work(problem: Problem, reduction_length=None) -> Work:
    """The floor of ``problem``; ``reduction_length(problem)``: the op's (from the op
    registry, passed in so this module needs none of it)."""
    read = sum(b.nbytes for b in _needed_inputs(problem)) + sum(b.nbytes for b in problem.buffers
                                                               if b.role == "inout")
    write = sum(b.nbytes for b in problem.buffers if b.role in ("out", "inout"))
    flops, dtypes = 0, ()
    p = problem.params or {}
    if (problem.op in FLOP_OPS and reduction_length is not None and float(p.get("alpha", 1.0)) != 0.0
            and not p.get("operand_density")):
        outputs = sum(b.numel for b in problem.buffers if b.role in ("out", "inout"))
        flops = 2 * outputs * int(reduction_length(problem))
        names = {b.name: b for b in problem.buffers if b.role == "in"}
        operands = [names[n] for n in ("A", "B", "x", "w", "dy", "X", "W") if n in names]
        dtypes = tuple(sorted({b.dtype for b in operands}))
    return Work(int(read), int(write), int(flops), dtypes)
