"""Recover the launch facts a ``TRITON_KERNEL_DUMP`` folder leaves out (it has no metadata json).

A dump folder holds the IR Triton compiled from, so the installed Triton can compile it again
for the target the IR names (``ttg.target``), on CPU. The earliest stage is tried first: the
``.ttir`` (which needs the ``num_stages`` the user compiled with: a few candidates, the
pipelined buffer depth in the ``.ttgir`` first), then the ``.ttgir`` (num_warps and num_ctas
are its module attributes). The first compile whose PTX equals the dumped PTX after
``ptx_tools`` normalisation gives ``shared``, ``num_warps``, ``num_ctas``, the cluster dims and
the scratch sizes; when none does, the facts stay unknown and ``reason`` says why.
"""
from __future__ import annotations

import difflib
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ptx_tools.normalize import normalize_ptx

# Metadata keys a launch needs (besides the grid and the arguments).
LAUNCH_FACT_KEYS = ("name", "shared", "num_warps", "num_ctas", "global_scratch_size", "global_scratch_align",
                    "profile_scratch_size", "profile_scratch_align", "tmem_size")
DEFAULT_NUM_STAGES = 3  # triton.Config's and the JIT's default
MAX_TTIR_TRIES = 4
MAX_PIPELINE_DEPTH = 8
TTGIR_TARGET = re.compile(r'ttg\.target\s*=\s*"cuda:(\d+)"')
TTGIR_INT_ATTR = r'"?ttg\.{name}"?\s*=\s*(\d+)\s*:\s*i32'
PIPELINE_DEPTH = re.compile(r"ttg\.local_alloc\s*:\s*\(\)\s*->\s*!ttg\.memdesc<(\d+)x\d+x\d+x")  # a multi-buffered 2-D tile
PTX_VERSION = re.compile(r"^\s*\.version\s+(\d+)\.(\d+)", re.M)
PTX_TARGET_CC = re.compile(r"^\s*\.target\s+sm_(\d+)", re.M)
PTX_MAXNREG = re.compile(r"\.maxnreg\s+(\d+)")


@dataclass
class Recovery:
    """The outcome of recompiling one dump folder: ``facts`` when trusted, else ``reason``."""
    facts: dict = field(default_factory=dict)
    stage: str = ""              # "ttir" or "ttgir": the IR file that reproduced the PTX
    triton_version: str = ""
    target: str = ""             # "cuda:<cc>"
    options: dict = field(default_factory=dict)
    tried: list = field(default_factory=list)
    reason: str = ""

    @property
    def trusted(self) -> bool:
        return bool(self.facts) and not self.reason

    def provenance(self) -> dict:
        """What the row's provenance records about how its launch facts were found."""
        return {"recovered": self.trusted, "method": "recompiled the dumped IR with the installed Triton; "
                "its PTX equals the dumped PTX after normalisation" if self.trusted else "not recovered",
                "stage": self.stage, "triton_version": self.triton_version, "target": self.target,
                "options": self.options, "tried": self.tried, **({"reason": self.reason} if self.reason else {})}


def installed_triton_version() -> str:
    import triton
    return triton.__version__


def ir_target(ttgir: str, ptx: str) -> int:
    """The compute capability the IR names (TTGIR ``ttg.target``), else the PTX ``.target``."""
    match = TTGIR_TARGET.search(ttgir) or PTX_TARGET_CC.search(ptx)
    if not match:
        raise ValueError("neither the .ttgir (ttg.target) nor the .ptx (.target) names a CUDA target")
    return int(match.group(1))


def ttgir_int_attr(ttgir: str, name: str) -> int | None:
    match = re.search(TTGIR_INT_ATTR.format(name=re.escape(name)), ttgir)
    return int(match.group(1)) if match else None


def ptx_options_of(ptx: str) -> dict:
    """Compile options the dumped PTX shows: its ``.version`` and any ``.maxnreg``."""
    options = {}
    version = PTX_VERSION.search(ptx)
    if version:
        options["ptx_version"] = int(version.group(1)) * 10 + int(version.group(2))
    maxnreg = PTX_MAXNREG.search(ptx)
    if maxnreg:
        options["maxnreg"] = int(maxnreg.group(1))
    return options


def num_stages_candidates(ttgir: str, cc: int) -> list[int]:
    """num_stages values to try for the TTIR, likeliest first: Triton 3.6's pipeliner keeps
    ``num_stages - 1`` buffers of each pipelined load on sm_80 and ``num_stages`` on sm_90."""
    depths = sorted({int(d) for d in PIPELINE_DEPTH.findall(ttgir) if 1 < int(d) <= MAX_PIPELINE_DEPTH}, reverse=True)
    offsets = (0, 1) if cc >= 90 else (1, 0)
    candidates = [d + o for d in depths for o in offsets] + [DEFAULT_NUM_STAGES, 1, 2, 4]
    return list(dict.fromkeys(candidates))[:MAX_TTIR_TRIES]


def first_difference(want: str, got: str) -> str:
    """Where two normalised PTX texts first differ, as 'line N: <dumped> vs <recompiled>'."""
    for index, (a, b) in enumerate(zip(want.splitlines(), got.splitlines()), start=1):
        if a != b:
            return f"normalised line {index}: {a.strip()[:60]!r} vs {b.strip()[:60]!r}"
    ratio = difflib.SequenceMatcher(None, want, got).quick_ratio()
    return f"the recompiled PTX has {len(got.splitlines())} lines, the dumped {len(want.splitlines())} " \
           f"(similarity {ratio:.2f})"


