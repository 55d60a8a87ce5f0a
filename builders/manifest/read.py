"""Reading a manifest of the ``ptx`` source: a JSON or YAML file naming one problem and the
PTX or CUDA C files that claim to compute it, each with its launch sequence.

``load_manifest(path)`` reads and checks the whole manifest up front; any mistake raises
``ManifestError`` with one line naming the file and the field path, e.g.
``manifest.yaml: members[2].launches[0].grid: must be 1 to 3 positive ints, got [0]``.
``read_problem`` reads a problem mapping the same way (the triton-dump and triton-jit
sources read theirs with it). The format is documented in docs/manifest.md.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from dataset_spec.errors import PtxdsError
from dataset_spec.documents import DocumentError, parse_document
from dataset_spec.model import SCALAR_DTYPES, VERIFY_STATUSES, Arg, Buffer, Launch, Patch, Problem, SpecError
from dataset_spec.ops import check_problem, get_op

SOURCE_NAME = "ptx"
# What the verifier is expected to report for a member; "passed_nondeterministic" means
# passed with deterministic=false.
EXPECTATIONS = tuple(VERIFY_STATUSES) + ("passed_nondeterministic",)
# Stands in for an omitted launch entry until the member's PTX names its only entry.
ONLY_ENTRY = "<only entry>"

TOP_FIELDS = ("problem", "members")
PROBLEM_FIELDS = ("problem_id", "op", "buffers", "params", "tolerance", "trial_kinds")
BUFFER_FIELDS = ("name", "dtype", "shape", "role", "init")
MEMBER_FIELDS = ("name", "ptx", "cuda", "arch", "variant", "expect", "launches", "scratch",
                 "nvcc_flags", "include_dirs")
LAUNCH_FIELDS = ("entry", "grid", "block", "cluster", "dynamic_smem", "args")
PATCH_FIELDS = ("offset", "buffer", "addend")


class ManifestError(PtxdsError, ValueError):
    """A manifest is invalid; the one-line message names the file and the field path."""


class _FieldError(Exception):
    """Raised while checking one field; ``load_manifest`` adds the file name."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")


@dataclass
class Member:
    """One kernel program of the group: a PTX file or a CUDA C file and its launches.

    ``launches`` may hold ``ONLY_ENTRY`` as entry until the PTX is known (CUDA members
    resolve it after compiling). ``ptx`` is the file's text for PTX members.
    """
    index: int
    name: str
    kind: str  # "ptx" or "cuda"
    source_file: Path  # absolute
    source_as_written: str
    source_sha256: str
    launches: list
    archs: Optional[list] = None  # restriction; None means every requested arch
    variant: dict = field(default_factory=dict)
    scratch: list = field(default_factory=list)
    nvcc_flags: list = field(default_factory=list)
    include_dirs: list = field(default_factory=list)
    ptx: str = ""
    fingerprint: str = ""  # hash of the member's manifest entry and source; part of the build key

    @property
    def field_path(self) -> str:
        return f"members[{self.index}]"


@dataclass
class Manifest:
    """A loaded, checked manifest."""
    path: Path  # absolute
    sha256: str
    problem: Problem
    members: list

    @property
    def group_id(self) -> str:
        return f"{SOURCE_NAME}/{self.problem.problem_id}"

    def member(self, name: str) -> Member:
        for m in self.members:
            if m.name == name:
                return m
        raise KeyError(name)


# ----------------------------------------------------------------------------- loading

def load_manifest(path) -> Manifest:
    """Read, check and resolve a manifest; raises ManifestError naming the bad field."""
    shown = str(path)  # the path as the user gave it, so the message points where they look
    path = Path(path).resolve()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ManifestError(f"{shown}: cannot read the manifest: {exc.strerror}") from None
    try:
        data = _parse_document(raw.decode(), path.suffix.lower())
        problem = _read_problem(data, path.parent)
        members = _read_members(data, problem, path.parent)
    except _FieldError as exc:
        raise ManifestError(f"{shown}: {exc}") from None
    return Manifest(path=path, sha256=hashlib.sha256(raw).hexdigest(), problem=problem,
                    members=members)


