"""Triton 3.6's JIT specialisation of call arguments, as plain data, for an ahead-of-time compile.

When a ``@triton.jit`` kernel is called, the JIT turns each argument into a signature type and
a specialisation (``triton.runtime.jit.create_function_from_signature`` over the C++
``native_specialize_impl``), then compiles ``ASTSource(fn, signature, constexprs, attrs)``. The
rules of the pinned Triton (3.6.0), checked against its own binder by tests/builders/triton_jit/test_triton_jit.py:

- a ``tl.constexpr`` parameter, ``None`` and (unless the parameter is in ``do_not_specialize``)
  an int equal to 1 become constexprs: they are compiled in and are no kernel parameter;
- an int is ``i32`` in [-2**31, 2**31), ``i64`` in [-2**63, 2**63), else ``u64``; a multiple of
  16 gets ``tt.divisibility = 16`` (not for ``do_not_specialize`` or
  ``do_not_specialize_on_alignment`` parameters);
- a float is ``fp32``; a bool ``u1`` (refused here: give 0/1 or a constexpr);
- a tensor is ``*<dtype>`` (``*k<dtype>`` for a ``const`` annotation) with divisibility 16 when
  its address is a multiple of 16, which every buffer the verifier places is;
- a parameter annotated with a type (``n: tl.int64``) takes that type; a float or bool
  annotation drops the specialisation, any other keeps the divisibility but not the constexpr.

The launch order is not decided here: ``builder.launch_args`` reads it from the compiled
kernel's own signature, as Triton's launcher does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

# Problem buffer dtypes -> Triton pointee types (the names torch dtypes canonicalise to)
POINTEE = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
           "float8_e4m3": "fp8e4nv", "float8_e5m2": "fp8e5", "int8": "i8", "uint8": "u8", "int16": "i16",
           "uint16": "u16", "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64"}
INT32 = 1 << 31
INT64 = 1 << 63


@dataclass(frozen=True)
class ParamInfo:
    """What the JIT knows of one parameter of the kernel (from ``JITFunction.params``)."""
    name: str
    index: int
    constexpr: bool = False
    const: bool = False
    annotation: str = ""            # a Triton type the parameter is annotated with, or ""
    no_specialize: bool = False     # in do_not_specialize
    no_align: bool = False          # in do_not_specialize_on_alignment
    has_default: bool = False
    default: Any = None


@dataclass(frozen=True)
class Value:
    """An argument as the call gives it: a problem buffer (its name and dtype), a number or None."""
    kind: str                       # "buffer", "number" or "none"
    value: Any = None               # buffer name or number
    dtype: Optional[str] = None     # buffer dtype


@dataclass
class ArgPlan:
    """One parameter after specialisation: ``type`` is "constexpr" or the signature type."""
    name: str
    index: int
    type: str
    value: Any = None               # buffer name for a pointer, else the number (or None)
    divisible: bool = False

    @property
    def pointer(self) -> bool:
        return self.type.startswith("*")


def int_type(value: int) -> str:
    if -INT32 <= value < INT32:
        return "i32"
    return "i64" if -INT64 <= value < INT64 else "u64"


def specialize_one(param: ParamInfo, arg: Value) -> ArgPlan:
    """The JIT's (type, specialisation) of one non-constexpr parameter given ``arg``."""
    plan = ArgPlan(param.name, param.index, "", arg.value)
    specialize, align = not param.no_specialize, not param.no_align
    if arg.kind == "none":
        plan.type = "constexpr"
    elif arg.kind == "buffer":
        plan.type = ("*k" if param.const else "*") + POINTEE[arg.dtype]
        plan.divisible = specialize and align
    elif isinstance(arg.value, bool):
        raise ValueError(f"args.{param.name}: a bool argument; Triton passes it as u1, which this source "
                         "does not launch: give 0 or 1, or make the parameter a tl.constexpr")
    elif isinstance(arg.value, int):
        if specialize and arg.value == 1:
            plan.type = "constexpr"
        else:
            plan.type = int_type(arg.value)
            plan.divisible = specialize and align and arg.value % 16 == 0
    else:
        plan.type, plan.value = "fp32", float(arg.value)
    if param.annotation and arg.kind != "none":
        if param.annotation == "u1" or param.annotation[:2] in ("fp", "bf"):
            plan.type, plan.divisible = param.annotation, False
        else:  # the type is the annotation's; an int equal to 1 stays a runtime value
            plan.type = param.annotation
    return plan


def specialize(params: list, args: dict, constexprs: dict) -> list:
    """ArgPlans of every parameter in the kernel's order: ``args`` (name -> Value) for runtime
    parameters, ``constexprs`` (name -> value) for ``tl.constexpr`` ones."""
    plans = []
    for param in params:
        if param.constexpr:
            plans.append(ArgPlan(param.name, param.index, "constexpr", constexprs[param.name]))
        else:
            plans.append(specialize_one(param, args[param.name]))
    return plans


DTYPE_PREFIX = "tl."  # a constexpr written "tl.bfloat16" is that Triton dtype (Liger's X_dtype)


def triton_dtype(value):
    """The ``triton.language`` dtype a constexpr such as ``"tl.bfloat16"`` names, or None when
    ``value`` names none (a description keeps dtypes as text: rows and work items are plain data)."""
    if not isinstance(value, str) or not value.startswith(DTYPE_PREFIX):
        return None
    import triton.language as tl
    found = getattr(tl, value[len(DTYPE_PREFIX):], None)
    return found if isinstance(found, tl.dtype) else None


def compile_inputs(plans: list) -> tuple:
    """(signature, constexprs, attrs) for ``triton.compiler.ASTSource``; a constexpr naming a
    Triton dtype (``"tl.float32"``) is passed as that dtype."""
    signature = {p.name: p.type for p in plans}
    constexprs = {p.name: triton_dtype(p.value) or p.value for p in plans if p.type == "constexpr"}
    attrs = {(p.index,): [["tt.divisibility", 16]] for p in plans if p.divisible and p.type != "constexpr"}
    return signature, constexprs, attrs


def summary(plans: list, params: list) -> dict:
    """What the row's variant records: divisible parameters and those specialised away."""
    declared = {p.name for p in params if p.constexpr}
    return {"divisibility_16": [p.name for p in plans if p.divisible and p.type != "constexpr"],
            "specialised_away": {p.name: p.value for p in plans if p.type == "constexpr" and p.name not in declared}}