def compile_ir(path: Path, cc: int, options: dict):
    """``triton.compile`` of one IR file for ``cuda:<cc>``, with a private throwaway cache and
    no dump/override side effects whatever the environment asks."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget

    with tempfile.TemporaryDirectory(prefix="ptxds-triton-recover-") as cache_dir, \
            knobs.cache.scope(), knobs.compilation.scope(), knobs.runtime.scope():
        knobs.cache.dir = cache_dir
        knobs.compilation.dump_ir = False
        knobs.compilation.override = False
        knobs.compilation.store_binary_only = False
        knobs.compilation.use_ir_loc = None
        knobs.runtime.override_arch = None
        return triton.compile(str(path), target=GPUTarget("cuda", cc, 32), options=dict(options))


def facts_of(compiled, stage: str, options: dict) -> dict:
    meta = compiled.metadata
    meta = meta._asdict() if hasattr(meta, "_asdict") else dict(meta)
    facts = {k: meta[k] for k in LAUNCH_FACT_KEYS if meta.get(k) is not None}
    num_ctas = int(facts.get("num_ctas") or 1)
    facts["cluster_dims"] = list(meta.get("cluster_dims") or (num_ctas, 1, 1))
    if stage == "ttir":  # only the TTIR compile takes num_stages; a TTGIR is already pipelined
        facts["num_stages"] = options["num_stages"]
    facts["triton_version"] = meta.get("triton_version")
    target = meta.get("target")
    facts["target"] = {"backend": "cuda", "arch": getattr(target, "arch", None) or (target or {}).get("arch")}
    return facts


def attempts(folder: Path, stem: str, ttgir: str, cc: int, base: dict) -> list:
    """(stage, IR path, options) to try, earliest stage first."""
    plans = []
    ttir_path, ttgir_path = folder / f"{stem}.ttir", folder / f"{stem}.ttgir"
    num_warps, num_ctas = ttgir_int_attr(ttgir, "num-warps"), ttgir_int_attr(ttgir, "num-ctas")
    if ttir_path.exists() and num_warps:
        for stages in num_stages_candidates(ttgir, cc):
            plans.append(("ttir", ttir_path, dict(base, num_warps=num_warps, num_ctas=num_ctas or 1,
                                                  num_stages=stages)))
    if ttgir_path.exists():
        plans.append(("ttgir", ttgir_path, dict(base)))
    return plans


def recover_launch_facts(folder: Path, stem: str, dumped_ptx: str) -> Recovery:
    """Recompile a dump folder's IR until one compile reproduces ``dumped_ptx`` (see module doc)."""
    version = installed_triton_version()
    recovery = Recovery(triton_version=version)
    ttgir = (folder / f"{stem}.ttgir").read_text(errors="replace") if (folder / f"{stem}.ttgir").exists() else ""
    try:
        want = normalize_ptx(dumped_ptx)
        cc = ir_target(ttgir, dumped_ptx)
    except Exception as exc:  # noqa: BLE001 - any unreadable input is this row's reason
        recovery.reason = f"cannot recompile {folder.name}/{stem}: {one_line(exc)}"
        return recovery
    recovery.target = f"cuda:{cc}"
    plans = attempts(folder, stem, ttgir, cc, ptx_options_of(dumped_ptx))
    if not plans:
        recovery.reason = (f"{folder.name} has neither {stem}.ttir (with a {stem}.ttgir for num_warps) nor "
                           f"{stem}.ttgir to recompile")
        return recovery
    differences, errors = [], []
    for stage, path, options in plans:
        label = f"{stage}" + (f" num_stages={options['num_stages']}" if stage == "ttir" else "")
        try:
            compiled = compile_ir(path, cc, options)
            got = normalize_ptx(compiled.asm["ptx"])
        except Exception as exc:  # noqa: BLE001 - a failed compile is one more try that did not match
            recovery.tried.append(f"{label}: {one_line(exc)}")
            errors.append(f"{path.name}: {one_line(exc)}")
            continue
        if got == want:
            recovery.tried.append(f"{label}: PTX identical")
            recovery.stage, recovery.options = stage, options
            recovery.facts = facts_of(compiled, stage, options)
            return recovery
        recovery.tried.append(f"{label}: PTX differs")
        differences.append((label, first_difference(want, got)))
    recovery.reason = mismatch_reason(folder.name, stem, version, cc, differences, errors)
    return recovery


def mismatch_reason(folder: str, stem: str, version: str, cc: int, differences: list, errors: list) -> str:
    tried = ", ".join(label for label, _ in differences) or "nothing compiled"
    what = (f"differs from the dumped PTX (last try, {differences[-1][0]}: {differences[-1][1]})"
            if differences else f"fails ({errors[-1]})")
    return (f"{folder}: recompiling {stem}'s IR with the installed Triton {version} for cuda:{cc} "
            f"(tried {tried}) {what}; the dump was written by another Triton version or other compile "
            f"options (a dump folder does not record its Triton version), so its dynamic shared memory "
            f"and scratch sizes are unknown: ingest the TRITON_CACHE_DIR, or dump again with Triton {version}")


def one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:300]