@functools.lru_cache(maxsize=16)
def _load_cached(path: str, mtime_ns: int) -> Manifest:
    return load_manifest(path)


def _parse_document(text: str, suffix: str) -> dict:
    if suffix in (".yaml", ".yml", ".json"):
        try:
            data = parse_document(text, "", suffix)
        except DocumentError as exc:
            raise _FieldError("<document>", f"line {exc.line}, column {exc.column}: {exc.what}") from None
    else:
        raise _FieldError("<document>", f"manifest must end in .json, .yaml or .yml, got {suffix!r}")
    _expect_mapping(data, "<document>", TOP_FIELDS, required=TOP_FIELDS)
    return data


def _expect_mapping(value: Any, path: str, allowed: tuple, required: tuple = ()) -> dict:
    """Check ``value`` is a mapping with only ``allowed`` keys (catches typos early)."""
    if not isinstance(value, dict):
        raise _FieldError(path, f"must be a mapping, got {_show(value)}")
    for key in value:
        if key not in allowed:
            raise _FieldError(_join(path, str(key)), f"unknown field; expected one of {', '.join(allowed)}")
    for key in required:
        if key not in value:
            raise _FieldError(_join(path, key), "is required")
    return value


def _join(path: str, key: str) -> str:
    return key if path == "<document>" else f"{path}.{key}"


def _show(value: Any) -> str:
    return json.dumps(value, default=str) if not isinstance(value, str) else repr(value)


def _expect_list(value: Any, path: str, allow_empty: bool = False) -> list:
    if not isinstance(value, list) or (not value and not allow_empty):
        raise _FieldError(path, f"must be a {'' if allow_empty else 'non-empty '}list, got {_show(value)}")
    return value


def _expect_str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise _FieldError(path, f"must be a non-empty string, got {_show(value)}")
    return value


# The data model's SpecError messages start with a subject ("launch k: ", "buffer x: ",
# "scalar arg: ", "distribution.") and often the field name; the manifest's field path
# replaces both, so the user sees the model's wording exactly once.
_SUBJECT = re.compile(r"^(?:(?:launch|buffer|problem) [^:]*: |scalar arg: |"
                      r"(?:buffer|distribution|arg|problem)\.)")


def _from_spec_error(path: str, exc: SpecError, fields: tuple, renames: Optional[dict] = None) -> _FieldError:
    message = _SUBJECT.sub("", str(exc), count=1)
    for name in fields:
        if message.startswith(name + " "):
            key = (renames or {}).get(name, name)
            return _FieldError(_join(path, key), message[len(name) + 1:])
    return _FieldError(path, message)


# ----------------------------------------------------------------------------- problem

def _read_problem(data: dict, folder: Path) -> Problem:
    spec = _expect_mapping(data["problem"], "problem", PROBLEM_FIELDS,
                           required=("problem_id", "op", "buffers"))
    _expect_str(spec["problem_id"], "problem.problem_id")
    op = _expect_str(spec["op"], "problem.op")
    try:
        get_op(op)
    except SpecError as exc:
        raise _FieldError("problem.op", str(exc)) from None
    buffers = [_read_buffer(b, f"problem.buffers[{i}]", default_role="in")
               for i, b in enumerate(_expect_list(spec["buffers"], "problem.buffers"))]
    _check_same_shapes(op, buffers)
    params = dict(spec.get("params") or {})
    if op == "custom":
        params = _resolve_reference(params, folder, buffers)
    elif params.get("derived_inputs"):
        raise _FieldError("problem.params.derived_inputs", f"only op custom makes inputs from a function of its "
                          f"reference module; op {op} draws its own")
    tolerance = spec.get("tolerance") or {}
    _expect_mapping(tolerance, "problem.tolerance", ("atol", "rtol"))
    for key, value in tolerance.items():
        if not isinstance(value, (int, float)) or value < 0:
            raise _FieldError(f"problem.tolerance.{key}", f"must be a number >= 0, got {_show(value)}")
    kwargs = dict(problem_id=spec["problem_id"], op=op, buffers=buffers, params=params,
                  tolerance=dict(tolerance))
    if "trial_kinds" in spec:
        kwargs["trial_kinds"] = _expect_list(spec["trial_kinds"], "problem.trial_kinds")
    try:
        problem = Problem(**kwargs)
    except SpecError as exc:  # id and op were checked above: what is left is about buffers
        raise _FieldError("problem.buffers", _SUBJECT.sub("", str(exc), count=1)) from None
    try:  # every declared output has a reference; params.output_roundings is a count
        check_problem(problem)
    except SpecError as exc:
        raise _FieldError("problem", _SUBJECT.sub("", str(exc), count=1)) from None
    return problem


