"""The triton-jit call description: one YAML or JSON file naming a ``@triton.jit`` kernel, the
problem it computes (checked as a manifest's problem is), its arguments by the kernel's own
parameter names, the grid, and the configs: the kernel's ``@triton.autotune`` list, or the
file's own ``configs`` (which replace it when given). docs/triton-jit.md shows the format.

``load_description(path)`` reads and checks the whole file and imports the kernel; every
mistake is one ``CallDescriptionError`` line naming the file and the field, e.g.
``call.yaml: args.n_col: rms_norm_fwd has no parameter n_col; its parameters are ...``.
Expressions (grid, scalar arguments) are evaluated without ``eval``
(``builders.triton.expressions``) over ``vars``, numeric problem params, the config's
constexprs and ``num_warps``, ``num_stages``, ``num_ctas``.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders.manifest import ManifestError, read_problem
from builders.triton.expressions import evaluate
from builders.triton_jit.kernel_ref import KernelImportError, KernelRef, load_kernel
from builders.triton_jit.specialize import DTYPE_PREFIX, POINTEE, Value, triton_dtype
from dataset_spec.documents import DocumentError, parse_document
from dataset_spec.errors import PtxdsError
from dataset_spec.model import Problem, SpecError

TOP_FIELDS = ("kernel", "problem", "vars", "args", "constexprs", "grid", "configs", "num_warps",
              "num_stages", "num_ctas")
REQUIRED = ("kernel", "problem", "args", "grid")
# Compile options a config may set besides the kernel's constexprs (triton.Config's)
CONFIG_OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}


class CallDescriptionError(PtxdsError, ValueError):
    """A call description is invalid; the one-line message names the file and the field."""


class _Field(Exception):
    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")


@dataclass
class Config:
    """One member's compile settings: the constexprs it sets and triton.Config's options."""
    kwargs: dict
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: Any = None

    def options(self) -> dict:
        return {k: getattr(self, k) for k in CONFIG_OPTIONS if getattr(self, k) is not None}


@dataclass
class CallDescription:
    """A loaded, checked call description (``kernel`` is imported, not picklable: workers load
    the file again)."""
    path: Path
    sha256: str
    kernel_spec: str
    kernel: KernelRef
    problem: Problem
    vars: dict
    args: dict              # runtime parameter name -> Value (a number may still be an expression)
    constexprs: dict
    grid: list
    configs: list           # Config
    configs_from: str       # "autotune" or "file"

    @property
    def group_id(self) -> str:
        return f"triton-jit/{self.problem.problem_id}"

    def scope(self, config: Config, constexprs: dict) -> dict:
        """Names an expression of this member may use."""
        scope = {k: v for k, v in self.problem.params.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        scope.update(self.vars)
        scope.update({k: v for k, v in constexprs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        scope.update(num_warps=config.num_warps, num_stages=config.num_stages, num_ctas=config.num_ctas)
        return scope


def load_description(path) -> CallDescription:
    """Read, check and resolve a call description; raises CallDescriptionError naming the field."""
    shown, path = str(path), Path(path).resolve()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CallDescriptionError(f"{shown}: cannot read the call description: {exc.strerror}") from None
    try:
        return _read(raw, path)
    except _Field as exc:
        raise CallDescriptionError(f"{shown}: {exc}") from None
    except ManifestError as exc:  # the problem, checked by the manifest's rules
        raise CallDescriptionError(f"{shown}: {exc}") from None


@functools.lru_cache(maxsize=16)
def cached_description(path: str, mtime_ns: int) -> CallDescription:
    return load_description(path)


def _read(raw: bytes, path: Path) -> CallDescription:
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise _Field("<document>", f"a call description ends in .yaml, .yml or .json, got {path.suffix!r}")
    try:
        data = parse_document(raw.decode(), "", path.suffix)
    except DocumentError as exc:
        raise _Field("<document>", f"line {exc.line}, column {exc.column}: {exc.what}") from None
    _mapping(data, "<document>", TOP_FIELDS)
    for key in REQUIRED:
        if key not in data:
            raise _Field(key, "is required")
    if not isinstance(data["kernel"], str):
        raise _Field("kernel", f"must be module:function or file.py:function, got {data['kernel']!r}")
    try:
        kernel = load_kernel(data["kernel"], path.parent)
    except KernelImportError as exc:
        raise _Field("kernel", str(exc)) from None
    problem = read_problem(data, path.parent)
    variables = _mapping(data.get("vars") or {}, "vars")
    for name, value in variables.items():
        if not _is_number(value):
            raise _Field(f"vars.{name}", f"must be a number, got {value!r}")
    args = _read_args(_mapping(data["args"], "args"), kernel, problem)
    constexprs = _read_constexprs(_mapping(data.get("constexprs") or {}, "constexprs"), kernel)
    defaults = {k: data.get(k, v) for k, v in CONFIG_OPTIONS.items() if k != "maxnreg"}
    for key, value in defaults.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise _Field(key, f"must be a positive integer, got {value!r}")
    if "configs" in data:
        configs = [_read_config(c, f"configs[{i}]", kernel, defaults)
                   for i, c in enumerate(_list(data["configs"], "configs"))]
        configs_from = "file"
    elif kernel.autotune:
        configs = [Config(dict(c.kwargs), c.num_warps, c.num_stages, c.num_ctas, c.maxnreg) for c in kernel.autotune]
        configs_from = "autotune"
    else:
        configs, configs_from = [Config({}, **defaults)], "file"
    grid = _list(data["grid"] if isinstance(data["grid"], list) else [data["grid"]], "grid")
    if len(grid) > 3:
        raise _Field("grid", f"has at most 3 dimensions, got {len(grid)}")
    description = CallDescription(path, hashlib.sha256(raw).hexdigest(), data["kernel"], kernel, problem,
                                  variables, args, constexprs, grid, configs, configs_from)
    for index, config in enumerate(configs):  # every member resolves now, not in a worker
        member_constexprs(description, config, f"configs[{index}]" if configs_from == "file" else
                          f"the kernel's autotune config {index}")
        resolve_member(description, config)
    return description


def _read_args(spec: dict, kernel: KernelRef, problem: Problem) -> dict:
    buffers = {b.name: b for b in problem.buffers}
    names = [p.name for p in kernel.params]
    args = {}
    for name, value in spec.items():
        param = kernel.param(name)
        if param is None:
            raise _Field(f"args.{name}", f"{kernel.name} has no parameter {name!r}; its parameters are {', '.join(names)}")
        if param.constexpr:
            raise _Field(f"args.{name}", "is a tl.constexpr parameter; give it under constexprs or configs")
        if isinstance(value, bool):
            raise _Field(f"args.{name}", "a bool argument; Triton passes it as u1, which this source does not "
                                         "launch: give 0 or 1, or make the parameter a tl.constexpr")
        if value is None:
            args[name] = Value("none")
        elif isinstance(value, str) and value in buffers:
            if buffers[value].dtype not in POINTEE:
                raise _Field(f"args.{name}", f"buffer {value}'s dtype {buffers[value].dtype} has no Triton pointer type")
            args[name] = Value("buffer", value, buffers[value].dtype)
        elif _is_number(value) or isinstance(value, str):
            args[name] = Value("number", value)
        else:
            raise _Field(f"args.{name}", f"must be a problem buffer's name, null, a number or an expression, got {value!r}")
    for param in kernel.params:
        if param.constexpr or param.name in args:
            continue
        if not param.has_default:
            raise _Field("args", f"no value for {param.name} (parameter {param.index} of {kernel.name}); "
                                 f"give every parameter that is not a tl.constexpr")
        default = param.default
        args[param.name] = Value("none") if default is None else Value("number", default)
    return args


def _read_constexprs(spec: dict, kernel: KernelRef) -> dict:
    for name in spec:
        param = kernel.param(name)
        if param is None:
            raise _Field(f"constexprs.{name}", f"{kernel.name} has no parameter {name!r}")
        if not param.constexpr:
            raise _Field(f"constexprs.{name}", "is a runtime parameter; give it under args")
        value = spec[name]
        if isinstance(value, str) and value.startswith(DTYPE_PREFIX) and triton_dtype(value) is None:
            raise _Field(f"constexprs.{name}", f"{value!r} names no triton.language dtype (write e.g. tl.bfloat16)")
    return dict(spec)


def _read_config(value: Any, path: str, kernel: KernelRef, defaults: dict) -> Config:
    spec = _mapping(value, path)
    config = Config({}, **defaults)
    for key, item in spec.items():
        if key in CONFIG_OPTIONS:
            if not isinstance(item, int) or isinstance(item, bool) or item < 1:
                raise _Field(f"{path}.{key}", f"must be a positive integer, got {item!r}")
            setattr(config, key, item)
            continue
        param = kernel.param(key)
        if param is None or not param.constexpr:
            raise _Field(f"{path}.{key}", f"is neither a tl.constexpr parameter of {kernel.name} nor one of "
                                          f"{', '.join(CONFIG_OPTIONS)}")
        config.kwargs[key] = item
    return config


def member_constexprs(description: CallDescription, config: Config, where: str = "config") -> dict:
    """Every tl.constexpr of the kernel for one config: the config's, the file's
    ``constexprs``, the kernel's @triton.heuristics, the parameter's default."""
    kernel, values = description.kernel, {}
    for param in kernel.params:
        if not param.constexpr:
            continue
        if param.name in config.kwargs:
            values[param.name] = config.kwargs[param.name]
        elif param.name in description.constexprs:
            values[param.name] = description.constexprs[param.name]
        elif param.name in kernel.heuristics:
            values[param.name] = _heuristic(description, config, param.name, values)
        elif param.has_default:
            values[param.name] = param.default
        else:
            raise _Field(f"constexprs.{param.name}", f"no value in {where}: give it under constexprs or configs")
    return values


def _heuristic(description: CallDescription, config: Config, name: str, known: dict):
    """A @triton.heuristics value, computed as Triton does from the call's arguments (buffers
    as the problem's Buffer, so ``args['x'].shape`` works)."""
    call = {n: description.problem.buffer(v.value) if v.kind == "buffer" else v.value
            for n, v in description.args.items()}
    for values in (config.kwargs, known, description.constexprs):  # a name may be in several
        call.update(values)
    try:
        value = description.kernel.heuristics[name](call)
    except Exception as exc:  # user code
        raise _Field(f"constexprs.{name}", f"the kernel's @triton.heuristics for {name} failed "
                                           f"({type(exc).__name__}: {exc}); give {name} under constexprs") from None
    return value


