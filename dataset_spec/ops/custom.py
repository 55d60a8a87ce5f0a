"""The ``custom`` op: a user reference given as ``params.reference = 'module:function'``.

``params.derived_inputs`` ({input buffer: function of the same module}) makes an input from
the buffers declared before it in every trial instead of drawing it: a sorted copy of x,
a norm's rstd of x for its backward. ``function(inputs, problem)`` gets the float64 values
drawn so far and returns the buffer's values.

An optional ``<function>_rounded(inputs, problem)`` gives, per output, the magnitude of
the values the kernel rounds to that output's dtype before the store (sparsemax backward's
mean, rounded to bfloat16 and then subtracted): one output-dtype roundoff of each, which
``params.output_roundings`` cannot say, as it counts roundings of the output's own size."""
from __future__ import annotations

import importlib
import sys
import types

import numpy as np

from ..model import Problem, SpecError
from ..numerics import FORMATS
from .spec import OpSpec, is_tensor


def _load_custom(problem: Problem, attribute: str, required: bool = True, name: str = ""):
    """A function from the user's reference module: from ``params.reference_source`` (the
    module's text, shipped inside the dataset) when present, else imported by name with
    ``params.reference_path`` (a folder) on sys.path."""
    target = problem.params.get("reference")
    if not target or ":" not in str(target):
        raise SpecError(f"problem {problem.problem_id}: op custom needs params.reference "
                        f"= 'module:function', got {target!r}")
    module_name, func_name = str(target).split(":", 1)
    source = problem.params.get("reference_source")
    try:
        if source:
            module = _module_from_source(module_name, source)
        else:
            folder = problem.params.get("reference_path")
            if folder and folder not in sys.path:
                sys.path.insert(0, folder)
            module = importlib.import_module(module_name)
    except Exception as exc:
        raise SpecError(f"problem {problem.problem_id}: cannot load reference module {module_name!r}: "
                        f"{type(exc).__name__}: {exc}") from None
    name = name or (func_name if attribute == "reference" else f"{func_name}_{attribute}")
    func = getattr(module, name, None)
    if func is None and required:
        raise SpecError(f"problem {problem.problem_id}: reference module {module_name!r} has no {name!r}")
    return func


_SOURCE_MODULES: dict = {}


def _module_from_source(module_name: str, source: str):
    key = (module_name, source)
    if key not in _SOURCE_MODULES:
        module = types.ModuleType(module_name)
        exec(compile(source, f"<reference {module_name}>", "exec"), module.__dict__)
        _SOURCE_MODULES[key] = module
    return _SOURCE_MODULES[key]


def ref_custom(inputs, problem):
    """A user reference ``module:function`` (params.reference). An optional
    ``function_error_scale(inputs, problem)`` in the same module gives S."""
    return _load_custom(problem, "reference")(inputs, problem)


def scale_custom(inputs, problem):
    """The module's ``<function>_error_scale``, or None (S = |out|) when it has none."""
    func = _load_custom(problem, "error_scale", required=False)
    return func(inputs, problem) if func is not None else None


def rounded_custom(inputs, problem, reference, call=None):
    """P (in units of the accumulator's roundoff, as the bound weighs it) of the module's
    ``<function>_rounded``: each magnitude times u_out / u_acc of its output; {} without one.
    ``call(func)``: how the function is evaluated (the verifier's GPU route for tensors);
    tensors stay tensors."""
    func = _load_custom(problem, "rounded", required=False)
    if func is None:
        return {}
    pointwise = {}
    for name, magnitude in (call(func) if call is not None else func(inputs, problem)).items():
        if name not in reference:
            raise SpecError(f"problem {problem.problem_id}: {problem.params['reference']}_rounded names "
                            f"{name!r}, which the reference does not return; name one of {sorted(reference)}")
        dtype = problem.buffer(name).dtype
        u_acc = OPS[0].bound_terms(problem, dtype, name).u_acc
        if dtype in FORMATS and u_acc:  # integer outputs are exact: nothing to add
            value = magnitude if is_tensor(magnitude) else np.asarray(magnitude, dtype=np.float64)
            pointwise[name] = abs(value) * (FORMATS[dtype].unit_roundoff / u_acc)
    return pointwise


def derived_inputs(problem: Problem) -> dict:
    """params.derived_inputs: {input buffer: function name in the reference module}."""
    return dict(problem.params.get("derived_inputs") or {})


def derives_custom(problem: Problem, name: str) -> bool:
    return name in derived_inputs(problem)


def derive_custom(problem: Problem, buffer, rng, previous=None) -> np.ndarray:
    """One trial's values of a derived input: the module's function of the buffers drawn
    before it (declared earlier in the problem)."""
    function_name = derived_inputs(problem)[buffer.name]
    func = _load_custom(problem, "derive", name=function_name)
    try:
        values = func(dict(previous or {}), problem)
    except KeyError as exc:
        raise SpecError(f"problem {problem.problem_id}: derived input {buffer.name} ({function_name}) reads "
                        f"buffer {exc.args[0]!r}, which is not drawn before it; declare {buffer.name} after "
                        f"the buffers it is made from") from None
    values = np.asarray(values, dtype=np.float64)
    if values.size != buffer.numel:
        raise SpecError(f"problem {problem.problem_id}: derived input {buffer.name} ({function_name}) returned "
                        f"{values.size} values; the buffer has {buffer.numel} {tuple(buffer.shape)}")
    return values.reshape(buffer.shape)


OPS = [
    OpSpec("custom", ref_custom, lambda p: int(p.params.get("reduction_length", 1)),
           "user reference module:function", scale_custom, None,
           "the module's <function>_error_scale, else |out|; n = params.reduction_length",
           pointwise_scale=rounded_custom,
           pointwise_text="u_out / u_acc times the module's <function>_rounded (values rounded to the output's "
                          "dtype before the store), else 0",
           outputs=lambda problem: None,  # the user's function says which outputs it fills
           derive=derive_custom, derived_when=derives_custom),
]