def read_problem(data: dict, folder) -> Problem:
    """``data["problem"]`` checked and built as a manifest's problem is, for other files that
    declare one (a triton-jit call description); raises ``ManifestError`` whose one line starts
    with the field path (``problem.buffers[1].dtype: ...``). A custom op's reference module is
    looked for in ``folder``."""
    try:
        return _read_problem(data, Path(folder))
    except _FieldError as exc:
        raise ManifestError(str(exc)) from None


def _read_shape(value: Any, path: str) -> list:
    """A size or a list of sizes, each a positive integer: a quoted number or a float is
    refused, not split into digits or truncated."""
    dims = value if isinstance(value, list) else [value]
    for dim in dims:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            hint = "; write the number without quotes" if isinstance(dim, str) and dim.strip().isdigit() else ""
            raise _FieldError(path, f"must be a positive integer or a list of them, got {_show(value)}{hint}")
    if not dims:
        raise _FieldError(path, "must be a positive integer or a non-empty list of them, got []")
    return list(dims)


# Built-in elementwise ops compute out[i] from x[i] (and y[i]): every buffer has one shape.
SAME_SHAPE_OPS = ("vector_add", "square")


def _check_same_shapes(op: str, buffers: list) -> None:
    if op not in SAME_SHAPE_OPS or not buffers:
        return
    first = buffers[0]
    for index, buffer in enumerate(buffers[1:], start=1):
        if tuple(buffer.shape) != tuple(first.shape):
            raise _FieldError(f"problem.buffers[{index}].shape",
                              f"op {op} is elementwise, so every buffer has {first.name}'s shape "
                              f"{list(first.shape)}; {buffer.name} has {list(buffer.shape)}")


def _read_buffer(value: Any, path: str, default_role: str) -> Buffer:
    spec = _expect_mapping(value, path, BUFFER_FIELDS, required=("name", "dtype", "shape"))
    spec = dict(spec)
    spec.setdefault("role", default_role)
    spec["shape"] = _read_shape(spec["shape"], f"{path}.shape")
    if "init" in spec and spec["init"] is not None:
        spec["init"] = _read_init(spec["init"], f"{path}.init")
    try:
        return Buffer(**spec)
    except SpecError as exc:
        raise _from_spec_error(path, exc, BUFFER_FIELDS + ("kind",),
                               {"kind": "init.kind"}) from None


def _read_init(value: Any, path: str) -> dict:
    """``{kind: normal, mean: 0, std: 1}`` or ``{kind: normal, params: {...}}``."""
    if isinstance(value, str):
        return {"kind": value, "params": {}}
    if not isinstance(value, dict) or "kind" not in value:
        raise _FieldError(path, f"must be a distribution kind or a mapping with kind, got {_show(value)}")
    params = dict(value.get("params") or {})
    params.update({k: v for k, v in value.items() if k not in ("kind", "params")})
    return {"kind": value["kind"], "params": params}


