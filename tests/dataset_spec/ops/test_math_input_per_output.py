"""``params.math_input`` per output: {buffer: precision} widens only the bound of the outputs
whose terms pass through the narrower type (a norm backward's dW products of a bfloat16
x * rstd, beside a dx computed in float32); an unknown buffer or precision is refused when
the problem is checked."""
import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem, SpecError
from dataset_spec.ops import check_problem, get_op


def _problem(math_input):
    return Problem("p", "custom", [Buffer("x", "float32", (4, 8)), Buffer("dx", "float32", (4, 8), "out"),
                                   Buffer("dw", "float32", (8,), "out")],
                   params={"reference": "m:f", "math_input": math_input})


def test_each_output_gets_its_own_operand_precision():
    op = get_op("custom")
    per_output = _problem({"dw": "bfloat16"})
    assert op.bound_terms(per_output, "float32", "dw").u_in == 2.0 ** -7
    assert op.bound_terms(per_output, "float32", "dx").u_in == 0.0
    shared = _problem("bfloat16")
    assert op.bound_terms(shared, "float32", "dx").u_in == op.bound_terms(shared, "float32", "dw").u_in == 2.0 ** -7
    ref, scale = np.ones(8), np.ones(8)
    assert np.all(op.bound_terms(per_output, "float32", "dw").bound(ref, scale)
                  > 100 * op.bound_terms(per_output, "float32", "dx").bound(ref, scale))


@pytest.mark.parametrize("math_input, message", [
    ({"dy": "bfloat16"}, "params.math_input.dy: 'dy' is no out/inout buffer; the outputs are dx, dw"),
    ({"dw": "bf16"}, "params.math_input.dw must be one of tf32, bfloat16, float16"),
])
def test_a_bad_per_output_precision_is_refused(math_input, message):
    with pytest.raises(SpecError, match=message):
        check_problem(_problem(math_input))
