"""The reference module of a TVM task (its program and reference_runtime.py's text, shipped
in the row as ``params.reference_source``), and evaluating it at build time."""
from __future__ import annotations

import json
import types
from pathlib import Path

RUNTIME_FILE = Path(__file__).with_name("reference_runtime.py")


def reference_source(program: dict, title: str) -> str:
    """The text of the reference module of ``program`` (``title``: one line naming the task)."""
    runtime = RUNTIME_FILE.read_text()
    runtime = runtime[runtime.index('"""', 3) + 3:]  # the runtime's own docstring stays in its file
    header = (f'"""Float64 reference of {title}: its fused TIR PrimFunc, every value in float64, '
              f'with a running error bound\n(builders/tvm_models/reference_runtime.py)."""\n')
    return header + f"PROGRAM = {json.dumps(json.dumps(program, separators=(',', ':')))}\n" + runtime


_MODULES: dict = {}


def reference_module(source: str):
    """The module of a reference source, made once per text."""
    module = _MODULES.get(source)
    if module is None:
        module = types.ModuleType("reference")
        exec(compile(source, "<tvm-models reference>", "exec"), module.__dict__)
        _MODULES.clear() if len(_MODULES) > 64 else None
        _MODULES[source] = module
    return module


def evaluate_program(program: dict, inputs: dict, errors: bool = False) -> dict:
    """{output: float64 array} of ``program`` on ``inputs`` ({buffer: array}); with
    ``errors``, {output: (value, E)}."""
    module = reference_module(reference_source(program, "a task"))
    outputs, _ = module._run(inputs, errors)
    if errors:
        return {name: (value.v.double().numpy(), module.torch.broadcast_to(value.e, value.v.shape).numpy())
                for name, value in outputs.items()}
    return {name: value.v.double().numpy() for name, value in outputs.items()}
