"""The ``custom`` op: a user reference given as ``params.reference = 'module:function'``."""
from __future__ import annotations

import importlib
import sys
import types

from ..model import Problem, SpecError
from .spec import OpSpec


def _load_custom(problem: Problem, attribute: str, required: bool = True):
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
    name = func_name if attribute == "reference" else f"{func_name}_{attribute}"
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


OPS = [
    OpSpec("custom", ref_custom, lambda p: int(p.params.get("reduction_length", 1)),
           "user reference module:function", scale_custom, None,
           "the module's <function>_error_scale, else |out|; n = params.reduction_length",
           outputs=lambda problem: None),  # the user's function says which outputs it fills
]
