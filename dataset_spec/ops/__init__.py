"""The op registry: per op, the float64 reference, the error model and the input domain.

One module per family of ops (elementwise, rows, gemm, grouped_gemm, mixed_input_gemm,
sparse_gemm, complex_gemm, blockwise_gemm, grouped_blockwise_gemm, grouped_complex_gemm, conv,
conv_nhwc, sequence, llm, custom), each listing its ``OpSpec``s in ``OPS``; ``spec`` holds
``OpSpec`` and the helpers they share (``unsigned_sums``: sparse operands of unsigned
saturating GEMMs and convs).
Each op maps the group's float64 inputs to the float64 value every out/inout buffer must
hold (``reference``), gives the float64 magnitude scale ``S`` of the terms that produced
each output element (``error_scale``; ``numerics.BoundTerms`` turns it into a per-element
bound), the reduction length, and the magnitudes its inputs may take without overflow or
harmful underflow (``input_range``, used by the ``wide``, ``edge`` and ``stress`` trial
kinds), the inputs where its classic bugs live (``stress``, dataset_spec/stress.py) and
the range its integer inputs may take (``integer_range``).
``problem.tolerance`` (atol/rtol) replaces the bound with ``atol + rtol * |ref|``;
``problem.params["input_range"]`` ({buffer: [lo, hi]}) narrows or widens the domain.
"""
from __future__ import annotations

from .. import mugraph
from ..model import SpecError
from . import (complex_gemm, conv, conv_nhwc, custom, elementwise, gemm, grouped_gemm, llm, mixed_input_gemm,
               rows, sequence, sparse_gemm)
from .spec import DEFAULT_INPUT_RANGE, OpSpec, init_moments
from . import blockwise_gemm, grouped_blockwise_gemm, grouped_complex_gemm

OPS: dict = {spec.name: spec for family in (elementwise, rows, gemm, grouped_gemm, sequence, conv, conv_nhwc,
                                            custom, llm, mixed_input_gemm, sparse_gemm, complex_gemm)
             for spec in family.OPS}
OPS.update({spec.name: spec for spec in blockwise_gemm.OPS})  # FP8 GEMM with per-block scales
OPS.update({spec.name: spec for spec in grouped_blockwise_gemm.OPS})  # the same, G problems in one launch
OPS.update({spec.name: spec for spec in grouped_complex_gemm.OPS})  # G planar complex GEMMs in one launch
# Mirage muGraphs: the reference is the muGraph carried in the problem (dataset_spec/mugraph.py)
OPS["mugraph"] = mugraph.op_spec(OpSpec)


def get_op(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise SpecError(f"unknown op {name!r}; known ops: {', '.join(sorted(OPS))} "
                        f"(or op 'custom' with params.reference = 'module:function')") from None


__all__ = ["OPS", "OpSpec", "get_op", "init_moments", "DEFAULT_INPUT_RANGE"]
