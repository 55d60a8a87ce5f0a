"""The triton-dump source: rows from an existing Triton cache or kernel-dump tree.

``TritonDumpBuilder`` ("triton-dump") reads a ``TRITON_CACHE_DIR`` or ``TRITON_KERNEL_DUMP``
tree (documented in ``docs/triton-dump.md``; its rows say source ``triton-dump``): variants of one kernel name and signature
form a group, mapped to a Problem through the problem spec file below, or kept as
``no_problem`` rows that say why. A dump folder has no metadata json: ``build`` recovers its
launch facts by recompiling its IR until the dumped PTX is reproduced (``recover.py``).

Problem spec file (``extra["problem_file"]``, JSON or YAML): a list of entries
    {"kernel": "add_kernel",                      # Triton kernel name
     "signature": "*fp32,*fp32,*fp32,i32",        # optional: runtime param types, in order
     "problem": {...Problem fields...},
     "vars": {"n": 98432},                         # optional named numbers for expressions
     "args": ["x", "y", "out", "n"],               # one per runtime param
     "grid": ["cdiv(n, max_range)", 1, 1],
     "grid_by_hash": {"<hash prefix>": [..]}}      # optional per-variant grid
An ``args`` string naming a problem buffer is that buffer's pointer; ``null`` is a null
pointer; anything else is an expression giving a scalar (its type comes from the signature).
Expressions see ``vars``, numeric problem params, ``num_warps``, ``num_stages``,
``num_ctas``, ``ranges`` (distinct ``tt.make_range`` sizes of the kernel, ascending),
``max_range``, ``min_range`` and the functions ``cdiv``, ``min``, ``max``, ``next_pow2``
(and ``abs``), evaluated without ``eval`` (``builders/triton/expressions.py``, which also refuses
unknown keys in an entry).
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from dataclasses import dataclass, field
from typing import Optional

from builders.base import Builder, WorkItem
from builders.triton.compile import SCALAR_TYPES, make_launch, one_line
from builders.triton.expressions import evaluate
from builders.triton_dump.messages import describe_params, no_problem_message
from builders.triton_dump.recover import Recovery, recover_launch_facts
from builders.triton_dump.specs import load_specs, match_variant, problems_by_group
from dataset_spec.model import Arg, Buffer, KernelRecord, Problem, SpecError
from dataset_spec.one_problem import check_joins
from dataset_spec.store.shards import problems_in_folder

NO_PROBLEM_HINT = ("map it with a problem spec file (--problem FILE, see docs/triton-dump.md): "
                   "an entry with kernel, problem, args and grid")


@dataclass(frozen=True)
class TritonDumpOptions:
    """An existing TRITON_CACHE_DIR / TRITON_KERNEL_DUMP tree and its problem spec."""
    from_dump: Optional[str] = field(default=None, metadata={
        "flag": "--from-dump", "path": "dir", "required": "DIR",
        "help": "ingest a TRITON_CACHE_DIR / TRITON_KERNEL_DUMP tree (with --source triton)"})
    problem_file: Optional[str] = field(default=None, metadata={
        "flag": "--problem", "path": "file", "help": "problem spec file mapping kernels to problems"})
    dump_dir: Optional[str] = None  # the older name of from_dump


# --------------------------------------------------------------------------- dump ingestion

TTIR_FUNC = re.compile(r"tt\.func\s+public\s+@([\w$.]+)\((.*?)\)\s*(?:attributes|\{)", re.S)
TTIR_ARG = re.compile(r"%([\w$.]+)\s*:\s*(!tt\.ptr<\w+>|\w+)")
MAKE_RANGE = re.compile(r"tt\.make_range\s*\{end\s*=\s*(\d+)\s*:\s*i32,\s*start\s*=\s*(\d+)")
MODULE_ATTR = re.compile(r'"?ttg\.([\w-]+)"?\s*=\s*"?([\w:]+)"?')
PTX_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)
PTX_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)
MLIR_TYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "f64": "fp64"}


def triton_type(mlir_type: str) -> str:
    """'!tt.ptr<f32>' -> '*fp32', 'i32' -> 'i32', 'f32' -> 'fp32'."""
    pointee = re.fullmatch(r"!tt\.ptr<(\w+)>", mlir_type)
    if pointee:
        return "*" + MLIR_TYPES.get(pointee.group(1), pointee.group(1))
    return MLIR_TYPES.get(mlir_type, mlir_type)


def ttir_params(ttir: str) -> list[tuple[str, str, bool]]:
    """(name, triton type, divisible by 16) for each runtime parameter of the kernel."""
    match = TTIR_FUNC.search(ttir)
    if not match:
        return []
    params = []
    for piece in split_top_level(match.group(2)):
        arg = TTIR_ARG.search(piece)
        if arg:
            params.append((arg.group(1), triton_type(arg.group(2)), "tt.divisibility = 16" in piece))
    return params


def split_top_level(text: str) -> list[str]:
    """Split an MLIR argument list at commas outside brackets and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "({<[":
            depth += 1
        elif not quoted and ch in ")}>]":
            depth -= 1
        elif not quoted and ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def ttir_ranges(ttir: str) -> list[int]:
    return sorted({int(end) - int(start) for end, start in MAKE_RANGE.findall(ttir)})


