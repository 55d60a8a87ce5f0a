"""Messages of the triton-dump source in the user's terms: a kernel's parameters by the names
its source gives them, which of them Triton specialised away (an int equal to 1 or None, and
the tl.constexprs), and the problem spec entry to write for it.

The runtime parameters and their names come from the TTIR's ``tt.func`` (``%Y_ptr:
!tt.ptr<bf16>``); the full parameter list from the kernel's own ``def``, found through the
TTIR's ``#loc = loc("<file>":<line>:0)`` when that file is on this machine."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

FUNC_LOC = re.compile(r'^#loc\s*=\s*loc\("(?P<file>[^"]+)":(?P<line>\d+):\d+\)', re.M)
DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64", "i32": "int32",
          "i64": "int64", "i8": "int8", "u8": "uint8", "i16": "int16", "fp8e4nv": "float8_e4m3",
          "fp8e5": "float8_e5m2"}


def source_params(ttir: str) -> tuple:
    """(every parameter of the kernel's def as (name, is tl.constexpr), where it was read) or
    ([], why not) when the source is not readable here."""
    match = FUNC_LOC.search(ttir)
    if not match:
        return [], "the TTIR names no source file"
    path, line = Path(match["file"]), int(match["line"])
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return [], f"its source {path} is not readable on this machine"
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (node.lineno == line or any(
                getattr(d, "lineno", -1) == line for d in node.decorator_list)):
            args = node.args.posonlyargs + node.args.args
            return [(a.arg, "constexpr" in ast.unparse(a.annotation) if a.annotation else False) for a in args], str(path)
    return [], f"no def at {path}:{line}"


def dropped_params(variant: dict, ttir: str) -> tuple:
    """(runtime parameters Triton specialised away, constexpr names, note) for a variant."""
    declared, where = source_params(ttir)
    if not declared:
        return [], [], where
    present = {name for name, _, _ in variant["params"]}
    constexprs = [name for name, is_constexpr in declared if is_constexpr]
    dropped = [name for name, is_constexpr in declared if not is_constexpr and name not in present]
    return dropped, constexprs, ""


def describe_params(variant: dict, ttir: str) -> str:
    """'Y_ptr (*bf16), Y_row_stride (i32), ...; specialised away: ...' for a message."""
    runtime = ", ".join(f"{name} ({kind})" for name, kind, _ in variant["params"]) or "none"
    dropped, constexprs, note = dropped_params(variant, ttir)
    text = f"its runtime parameters are {runtime}"
    if dropped:
        text += (f"; Triton compiled away {', '.join(dropped)} (each an int equal to 1 or None in the call "
                 f"that compiled it: leave them out of args)")
    if constexprs:
        text += f"; tl.constexprs (not in args): {', '.join(constexprs)}"
    if note:
        text += f" (names of parameters Triton compiled away unknown: {note})"
    return text


def entry_skeleton(variant: dict) -> str:
    """The problem spec entry to fill in, as one line of YAML flow style."""
    pointers = [(n, k) for n, k, _ in variant["params"] if k.startswith("*")]
    scalars = [n for n, k, _ in variant["params"] if not k.startswith("*")]
    buffers = ", ".join(f"{{name: {n}, dtype: {DTYPES.get(k[1:], k[1:])}, shape: [SIZE], role: in|out}}"
                        for n, k in pointers)
    entry = (f"{{kernel: {variant['name']}, signature: {json.dumps(variant['signature'])}, "
             f"problem: {{problem_id: NAME, op: OP, buffers: [{buffers}]}}, "
             f"args: [{', '.join(n for n, _, _ in variant['params'])}]"
             + (f", vars: {{{', '.join(f'{n}: VALUE' for n in scalars)}}}" if scalars else "")
             + ", grid: [GRID], fits: [CONDITION]}")
    return entry


def no_problem_message(variant: dict, ttir: str, why: str) -> str:
    return (f"kernel {variant['name']} has no problem: {why}; {describe_params(variant, ttir)}; "
            f"add to the problem spec file (--problem FILE, docs/triton-dump.md) an entry like "
            f"{entry_skeleton(variant)}")