def resolve_member(description: CallDescription, config: Config) -> tuple:
    """(constexprs, runtime args as Values with numbers evaluated, grid) of one member."""
    constexprs = member_constexprs(description, config)
    scope = description.scope(config, constexprs)
    args = {}
    for name, value in description.args.items():
        if value.kind == "number" and isinstance(value.value, str):
            args[name] = Value("number", _evaluate(value.value, scope, f"args.{name}"))
        else:
            args[name] = value
    grid = []
    for index, expr in enumerate(description.grid):
        size = _evaluate(expr, scope, f"grid[{index}]")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise _Field(f"grid[{index}]", f"{expr!r} gives {size!r}; a grid dimension is a positive integer")
        grid.append(size)
    return constexprs, args, grid


def _evaluate(expr, scope: dict, path: str):
    try:
        value = evaluate(expr, scope)
    except SpecError as exc:
        raise _Field(path, str(exc)) from None
    return int(value) if isinstance(value, float) and value.is_integer() and path.startswith("grid") else value


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _mapping(value: Any, path: str, allowed: tuple = ()) -> dict:
    if not isinstance(value, dict):
        raise _Field(path, f"must be a mapping, got {value!r}")
    for key in value:
        if allowed and key not in allowed:
            raise _Field(str(key) if path == "<document>" else f"{path}.{key}",
                         f"unknown field; expected one of {', '.join(allowed)}")
    return value


def _list(value: Any, path: str) -> list:
    if not isinstance(value, list) or not value:
        raise _Field(path, f"must be a non-empty list, got {value!r}")
    return value