def ttgir_metadata(ttgir: str) -> dict:
    """num_warps, num_ctas and target capability from a TTGIR module's attributes."""
    header = next((line for line in ttgir.splitlines() if line.startswith("module attributes")), "")
    attrs = dict(MODULE_ATTR.findall(header))
    meta = {}
    if "num-warps" in attrs:
        meta["num_warps"] = int(attrs["num-warps"])
    if "num-ctas" in attrs:
        meta["num_ctas"] = int(attrs["num-ctas"])
    if attrs.get("target", "").startswith("cuda:"):
        meta["target"] = {"backend": "cuda", "arch": int(attrs["target"].split(":")[1])}
    return meta


def arch_of(ptx: str, metadata: dict) -> str:
    target = PTX_TARGET.search(ptx)
    if target:
        return target.group(1)
    cc = (metadata.get("target") or {}).get("arch")
    return f"sm_{cc}{'a' if cc and int(cc) >= 90 else ''}" if cc else "unknown"


def read_text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def find_variants(root: Path) -> list[Path]:
    """Every ``<hash>/<name>.ptx`` under root, in sorted order."""
    return sorted(p for p in root.rglob("*.ptx") if p.is_file())


def load_variant(ptx_path: Path) -> dict:
    """Read one dumped/cached variant: ptx, metadata (json, or recovered from TTGIR), params."""
    folder, stem = ptx_path.parent, ptx_path.stem
    ptx = read_text(ptx_path)
    metadata_path = folder / f"{stem}.json"
    metadata = json.loads(metadata_path.read_text()) if metadata_path.exists() else {}
    has_json = bool(metadata)
    if not has_json:  # num_warps/num_ctas/target only; build() recovers the rest (recover.py)
        metadata = ttgir_metadata(read_text(folder / f"{stem}.ttgir"))
    ttir = read_text(folder / f"{stem}.ttir") or read_text(folder / f"{stem}.source")
    params = ttir_params(ttir)
    return {"path": str(ptx_path), "folder": folder.name, "name": metadata.get("name", stem),
            "metadata": metadata, "has_json": has_json, "params": params,
            "ranges": ttir_ranges(ttir), "arch": arch_of(ptx, metadata),
            "signature": ",".join(t for _, t, _ in params)}


def recover_dump_metadata(variant: dict) -> Optional[Recovery]:
    """For a folder without metadata json, recompile its IR (recover.py) and, when the PTX is
    reproduced, take the launch facts into ``variant["metadata"]``. None for a cache folder."""
    if variant["has_json"]:
        return None
    ptx_path = Path(variant["path"])
    recovery = recover_launch_facts(ptx_path.parent, ptx_path.stem, read_text(ptx_path))
    if recovery.trusted:
        variant["metadata"].update(recovery.facts)
    return recovery


def dump_group_id(name: str, signature: str) -> str:
    digest = hashlib.sha256(signature.encode()).hexdigest()[:8]
    return f"triton-dump/{name}/{digest}"


