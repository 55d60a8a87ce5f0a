"""The ptxds data model: Problem, Buffer, Launch, KernelRecord, Pair, with JSON round-trip.

Every KernelRecord carries its Problem and its Launches, so a row can be run with nothing
but a CUDA driver. Dataclasses check values (never hardware) in ``__post_init__`` and raise
``SpecError`` naming the field and the bad value.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from .errors import PtxdsError
from .packed import PACKED_DTYPES, packed_nbytes


# 3: pairs.mutation; 4: kernels.trial_errors and witness, pairs.witness, equivalent null for
# surviving mutants; 5: kernels.sol_ratio and roofline_us (checked timing); 6: kernels.findings
# (every check's outcome, from which status is derived). Older shards read the new columns as null.
SCHEMA_VERSION = 6

DTYPES = {
    # name: (bytes per element, kind)
    "float16": (2, "f"), "bfloat16": (2, "f"), "float32": (4, "f"), "float64": (8, "f"),
    "float8_e4m3": (1, "f"), "float8_e5m2": (1, "f"),
    "int8": (1, "i"), "uint8": (1, "u"), "int16": (2, "i"), "uint16": (2, "u"), "int32": (4, "i"),
    "uint32": (4, "u"), "int64": (8, "i"), "uint64": (8, "u"),
}
# Sub-byte integers packed several to a byte (dataset_spec/packed.py): a buffer of one holds
# ceil(numel * bits / 8) bytes; ``dtype_kind`` gives their kind like DTYPES's.
BUFFER_DTYPES = tuple(DTYPES) + tuple(PACKED_DTYPES)


def dtype_kind(dtype: str) -> str:
    """'f', 'i' or 'u' for any buffer dtype, packed ones included."""
    if dtype in PACKED_DTYPES:
        return "i" if PACKED_DTYPES[dtype][1] else "u"
    return DTYPES[dtype][1]
SCALAR_DTYPES = {  # PTX-style scalar kernel parameter types and their byte size
    "u8": 1, "s8": 1, "u16": 2, "s16": 2, "u32": 4, "s32": 4, "u64": 8, "s64": 8,
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "b8": 1, "b16": 2, "b32": 4, "b64": 8,
}
ROLES = ("in", "out", "inout", "scratch")
ARG_KINDS = ("buffer", "scalar", "null", "blob")
BUILD_STATUSES = ("built", "build_failed", "no_problem", "not_applicable")
VERIFY_STATUSES = (
    "passed", "wrong_result", "unwritten_output", "modified_input", "jit_failed",
    "launch_failed", "crashed", "timeout", "disagrees", "trivial_reference", "out_of_bounds_write",
    # the output depends on bytes outside its buffers (guard contents that change between
    # runs, or a memory checker's invalid read)
    "out_of_bounds_read",
    # a data race: a racecheck hazard the group's other members lack, or outputs that differ
    # bitwise across scheduling perturbations of a kernel with no floating-point atomics
    "race_detected",
    # the row's problem differs from its group's: one problem per group, so it is not judged
    "problem_mismatch",
    # a mutant that passed and whose mutated instruction never ran on any trial (coverage
    # probe, verify/probes/coverage.py): equivalent for this problem
    "unexercised",
    # a timed launch's outputs differ from the checked run's on the same inputs: the kernel
    # computes while checked and not while timed (verify/timing/checked_timing.py); no time is kept
    "timing_mismatch",
    # the time is below the GPU's roofline for the work the problem needs (verify/timing/roofline.py)
    "faster_than_roofline",
    # outputs change when every buffer moves to fresh pages between runs: the kernel keeps an
    # address from an earlier launch
    "stale_binding",
    # the launches did not finish while part of the SMs were held by another kernel: they need
    # their blocks resident together without a cooperative launch (verify/device/residency.py)
    "residency_deadlock",
)
# Every trial kind the verifier knows (dataset_spec/trials.py plans them, verify/trials/inputs.py
# draws them), and the ones trials cycle through by default: normal and non-integer uniform
# draws, wide magnitudes with random sign, edge values, and each op's stress inputs
# (dataset_spec/stress.py: where its classic bugs live).
TRIAL_KINDS = ("normal", "uniform", "wide", "edge", "stress", "small", "large")
DEFAULT_TRIAL_KINDS = tuple(k for k in TRIAL_KINDS if k not in ("small", "large"))  # scaled draws: on request
# Device tables (dataset_spec/device_tables.py): contents the row itself defines, never drawn
# per trial. "values": integers stored in the row (problem shapes, strides); "addresses":
# the device address of a named buffer plus a byte offset per element (pointer arrays),
# written by the verifier after allocation, before each launch sequence.
TABLE_KINDS = ("values", "addresses")
DISTRIBUTION_KINDS = ("normal", "uniform", "randint", "zeros", "ones", "arange", "constant") + TABLE_KINDS
ADDRESS_DTYPES = ("uint64", "int64")


class SpecError(PtxdsError, ValueError):
    """A value in the data model is invalid; the message names the field and the value."""


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise SpecError(message)


def _dim3(value: Any, field_name: str) -> tuple[int, int, int]:
    if isinstance(value, int):
        value = (value,)
    try:
        dims = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise SpecError(f"{field_name} must be an int or up to 3 ints, got {value!r}") from None
    _check(1 <= len(dims) <= 3 and all(d >= 1 for d in dims),
           f"{field_name} must be 1 to 3 positive ints, got {value!r}")
    return dims + (1,) * (3 - len(dims))


@dataclass
class Distribution:
    """How the verifier draws a buffer's contents.

    kind: normal (mean, std), uniform (low, high), randint (low, high, exclusive high),
    zeros, ones, arange, constant (value). The verifier may swap the float kinds between
    trials (see ``Problem.trial_kinds``); non-float kinds are kept as given.
    Device tables (an input buffer of integers the row defines exactly, the same in every
    trial): ``values`` (``values``: one int per element, storage order) and ``addresses``
    (``entries``: one ``[buffer, byte_offset]`` per element; the verifier writes that
    buffer's device address plus the offset, for the placement of each run).
    """
    kind: str = "normal"
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        _check(self.kind in DISTRIBUTION_KINDS,
               f"distribution.kind must be one of {DISTRIBUTION_KINDS}, got {self.kind!r}")


@dataclass
class Buffer:
    """A device buffer: ``role`` in/out/inout/scratch. Outputs and scratch are poisoned
    before each run unless ``init`` is given (e.g. zeros for a semaphore workspace, which is
    then re-initialised before every launch sequence)."""
    name: str
    dtype: str
    shape: tuple
    role: str = "in"
    init: Optional[Distribution] = None

    def __post_init__(self):
        _check(bool(self.name) and self.name.isidentifier(),
               f"buffer.name must be an identifier, got {self.name!r}")
        _check(self.dtype in BUFFER_DTYPES, f"buffer {self.name}: dtype must be one of "
               f"{sorted(BUFFER_DTYPES)}, got {self.dtype!r}")
        _check(self.role in ROLES, f"buffer {self.name}: role must be one of {ROLES}, got {self.role!r}")
        try:
            self.shape = tuple(int(s) for s in self.shape)
        except (TypeError, ValueError):
            raise SpecError(f"buffer {self.name}: shape must be a list of ints, got {self.shape!r}") from None
        _check(all(s >= 1 for s in self.shape), f"buffer {self.name}: shape must be positive, got {self.shape!r}")
        if isinstance(self.init, dict):
            self.init = Distribution(**self.init)
        if self.init is None and self.role in ("in", "inout"):
            self.init = Distribution("normal", {"mean": 0.0, "std": 1.0})
        if self.init is not None and self.init.kind in TABLE_KINDS:
            self._check_table()

    def _check_table(self) -> None:
        kind, p = self.init.kind, self.init.params
        _check(self.role == "in", f"buffer {self.name}: a {kind} table must have role in "
               f"(read-only, the same every run), got {self.role!r}")
        _check(DTYPES[self.dtype][1] in ("i", "u"),
               f"buffer {self.name}: a {kind} table holds integers, got dtype {self.dtype}")
        key = "values" if kind == "values" else "entries"
        items = p.get(key)
        _check(isinstance(items, list) and len(items) == self.numel,
               f"buffer {self.name}: init.params.{key} must list {self.numel} items (one per element), "
               f"got {len(items) if isinstance(items, list) else items!r}")
        if kind == "values":
            _check(all(isinstance(v, int) and not isinstance(v, bool) for v in items),
                   f"buffer {self.name}: init.params.values must be ints")
            return
        _check(self.dtype in ADDRESS_DTYPES,
               f"buffer {self.name}: an addresses table needs dtype uint64 or int64, got {self.dtype}")
        for entry in items:
            _check(isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[0], str)
                   and isinstance(entry[1], int) and entry[1] >= 0,
                   f"buffer {self.name}: each addresses entry must be [buffer name, byte offset >= 0], "
                   f"got {entry!r}")

    @property
    def table(self) -> Optional[str]:
        """"values" or "addresses" for a device table, else None."""
        return self.init.kind if self.init is not None and self.init.kind in TABLE_KINDS else None

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        if self.dtype in PACKED_DTYPES:
            return packed_nbytes(self.dtype, self.numel)
        return self.numel * DTYPES[self.dtype][0]


@dataclass
class Problem:
    """The function one group computes: the op (key into the reference registry), its
    buffers, op parameters (layouts, alpha, beta, eps, ...), and tolerance overrides.

    ``trial_kinds`` lists the float input kinds the verifier cycles through across trials
    (default: all of DEFAULT_TRIAL_KINDS; a problem that narrows the set records it here).
    ``tolerance`` may hold ``atol``/``rtol`` to replace the registry's per-element error
    bound with ``atol + rtol * |ref|``.
    """
    problem_id: str
    op: str
    buffers: list
    params: dict = field(default_factory=dict)
    tolerance: dict = field(default_factory=dict)
    trial_kinds: list = field(default_factory=lambda: list(DEFAULT_TRIAL_KINDS))

    def __post_init__(self):
        _check(bool(self.problem_id), "problem.problem_id must be non-empty")
        _check(bool(self.op), f"problem {self.problem_id}: op must be non-empty")
        self.buffers = [Buffer(**b) if isinstance(b, dict) else b for b in self.buffers]
        names = [b.name for b in self.buffers]
        _check(len(names) == len(set(names)), f"problem {self.problem_id}: duplicate buffer names {names}")
        _check(any(b.role in ("out", "inout") for b in self.buffers),
               f"problem {self.problem_id}: needs at least one buffer with role out or inout")
        check_address_tables(self.buffers, f"problem {self.problem_id}")

    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise SpecError(f"problem {self.problem_id}: no buffer named {name!r}")

    def to_json(self) -> str:
        return json.dumps(to_plain(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Problem":
        return cls(**json.loads(text))

    def digest(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]


PATCH_KINDS = ("address", "tensormap")
TENSORMAP_BYTES = 128  # sizeof(CUtensorMap)
TENSORMAP_ALIGN = 64   # CUtensorMap is alignas(64), also inside a by-value struct
TENSORMAP_KEYS = ("data_type", "rank", "global_dim", "global_strides", "box_dim",
                  "element_strides", "interleave", "swizzle", "l2_promotion", "oob_fill")
# An im2col descriptor (``tensormap["encode"] == "im2col"``, cuTensorMapEncodeIm2col) has a
# pixel box and a channels x pixels load box instead of ``box_dim``.
TENSORMAP_ENCODES = ("tiled", "im2col")
IM2COL_KEYS = ("data_type", "rank", "global_dim", "global_strides", "pixel_box_lower_corner",
               "pixel_box_upper_corner", "channels_per_pixel", "pixels_per_column", "element_strides",
               "interleave", "swizzle", "l2_promotion", "oob_fill")


@dataclass
class Patch:
    """Inside a blob, at byte ``offset``, write either (``kind="address"``) the device
    address of ``buffer`` (+ ``addend`` bytes) as a little-endian u64, or
    (``kind="tensormap"``) the 128-byte ``CUtensorMap`` that the driver's
    ``cuTensorMapEncodeTiled`` encodes from ``tensormap`` (its arguments other than the
    address: ``data_type``, ``rank``, ``global_dim``, ``global_strides`` (bytes, rank - 1 of
    them), ``box_dim``, ``element_strides``, ``interleave``, ``swizzle``, ``l2_promotion``,
    ``oob_fill``, enum values as ints) with the address of ``buffer`` (+ ``addend``).
    ``tensormap["encode"] == "im2col"`` names ``cuTensorMapEncodeIm2col`` instead (3.x
    convolutions): ``pixel_box_lower_corner`` / ``pixel_box_upper_corner`` (rank - 2 ints
    each), ``channels_per_pixel`` and ``pixels_per_column`` replace ``box_dim``."""
    offset: int
    buffer: str
    addend: int = 0
    kind: str = "address"
    tensormap: Optional[dict] = None

    def __post_init__(self):
        self.kind = self.kind or "address"  # rows written before patches had kinds
        _check(self.kind in PATCH_KINDS, f"patch.kind must be one of {PATCH_KINDS}, got {self.kind!r}")
        self.offset, self.addend = int(self.offset), int(self.addend)
        if self.kind == "address":
            _check(self.tensormap is None, "an address patch takes no tensormap")
            return
        if isinstance(self.tensormap, str):  # as stored in Arrow / Parquet
            self.tensormap = json.loads(self.tensormap)
        tm = self.tensormap
        _check(isinstance(tm, dict), "a tensormap patch needs patch.tensormap (the encode arguments)")
        encode = tm.get("encode", "tiled")
        _check(encode in TENSORMAP_ENCODES, f"patch.tensormap.encode must be one of {TENSORMAP_ENCODES}, "
                                            f"got {encode!r}")
        im2col = encode == "im2col"
        missing = [k for k in (IM2COL_KEYS if im2col else TENSORMAP_KEYS) if k not in tm]
        _check(not missing, f"patch.tensormap lacks {missing}")
        rank = tm["rank"]
        low = 3 if im2col else 1
        _check(isinstance(rank, int) and low <= rank <= 5, f"patch.tensormap.rank must be {low}..5, got {rank!r}")
        shaped = (("pixel_box_lower_corner", rank - 2), ("pixel_box_upper_corner", rank - 2)) if im2col \
            else (("box_dim", rank),)
        for key, length in (("global_dim", rank), ("global_strides", rank - 1), *shaped,
                            ("element_strides", rank)):
            _check(isinstance(tm[key], list) and len(tm[key]) == length,
                   f"patch.tensormap.{key} must list {length} ints, got {tm[key]!r}")
        _check(self.offset % TENSORMAP_ALIGN == 0,
               f"tensormap patch offset {self.offset} is not {TENSORMAP_ALIGN}-byte aligned")

    @property
    def size(self) -> int:
        """Bytes the patch writes."""
        return TENSORMAP_BYTES if self.kind == "tensormap" else 8


@dataclass
class Arg:
    """One kernel parameter: a buffer pointer, a scalar (``dtype`` from SCALAR_DTYPES,
    ``value`` as a decimal string so 64-bit integers survive), a null pointer, or a by-value
    ``blob`` with pointer ``patches``."""
    kind: str
    buffer: Optional[str] = None
    dtype: Optional[str] = None
    value: Optional[str] = None
    blob: Optional[bytes] = None
    patches: list = field(default_factory=list)

    def __post_init__(self):
        _check(self.kind in ARG_KINDS, f"arg.kind must be one of {ARG_KINDS}, got {self.kind!r}")
        if self.kind == "buffer":
            _check(bool(self.buffer), "a buffer arg needs arg.buffer (the buffer's name)")
        if self.kind == "scalar":
            _check(self.dtype in SCALAR_DTYPES, f"scalar arg: dtype must be one of "
                   f"{sorted(SCALAR_DTYPES)}, got {self.dtype!r}")
            _check(self.value is not None, "scalar arg needs a value")
            self.value = str(self.value)
        if self.kind == "blob":
            if isinstance(self.blob, str):
                self.blob = base64.b64decode(self.blob)
            _check(isinstance(self.blob, (bytes, bytearray)) and len(self.blob) > 0,
                   "blob arg needs non-empty bytes in arg.blob")
            self.blob = bytes(self.blob)
            self.patches = [Patch(**p) if isinstance(p, dict) else p for p in self.patches]
            for p in self.patches:
                _check(0 <= p.offset <= len(self.blob) - p.size,
                       f"blob patch offset {p.offset} (+{p.size} bytes) outside the "
                       f"{len(self.blob)}-byte blob")

    @property
    def size(self) -> int:
        """Bytes this argument occupies in the kernel's parameter space."""
        if self.kind in ("buffer", "null"):
            return 8
        if self.kind == "scalar":
            return SCALAR_DTYPES[self.dtype]
        return len(self.blob)

    @staticmethod
    def buf(name: str) -> "Arg":
        return Arg("buffer", buffer=name)

    @staticmethod
    def scalar(dtype: str, value) -> "Arg":
        return Arg("scalar", dtype=dtype, value=str(value))

    @staticmethod
    def null() -> "Arg":
        return Arg("null")


@dataclass
class Launch:
    """One kernel launch of a row's launch sequence."""
    entry: str
    grid: tuple
    block: tuple
    args: list
    cluster: tuple = (1, 1, 1)
    dynamic_smem: int = 0

    def __post_init__(self):
        _check(bool(self.entry), "launch.entry must be non-empty")
        self.grid = _dim3(self.grid, f"launch {self.entry}: grid")
        self.block = _dim3(self.block, f"launch {self.entry}: block")
        self.cluster = _dim3(self.cluster, f"launch {self.entry}: cluster")
        _check(self.block[0] * self.block[1] * self.block[2] <= 1024,
               f"launch {self.entry}: block {self.block} has more than 1024 threads")
        _check(int(self.dynamic_smem) >= 0, f"launch {self.entry}: dynamic_smem must be >= 0")
        self.dynamic_smem = int(self.dynamic_smem)
        self.args = [Arg(**a) if isinstance(a, dict) else a for a in self.args]


@dataclass
class Resources:
    """What ptxas reports for one entry."""
    entry: str
    registers: int = 0
    shared_static: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack: int = 0
    constant: int = 0


@dataclass
class KernelRecord:
    """One row of the ``kernels`` config: a PTX program plus everything needed to run it.

    ``build_key`` identifies the work item before compilation (source, group, variant,
    arch), so a resumed build skips what it already wrote. The verifier's fields are None
    until ``ptxds verify`` fills them.
    """
    group_id: str
    source: str
    variant: dict
    name: str
    arch: str
    ptx: str
    launches: list
    problem: Problem
    build_key: str = ""
    kernel_id: str = ""
    ptx_hash: str = ""
    scratch: list = field(default_factory=list)
    resources: list = field(default_factory=list)
    features: list = field(default_factory=list)
    toolchain: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    status: str = "built"
    status_message: str = ""
    sass: str = ""
    # verifier's columns
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    atol: Optional[float] = None
    rtol: Optional[float] = None
    trials: Optional[int] = None
    deterministic: Optional[bool] = None
    max_err_ratio: Optional[float] = None     # max over elements and trials of |err| / bound
    catches_rel_err: Optional[float] = None   # smallest uniform relative error the bound catches
    output_hash: Optional[str] = None         # hash of the output bits of every trial
    max_disagreement: Optional[float] = None  # max |out - consensus member| / agreement bound
    sanitizer: Optional[str] = None           # compute-sanitizer findings (JSON), when run
    time_us_median: Optional[float] = None
    time_us_iqr: Optional[float] = None
    time_us_min: Optional[float] = None
    time_samples: Optional[int] = None
    time_method: Optional[str] = None         # "cupti" (kernel durations) or "events"
    time_us_events_median: Optional[float] = None
    time_us_events_iqr: Optional[float] = None
    roofline_us: Optional[float] = None       # the least time the problem's work takes on this GPU
    sol_ratio: Optional[float] = None         # roofline_us / time_us_median (1 = speed of light)
    gpu_name: Optional[str] = None
    sm_clock_mhz: Optional[int] = None
    driver_version: Optional[str] = None
    # per trial: {trial, kind, seed, max_abs_err, max_rel_err, max_ulp_err, max_err_ratio, n_bad, n_total}
    trial_errors: Optional[list] = None
    # a verified-wrong member's first differing element (schema.WITNESS), None otherwise
    witness: Optional[dict] = None
    # every check's outcome in the order the checks ran: {check, status, message}, status None
    # for a note; ``status`` and ``status_message`` are derived from them (verify/judge/findings.py)
    findings: Optional[list] = None

    def __post_init__(self):
        if isinstance(self.problem, dict):
            self.problem = Problem(**self.problem)
        elif isinstance(self.problem, str):
            self.problem = Problem.from_json(self.problem)
        self.launches = [Launch(**l) if isinstance(l, dict) else l for l in self.launches]
        self.scratch = [Buffer(**b) if isinstance(b, dict) else b for b in self.scratch]
        self.resources = [Resources(**r) if isinstance(r, dict) else r for r in self.resources]
        _check(self.status in BUILD_STATUSES + VERIFY_STATUSES,
               f"kernel {self.name}: status {self.status!r} is unknown")
        for b in self.scratch:
            _check(b.role == "scratch", f"kernel {self.name}: scratch buffer {b.name} must have role scratch")
        if not self.build_key:
            self.build_key = make_build_key(self.source, self.group_id, self.variant, self.arch, self.name)

    @property
    def base_kernel_id(self) -> Optional[str]:
        """The member this row was derived from (a hand edit, a rewrite, a mutant), None for
        a row a builder made from source (rewrite rows before this key wrote ``base``)."""
        return self.provenance.get("base_kernel_id") or self.provenance.get("base")

    def buffers(self) -> list:
        """The problem's buffers followed by this row's scratch buffers."""
        return list(self.problem.buffers) + list(self.scratch)

    def to_json(self) -> str:
        return json.dumps(to_plain(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "KernelRecord":
        return cls(**json.loads(text))


@dataclass
class Pair:
    """One row of the ``pairs`` config. ``equivalent`` is None for a surviving mutant
    (``label_source="survived"``): it passed every trial, which does not prove it equivalent."""
    kernel_a: str
    kernel_b: str
    equivalent: Optional[bool]
    label_source: str  # "verified", "constructed", "survived" or "unexercised"
    group_a: str = ""
    group_b: str = ""
    mutation: Optional[str] = None  # the mutation operator when one side is a mutant
    witness: Optional[dict] = None  # a verified negative: where the wrong member differs


def check_address_tables(buffers: list, where: str) -> None:
    """Every ``addresses`` entry names one of ``buffers`` and an offset inside it."""
    sizes = {b.name: b.nbytes for b in buffers}
    for b in buffers:
        if b.table != "addresses":
            continue
        for name, offset in b.init.params["entries"]:
            _check(name in sizes, f"{where}: table {b.name} points into buffer {name!r}, "
                   f"which is not among {sorted(sizes)}")
            _check(offset < sizes[name], f"{where}: table {b.name} entry offset {offset} is outside "
                   f"buffer {name} ({sizes[name]} bytes)")


# The verifier's columns: empty in a built dataset, filled by ptxds verify.
VERIFIER_COLUMNS = (
    "max_abs_err", "max_rel_err", "atol", "rtol", "trials", "deterministic", "max_err_ratio",
    "catches_rel_err", "output_hash", "max_disagreement", "sanitizer", "time_us_median",
    "time_us_iqr", "time_us_min", "time_samples", "time_method", "time_us_events_median",
    "time_us_events_iqr", "roofline_us", "sol_ratio", "gpu_name", "sm_clock_mhz", "driver_version",
    "trial_errors", "witness", "findings",
)


def unverified(record: "KernelRecord") -> "KernelRecord":
    """A copy of ``record`` as the build left it: every verifier column None, no
    ``provenance.verify``, and a verified status back to ``built`` (a build's own status,
    such as ``build_failed``, stays). The one place a row is unverified."""
    provenance = {k: v for k, v in (record.provenance or {}).items() if k != "verify"}
    row = dataclasses.replace(record, provenance=provenance, **{name: None for name in VERIFIER_COLUMNS})
    if row.status in VERIFY_STATUSES:
        row.status, row.status_message = "built", ""
    return row


def make_build_key(source: str, group_id: str, variant: dict, arch: str, name: str = "") -> str:
    text = json.dumps([source, group_id, variant, arch, name], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def make_kernel_id(ptx_hash: str, launches: list, problem: Problem, arch: str) -> str:
    """Hash of normalised PTX + launch sequence + problem + target arch: two rows with the
    same id run the same code the same way on the same function for the same target."""
    text = json.dumps([ptx_hash, to_plain(launches), problem.digest(), arch], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def to_plain(obj: Any) -> Any:
    """Dataclasses/tuples/bytes -> JSON-ready values (bytes as base64)."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (bytes, bytearray)):
        return base64.b64encode(bytes(obj)).decode()
    return obj
