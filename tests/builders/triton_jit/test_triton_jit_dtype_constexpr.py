"""A tl.constexpr that is a Triton dtype (Liger's ``X_dtype``, GroupNorm's ``dtype``) is written
``tl.bfloat16`` in a call description: the plan keeps the text (rows are plain data) and the
compile gets the dtype; a name that is no dtype is one line naming the field."""
from pathlib import Path

import pytest

pytest.importorskip("triton")
from builders.triton_jit.description import CallDescriptionError, load_description  # noqa: E402
from builders.triton_jit.specialize import ArgPlan, compile_inputs, triton_dtype  # noqa: E402

KERNEL = '''
import triton
import triton.language as tl

@triton.jit
def scale(x_ptr, y_ptr, n, OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, (x * 2).to(OUT_DTYPE), mask=offs < n)
'''
CALL = '''
kernel: kernels:scale
problem:
  problem_id: scale/bf16
  op: custom
  params: {reference: "ref:double"}
  buffers:
    - {name: x, dtype: float32, shape: [1024]}
    - {name: y, dtype: bfloat16, shape: [1024], role: out}
args: {x_ptr: x, y_ptr: y, n: 1024}
constexprs: {OUT_DTYPE: "@DTYPE@", BLOCK: 256}
grid: [4]
'''


def _description(tmp_path, dtype):
    (tmp_path / "kernels.py").write_text(KERNEL)
    (tmp_path / "ref.py").write_text("def double(inputs, problem):\n    return {'y': 2 * inputs['x']}\n")
    (tmp_path / "call.yaml").write_text(CALL.replace("@DTYPE@", dtype))
    return load_description(tmp_path / "call.yaml")


def test_a_dtype_constexpr_compiles_as_that_dtype(tmp_path):
    import triton.language as tl
    from builders.triton_jit.builder import compile_member, member_plan
    description = _description(tmp_path, "tl.bfloat16")
    plan = member_plan(description, 0)
    assert {p["name"]: p["value"] for p in plan["plans"]}["OUT_DTYPE"] == "tl.bfloat16"
    _, constexprs, _ = compile_inputs([ArgPlan(**p) for p in plan["plans"]])
    assert constexprs["OUT_DTYPE"] is tl.bfloat16 and triton_dtype("tl.float32") is tl.float32
    ptx = compile_member(description, plan, "sm_90a").asm["ptx"]
    assert "cvt.rn.bf16x2.f32" in ptx  # the store converts to bfloat16


def test_a_name_that_is_no_dtype_is_refused(tmp_path):
    with pytest.raises(CallDescriptionError, match=r"call.yaml: constexprs.OUT_DTYPE: 'tl.bfloat17' names no "
                                                   r"triton.language dtype"):
        _description(tmp_path, "tl.bfloat17")