def expression_scope(spec: dict, problem: Problem, variant: dict) -> dict:
    meta, ranges = variant["metadata"], variant["ranges"] or [1]
    scope = {k: v for k, v in problem.params.items() if isinstance(v, (int, float))}
    scope.update(spec.get("vars", {}))
    scope.update(num_warps=int(meta.get("num_warps", 4)), num_stages=int(meta.get("num_stages", 0)),
                 num_ctas=int(meta.get("num_ctas", 1)), ranges=ranges,
                 max_range=max(ranges), min_range=min(ranges))
    return scope  # the functions (cdiv, min, max, next_pow2, abs): expressions.FUNCTIONS


def spec_args(spec: dict, problem: Problem, variant: dict, scope: dict) -> list:
    """Launch args for the runtime params from the spec's ``args`` list."""
    names = {b.name for b in problem.buffers}
    params, wanted = variant["params"], spec.get("args", [])
    if len(wanted) != len(params):
        raise SpecError(f"spec gives {len(wanted)} args, kernel {variant['name']} has "
                        f"{len(params)} runtime params ({variant['signature']}): "
                        f"{describe_params(variant, variant_ttir(variant))}")
    args = []
    for value, (pname, ptype, _) in zip(wanted, params):
        if ptype.startswith("*"):
            if value is None or value == "null":
                args.append(Arg.null())
            elif value in names:
                args.append(Arg.buf(value))
            else:
                raise SpecError(f"param {pname} is a pointer; {value!r} names no problem buffer")
        else:
            args.append(Arg.scalar(SCALAR_TYPES.get(ptype, "s32"), evaluate(value, scope)))
    return args


def spec_grid(spec: dict, variant: dict, scope: dict) -> list:
    by_hash = spec.get("grid_by_hash", {})
    grid = next((g for h, g in by_hash.items() if variant["folder"].lower().startswith(h.lower())),
                spec.get("grid"))
    if not grid:
        raise SpecError("spec has no grid")
    return [int(evaluate(g, scope)) for g in grid]


def placeholder_problem(name: str) -> Problem:
    return Problem(problem_id=f"unknown/{name}", op="unknown",
                   buffers=[Buffer("out", "float32", (1,), "out")])


def dump_variant_knobs(variant: dict) -> dict:
    meta = variant["metadata"]
    knobs = {k: meta[k] for k in ("num_warps", "num_stages", "num_ctas", "shared") if k in meta}
    knobs.update(hash=variant["folder"], ranges=variant["ranges"],
                 specialization={"divisibility_16": [n for n, _, d in variant["params"] if d]})
    return knobs