def _resolve_reference(params: dict, folder: Path, buffers: list = ()) -> dict:
    """Check ``params.reference`` = "module:function" and make the module reachable at
    verify time, on any machine.

    A single-file module next to the manifest is shipped inside every row
    (``params.reference_source``, its text), so the dataset needs no file outside itself.
    A package next to the manifest is found through ``params.reference_path`` (an absolute
    folder: only the machine that built it has it). A module already importable
    (installed, or on PYTHONPATH) needs neither.
    """
    reference = params.get("reference")
    if not isinstance(reference, str) or not re.fullmatch(r"[\w.]+:\w+", reference):
        raise _FieldError("problem.params.reference", "op custom needs 'module:function', "
                          f"got {_show(reference)}")
    module_name, function_name = reference.split(":")
    search = Path(params["reference_path"]) if params.get("reference_path") else folder
    search = (folder / search).resolve()
    relative = Path(*module_name.split("."))
    candidates = [search / relative.with_suffix(".py"), search / relative / "__init__.py"]
    module_file = next((c for c in candidates if c.is_file()), None)
    if module_file is not None:
        if module_file.name == "__init__.py":
            params["reference_path"] = str(search)
        else:
            params.pop("reference_path", None)
            params["reference_source"] = module_file.read_text()
        module_spec = importlib.util.spec_from_file_location(module_name, module_file)
    else:
        params.pop("reference_path", None)
        module_spec = importlib.util.find_spec(module_name.split(".")[0]) and \
            importlib.util.find_spec(module_name)
        if module_spec is None:
            raise _FieldError("problem.params.reference", f"module {module_name!r} is neither "
                              f"next to the manifest ({relative}.py) nor importable")
    # Import in isolation (not registered in sys.modules) only to catch a misspelt function now
    # rather than on the GPU machine.
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # user code: any failure is a manifest error
        raise _FieldError("problem.params.reference",
                          f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    if not callable(getattr(module, function_name, None)):
        raise _FieldError("problem.params.reference", f"module {module_name!r} has no function {function_name!r}")
    _check_derived_inputs(params.get("derived_inputs"), module, module_name, buffers)
    return params


def _check_derived_inputs(spec: Any, module, module_name: str, buffers: list) -> None:
    """params.derived_inputs: each key an input buffer, each value a function of the
    reference module that is declared after at least one buffer it can be made from."""
    if spec is None:
        return
    path = "problem.params.derived_inputs"
    if not isinstance(spec, dict) or not spec:
        raise _FieldError(path, f"must map input buffers to functions of {module_name!r}, got {_show(spec)}")
    names = [b.name for b in buffers]
    for name, function in spec.items():
        if name not in names:
            raise _FieldError(f"{path}.{name}", f"no buffer named {name!r}; known: {', '.join(names)}")
        buffer = buffers[names.index(name)]
        if buffer.role != "in":
            raise _FieldError(f"{path}.{name}", f"buffer {name} has role {buffer.role}; only an input (role in) "
                              f"is made from the others")
        if names.index(name) == 0:
            raise _FieldError(f"{path}.{name}", f"buffer {name} is declared first; declare it after the buffers "
                              f"it is made from")
        if not isinstance(function, str) or not callable(getattr(module, function, None)):
            raise _FieldError(f"{path}.{name}", f"module {module_name!r} has no function {_show(function)}")


# ----------------------------------------------------------------------------- members

def _read_members(data: dict, problem: Problem, folder: Path) -> list:
    members, seen = [], {}
    for index, value in enumerate(_expect_list(data["members"], "members")):
        member = _read_member(value, index, problem, folder)
        if member.name in seen:
            raise _FieldError(f"members[{index}].name",
                              f"duplicate member name {member.name!r} (also members[{seen[member.name]}])")
        seen[member.name] = index
        members.append(member)
    return members


def _read_member(value: Any, index: int, problem: Problem, folder: Path) -> Member:
    path = f"members[{index}]"
    spec = _expect_mapping(value, path, MEMBER_FIELDS, required=("name", "launches"))
    name = _expect_str(spec["name"], f"{path}.name")
    kinds = [k for k in ("ptx", "cuda") if k in spec]
    if len(kinds) != 1:
        raise _FieldError(path, f"needs exactly one of ptx or cuda (a file path), got "
                          f"{' and '.join(kinds) or 'neither'}")
    kind = kinds[0]
    written = _expect_str(spec[kind], f"{path}.{kind}")
    source_file = (folder / written).resolve()
    if not source_file.is_file():
        raise _FieldError(f"{path}.{kind}", f"no such file {written!r} (relative to the manifest's folder)")
    source_bytes = source_file.read_bytes()

    variant = spec.get("variant") or {}
    if not isinstance(variant, dict):
        raise _FieldError(f"{path}.variant", f"must be a mapping, got {_show(variant)}")
    variant = dict(variant)
    if "expect" in spec:
        if spec["expect"] not in EXPECTATIONS:
            raise _FieldError(f"{path}.expect", f"must be one of {', '.join(EXPECTATIONS)}, "
                              f"got {_show(spec['expect'])}")
        variant["expect"] = spec["expect"]

    archs = spec.get("arch")
    if archs is not None:
        archs = [archs] if isinstance(archs, str) else archs
        if not isinstance(archs, list) or not archs or not all(
                isinstance(a, str) and re.fullmatch(r"sm_\d+[af]?", a) for a in archs):
            raise _FieldError(f"{path}.arch", f"must be an arch like sm_90a or a list of them, got {_show(spec['arch'])}")

    if kind == "ptx" and ("nvcc_flags" in spec or "include_dirs" in spec):
        key = "nvcc_flags" if "nvcc_flags" in spec else "include_dirs"
        raise _FieldError(f"{path}.{key}", "applies only to cuda members")
    flags = _string_list(spec.get("nvcc_flags", []), f"{path}.nvcc_flags")
    include_dirs = [str((folder / d).resolve())
                    for d in _string_list(spec.get("include_dirs", []), f"{path}.include_dirs")]

    scratch = [_read_buffer(b, f"{path}.scratch[{i}]", default_role="scratch")
               for i, b in enumerate(_expect_list(spec.get("scratch", []), f"{path}.scratch", allow_empty=True))]
    for i, buf in enumerate(scratch):
        if buf.role != "scratch":
            raise _FieldError(f"{path}.scratch[{i}].role", f"must be scratch, got {buf.role!r}")
        if buf.name in {b.name for b in problem.buffers}:
            raise _FieldError(f"{path}.scratch[{i}].name", f"{buf.name!r} is already a problem buffer")
    buffer_names = [b.name for b in problem.buffers] + [b.name for b in scratch]

    launches = [_read_launch(l, f"{path}.launches[{i}]", buffer_names)
                for i, l in enumerate(_expect_list(spec["launches"], f"{path}.launches"))]
    member = Member(
        index=index, name=name, kind=kind, source_file=source_file, source_as_written=written,
        source_sha256=hashlib.sha256(source_bytes).hexdigest(), launches=launches, archs=archs,
        variant=variant, scratch=scratch, nvcc_flags=flags, include_dirs=include_dirs)
    member.fingerprint = hashlib.sha256(
        json.dumps([spec, member.source_sha256, problem.digest()], sort_keys=True, default=str)
        .encode()).hexdigest()[:16]
    if kind == "ptx":
        member.ptx = source_bytes.decode(errors="replace")
        member.launches = resolve_launches(member, member.ptx)
    return member


def _string_list(value: Any, path: str) -> list:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _FieldError(path, f"must be a list of strings, got {_show(value)}")
    return list(value)


def _read_launch(value: Any, path: str, buffer_names: list) -> Launch:
    spec = _expect_mapping(value, path, LAUNCH_FIELDS, required=("grid", "block", "args"))
    entry = spec.get("entry")
    if entry is not None:
        _expect_str(entry, f"{path}.entry")
    args = [_read_arg(a, f"{path}.args[{i}]", buffer_names)
            for i, a in enumerate(_expect_list(spec["args"], f"{path}.args", allow_empty=True))]
    fields = {k: spec[k] for k in ("grid", "block", "cluster", "dynamic_smem") if k in spec}
    for key in ("grid", "block", "cluster"):
        if isinstance(fields.get(key), bool):  # a YAML `yes` is not a dimension
            raise _FieldError(f"{path}.{key}", f"must be 1 to 3 positive ints, got {_show(fields[key])}")
    if "dynamic_smem" in fields and (isinstance(fields["dynamic_smem"], bool)
                                     or not isinstance(fields["dynamic_smem"], int)):
        raise _FieldError(f"{path}.dynamic_smem", f"must be an int >= 0, got {_show(fields['dynamic_smem'])}")
    try:
        return Launch(entry=entry or ONLY_ENTRY, args=args, **fields)
    except SpecError as exc:
        raise _from_spec_error(path, exc, LAUNCH_FIELDS) from None


def _read_arg(value: Any, path: str, buffer_names: list) -> Arg:
    """One of ``{buffer: x}``, ``{scalar: s32, value: 1024}``, ``null`` or
    ``{blob: "0x..." or base64, patches: [{offset, buffer, addend}]}``."""
    if value is None or value == "null" or value == {"null": True}:
        return Arg.null()
    if not isinstance(value, dict):
        raise _FieldError(path, f"must be {{buffer: name}}, {{scalar: type, value: v}}, null or "
                          f"{{blob: bytes, patches: [...]}}, got {_show(value)}")
    if "buffer" in value:
        _expect_mapping(value, path, ("buffer",))
        return Arg.buf(_known_buffer(value["buffer"], f"{path}.buffer", buffer_names))
    if "scalar" in value:
        _expect_mapping(value, path, ("scalar", "value"), required=("value",))
        dtype, scalar = value["scalar"], value["value"]
        if dtype not in SCALAR_DTYPES:
            raise _FieldError(f"{path}.scalar", f"must be one of {', '.join(sorted(SCALAR_DTYPES))}, got {_show(dtype)}")
        if isinstance(scalar, bool) or not isinstance(scalar, (int, float, str)):
            raise _FieldError(f"{path}.value", f"must be a number, got {_show(scalar)}")
        _check_scalar_value(dtype, scalar, f"{path}.value")
        return Arg.scalar(dtype, scalar)
    if "blob" in value:
        _expect_mapping(value, path, ("blob", "patches"))
        blob = _decode_blob(value["blob"], f"{path}.blob")
        patches = []
        for i, p in enumerate(_expect_list(value.get("patches", []), f"{path}.patches", allow_empty=True)):
            ppath = f"{path}.patches[{i}]"
            _expect_mapping(p, ppath, PATCH_FIELDS, required=("offset", "buffer"))
            _known_buffer(p["buffer"], f"{ppath}.buffer", buffer_names)
            for key in ("offset", "addend"):
                if key in p and (isinstance(p[key], bool) or not isinstance(p[key], int)):
                    raise _FieldError(f"{ppath}.{key}", f"must be an int, got {_show(p[key])}")
            if not 0 <= p["offset"] <= len(blob) - 8:
                raise _FieldError(f"{ppath}.offset", f"{p['offset']} leaves no room for an 8-byte "
                                  f"pointer in the {len(blob)}-byte blob")
            patches.append(Patch(**p))
        return Arg("blob", blob=blob, patches=patches)
    raise _FieldError(path, f"needs one of buffer, scalar, blob (or null), got {_show(value)}")


def _known_buffer(name: Any, path: str, buffer_names: list) -> str:
    if name not in buffer_names:
        raise _FieldError(path, f"no buffer named {_show(name)}; known: {', '.join(buffer_names)}")
    return name


def _check_scalar_value(dtype: str, value, path: str) -> None:
    """Integers must fit their type, so a value never wraps silently on the GPU."""
    if dtype[0] not in "usb":
        try:
            float(str(value))
        except ValueError:
            raise _FieldError(path, f"must be a number for {dtype}, got {_show(value)}") from None
        return
    try:
        number = int(str(value), 0)
    except ValueError:
        raise _FieldError(path, f"must be an integer for {dtype}, got {_show(value)}") from None
    bits = SCALAR_DTYPES[dtype] * 8
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype[0] == "s" else (0, (1 << bits) - 1)
    if dtype[0] == "b":
        low = -(1 << (bits - 1))
    if not low <= number <= high:
        raise _FieldError(path, f"{number} does not fit {dtype}")


def _decode_blob(value: Any, path: str) -> bytes:
    """Hex when it starts with 0x, base64 otherwise."""
    if not isinstance(value, str) or not value:
        raise _FieldError(path, f"must be a hex (0x...) or base64 string, got {_show(value)}")
    try:
        if value.lower().startswith("0x"):
            blob = bytes.fromhex(value[2:].replace("_", ""))
        else:
            blob = base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise _FieldError(path, f"is not valid {'hex' if value.lower().startswith('0x') else 'base64'}: {exc}") from None
    if not blob:
        raise _FieldError(path, "must not be empty")
    return blob


# ----------------------------------------------------------------------------- PTX checks

def resolve_launches(member: Member, ptx: str) -> list:
    """The member's launches with entries resolved against ``ptx`` and args checked against
    each entry's params (count, and bytes per param). Raises _FieldError with the field path."""
    from ptx_tools import PtxError, parse_ptx
    try:
        module = parse_ptx(ptx)
    except PtxError as exc:
        raise _FieldError(f"{member.field_path}.{member.kind}", f"{member.source_as_written} {exc}") from None
    entries = {f.name: f for f in module.entries}
    resolved = []
    for i, launch in enumerate(member.launches):
        lpath = f"{member.field_path}.launches[{i}]"
        name = _entry_name(launch.entry, entries, lpath, member.source_as_written)
        params = entries[name].params
        if len(launch.args) != len(params):
            raise _FieldError(f"{lpath}.args", f"{len(launch.args)} args but entry {name} has "
                              f"{len(params)} params ({', '.join(f'.{p.type} {p.name}' for p in params)})")
        for j, (arg, param) in enumerate(zip(launch.args, params)):
            if arg.size != param.size:
                raise _FieldError(f"{lpath}.args[{j}]", f"{_describe(arg)} is {arg.size} bytes but "
                                  f"param {param.name} (.{param.type}{_array(param)}) is {param.size} bytes")
        resolved.append(dataclasses.replace(launch, entry=name))
    return resolved


def _entry_name(wanted: str, entries: dict, path: str, file_name: str) -> str:
    known = ", ".join(entries) or "none"
    if wanted == ONLY_ENTRY:
        if len(entries) != 1:
            raise _FieldError(f"{path}.entry", f"is required: {file_name} has {len(entries)} "
                              f"entries ({known})")
        return next(iter(entries))
    if wanted in entries:
        return wanted
    # A C++ kernel keeps its source name inside the mangled one: _Z<length><name>...
    mangled = [e for e in entries if e.startswith(f"_Z{len(wanted)}{wanted}")]
    if len(mangled) == 1:
        return mangled[0]
    raise _FieldError(f"{path}.entry", f"no entry {wanted!r} in {file_name}; entries: {known}")


def _describe(arg: Arg) -> str:
    if arg.kind == "buffer":
        return f"buffer {arg.buffer} (a pointer)"
    if arg.kind == "scalar":
        return f"scalar {arg.dtype}"
    return "null pointer" if arg.kind == "null" else "blob"


def _array(param) -> str:
    return f"[{param.array_len}]" if param.array_len else ""
