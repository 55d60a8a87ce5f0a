"""The op registry: per op, the float64 reference, the error model and the input domain.

One module per family of ops (elementwise, rows, gemm, grouped_gemm, mixed_input_gemm,
sparse_gemm, complex_gemm, blockwise_gemm, grouped_blockwise_gemm, grouped_complex_gemm, conv,
conv_nhwc, sequence, llm, gated, rope, cross_entropy, custom), each listing its ``OpSpec``s in ``OPS``; ``spec`` holds
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
from . import (complex_gemm, conv, conv_nhwc, cross_entropy, custom, elementwise, gated, gemm, grouped_gemm, llm,
               mixed_input_gemm, rope, rows, sequence, sparse_gemm)
from ..numerics import MATH_INPUT_ROUNDOFF
from .spec import DEFAULT_INPUT_RANGE, OpSpec, init_moments
from . import blockwise_gemm, grouped_blockwise_gemm, grouped_complex_gemm

OPS: dict = {spec.name: spec for family in (elementwise, rows, gemm, grouped_gemm, sequence, conv, conv_nhwc,
                                            custom, llm, gated, rope, cross_entropy, mixed_input_gemm,
                                            sparse_gemm, complex_gemm)
             for spec in family.OPS}
OPS.update({spec.name: spec for spec in blockwise_gemm.OPS})  # FP8 GEMM with per-block scales
OPS.update({spec.name: spec for spec in grouped_blockwise_gemm.OPS})  # the same, G problems in one launch
OPS.update({spec.name: spec for spec in grouped_complex_gemm.OPS})  # G planar complex GEMMs in one launch
# Mirage muGraphs: the reference is the muGraph carried in the problem (dataset_spec/mugraph.py)
OPS["mugraph"] = mugraph.op_spec(OpSpec)


def check_problem(problem) -> None:
    """Build-time checks of a problem against its op: every out/inout buffer has a reference
    (a registry op that fills only some of them would fail every row at verify time with
    'reference returned no value'), and ``params.output_roundings`` is a count. Raises
    SpecError naming the buffer or the field and the fix."""
    op = get_op(problem.op)
    declared = [b.name for b in problem.buffers if b.role in ("out", "inout")]
    roundings = problem.params.get("output_roundings")
    counts = roundings.items() if isinstance(roundings, dict) else [(None, roundings)] if roundings is not None else []
    for name, count in counts:
        where = "params.output_roundings" + (f".{name}" if name is not None else "")
        if name is not None and name not in declared:
            raise SpecError(f"problem {problem.problem_id}: {where}: {name!r} is no out/inout buffer; "
                            f"the outputs are {', '.join(declared)}")
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_OUTPUT_ROUNDINGS:
            raise SpecError(f"problem {problem.problem_id}: {where} must be an integer from 1 to "
                            f"{MAX_OUTPUT_ROUNDINGS} (roundings to the output dtype between the inputs and "
                            f"the store), got {count!r}")
    precisions = problem.params.get("math_input")
    for name, precision in (precisions.items() if isinstance(precisions, dict) else []):
        where = f"params.math_input.{name}"
        if name not in declared:
            raise SpecError(f"problem {problem.problem_id}: {where}: {name!r} is no out/inout buffer; "
                            f"the outputs are {', '.join(declared)}")
        if precision not in MATH_INPUT_ROUNDOFF:
            raise SpecError(f"problem {problem.problem_id}: {where} must be one of "
                            f"{', '.join(MATH_INPUT_ROUNDOFF)} (the type operands are rounded to before a "
                            f"product), got {precision!r}")
    produced = op.produced_outputs(problem)
    if produced is None:
        return
    missing = [name for name in declared if name not in produced]
    if missing:
        raise SpecError(f"problem {problem.problem_id}: op {problem.op} gives no reference for output "
                        f"{missing[0]!r} (it gives {', '.join(produced) or 'nothing'} for this problem: "
                        f"{op.description}); rename the buffer to one the op fills, make it role scratch, or "
                        f"use op custom with a reference that returns it")


# More roundings than this allows a bfloat16 output an error of several per cent.
MAX_OUTPUT_ROUNDINGS = 8


def ops_where(field: str) -> dict:
    """{op name: the value of ``field``} for every op whose ``OpSpec.field`` is set: the
    tables other rooms read (sizes kinds, row ops, ops the GPU evaluates, exact flops)."""
    return {name: getattr(spec, field) for name, spec in OPS.items() if getattr(spec, field)}


def get_op(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise SpecError(f"unknown op {name!r}; known ops: {', '.join(sorted(OPS))} "
                        f"(or op 'custom' with params.reference = 'module:function')") from None


__all__ = ["OPS", "OpSpec", "get_op", "ops_where", "check_problem", "init_moments", "DEFAULT_INPUT_RANGE"]