class TritonDumpBuilder(Builder):
    """Rows from an existing Triton cache or kernel-dump directory (``extra["from_dump"]``),
    grouped by the problem each variant is mapped to (specs.py)."""
    name = "triton-dump"
    Options = TritonDumpOptions
    pip_extra = "triton"
    serves = ("triton", "from_dump")

    def dump_dir(self) -> Path:
        folder = self.settings.from_dump or self.settings.dump_dir
        if not folder or not Path(folder).is_dir():
            raise SpecError(f"triton-dump needs extra['from_dump'] = an existing directory, got {folder!r}")
        return Path(folder)

    def work_items(self) -> list:
        specs = load_specs(self.settings.problem_file)  # a bad spec file stops here, before any item
        variants = [load_variant(path) for path in find_variants(self.dump_dir())]
        ranges: dict = {}
        for variant in variants:
            ranges.setdefault((variant["name"], variant["signature"]), set()).add(max(variant["ranges"] or [1]))
        items = []
        for variant in variants:
            match = match_variant(specs, variant, lambda entry, v=variant: self.scope(entry, v),
                                  sorted(ranges[(variant["name"], variant["signature"])]))
            group = match.group_id or dump_group_id(variant["name"], variant["signature"])
            label = f"{group}/{variant['folder']}/{variant['name']}"
            items.append(WorkItem(key=label, group_id=group, label=label,
                                  payload={"dump": True, "ptx_path": variant["path"], "entry": match.entry,
                                           "not_applicable": match.not_applicable, "no_problem": match.no_problem}))
        return items

    @staticmethod
    def scope(entry: dict, variant: dict) -> dict:
        """What a ``fits`` condition sees: as grid and argument expressions (the metadata a
        cache folder's json gives; a dump folder's num_warps and num_ctas from its TTGIR)."""
        return expression_scope(entry, entry["problem"], variant)

    def check_output(self, out_dir) -> None:
        """Refuses a folder whose rows of a group carry another problem than the spec file's."""
        for group, problem in problems_by_group(load_specs(self.settings.problem_file)).items():
            clash = check_joins(group, problem, problems_in_folder(out_dir, group), str(out_dir))
            if clash:
                raise SpecError(f"{self.settings.problem_file}: {clash}")

    def build(self, item: WorkItem) -> list:
        variant = load_variant(Path(item.payload["ptx_path"]))
        recovery = recover_dump_metadata(variant)
        specs = load_specs(self.settings.problem_file)
        ptx = read_text(Path(variant["path"]))
        record = KernelRecord(group_id=item.group_id, source="triton-dump", variant=dump_variant_knobs(variant),
                              name=variant["name"], arch=variant["arch"], ptx=ptx,
                              launches=[], problem=placeholder_problem(variant["name"]),
                              toolchain={"triton": variant["metadata"].get("triton_version", "unknown"),
                                         "ptx_isa": ptx_version_of(ptx)},
                              provenance={"generator": "ptxds builders.triton (dump)",
                                          "dump_path": variant["path"], "licence": "MIT (Triton)",
                                          "launch_facts": (recovery.provenance() if recovery else
                                                           {"recovered": False, "method": f"{variant['name']}.json"})})
        entry = specs[item.payload["entry"]] if item.payload.get("entry") is not None else None
        reason = self.unmapped_reason(entry, variant, specs, recovery)
        if reason:
            record.status, record.status_message = "no_problem", reason
            return [record]
        record.problem = Problem.from_json(entry["problem"].to_json())
        if item.payload.get("not_applicable"):  # the PTX, no launch: it cannot cover this problem
            record.status, record.status_message = "not_applicable", item.payload["not_applicable"]
            return [record]
        try:
            scope = expression_scope(entry, record.problem, variant)
            launch, scratch = make_launch(variant["name"], variant["metadata"], spec_grid(entry, variant, scope),
                                          spec_args(entry, record.problem, variant, scope))
        except (SpecError, TypeError, ValueError, KeyError, ArithmeticError) as exc:
            record.status = "no_problem"
            record.status_message = f"problem spec for {variant['name']} does not apply: {one_line(exc)}"
            return [record]
        if item.payload.get("no_problem"):  # the entry fits the kernel, but not which variant covers it
            record.status, record.status_message = "no_problem", item.payload["no_problem"]
            return [record]
        record.launches, record.scratch = [launch], scratch
        return [record]

    @staticmethod
    def unmapped_reason(entry: Optional[dict], variant: dict, specs: list, recovery: Optional[Recovery]) -> str:
        if entry is None:
            why = ("no problem spec file given" if not specs else
                   f"no entry of the problem spec file names it with signature {variant['signature']}")
            return no_problem_message(variant, variant_ttir(variant), why)
        if recovery is not None and not recovery.trusted:
            return f"launch facts not recovered: {recovery.reason}"
        if "shared" not in variant["metadata"] or "num_warps" not in variant["metadata"]:
            return (f"{variant['folder']}/{variant['name']}.json has no shared/num_warps; "
                    f"ingest the TRITON_CACHE_DIR the kernel was compiled into")
        return ""


def variant_ttir(variant: dict) -> str:
    folder, stem = Path(variant["path"]).parent, Path(variant["path"]).stem
    return read_text(folder / f"{stem}.ttir") or read_text(folder / f"{stem}.source")


def ptx_version_of(ptx: str) -> str:
    match = re.search(r"^\s*\.version\s+(\d+\.\d+)", ptx, re.M)
    return match.group(1) if match else "unknown"
