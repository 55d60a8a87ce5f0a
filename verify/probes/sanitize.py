"""``ptxds verify --sanitize``: run a member under NVIDIA compute-sanitizer (memcheck,
racecheck), summarise its findings for the row's ``sanitizer`` column, and turn them into
a status (``sanitizer_status``, ``racing_members``).

The member runs once, on its first trial's inputs, in a child Python process started by
compute-sanitizer (``python -m verify.probes.sanitize ROW.json INPUTS.npz``). There every buffer
is its own allocation of exactly its size, with no guard region, and between any two
buffers lies a spacer allocation that is freed before the launch: memcheck knows each
allocation's exact bounds and treats freed memory as invalid, so a read past a buffer's
end (or before its start) is reported instead of landing, unseen, in a neighbour or a
guard. The child reports the smallest gap it got between two buffers. compute-sanitizer
is found through ``$PTXDS_COMPUTE_SANITIZER`` or ``PATH``; the column records which
binary and version ran.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np

from dataset_spec.errors import PtxdsError

TOOLS = ("memcheck", "racecheck")


class SanitizerMissing(PtxdsError, RuntimeError):
    """compute-sanitizer is not installed where ptxds can find it."""


def find_sanitizer() -> str:
    path = os.environ.get("PTXDS_COMPUTE_SANITIZER") or shutil.which("compute-sanitizer")
    if not path or not Path(path).is_file():
        raise SanitizerMissing("--sanitize needs NVIDIA compute-sanitizer: put it on PATH or set "
                               "PTXDS_COMPUTE_SANITIZER to its path")
    return path


@functools.lru_cache(maxsize=None)
def sanitizer_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [line.strip() for line in out.splitlines() if "ersion" in line]
    return lines[-1] if lines else out.strip()[:200]


_PREFIX = re.compile(r"^=+ ?")
_ERROR_SUMMARY = re.compile(r"^ERROR SUMMARY: ([\d,]+) errors?\s*$")
_RACE_SUMMARY = re.compile(r"^RACECHECK SUMMARY: ([\d,]+) hazards? displayed"
                           r"(?: \(([\d,]+) errors?, ([\d,]+) warnings?\))?")
_INVALID_ACCESS = re.compile(r"^Invalid (__\w+__) (read|write|atomic) of size")
_RACE = re.compile(r"^(Error|Warning): Race reported between")
# memcheck's other device-side reports (hardware exceptions, misaligned or out-of-range
# shared/local addresses, device malloc/free errors, device asserts, barrier errors).
_DEVICE_ERROR = re.compile(r"^(Misaligned|Out-of-range|Illegal|Hardware exception|Invalid PC|Malloc/Free error|"
                           r"Device-side assert|Barrier error|Cuda Barrier|Stack overflow|Warp|Lane|Unknown)")
_CHILD_DONE = re.compile(r'^\{"ran": true.*\}$', re.M)
MEMBER_MARK = "ptxds-racecheck-member "
# The every-member racecheck's process prints every hazard it can (the limit is the whole
# process's, not a member's; racecheck_server.py starts a new process well before it).
BATCH_PRINT_LIMIT = 10000
RACECHECK_FULL_GRID_BLOCKS = 256
RACECHECK_FEW_BLOCKS = 8
REPORT_GRACE_SECONDS = 0.05
SPACER_MIN_BYTES = 1 << 20       # the smallest gap left between two buffers
SPACER_MAX_BYTES = 256 << 20     # spacers match the largest buffer up to this size


def _number(text: Optional[str]) -> int:
    return int(text.replace(",", "")) if text else 0


def _blocks(text: str) -> list:
    """compute-sanitizer's report lines grouped into findings: (header, detail lines).
    A finding's header follows the ``=========`` prefix directly; its details are indented."""
    blocks = []
    for line in text.splitlines():
        if not _PREFIX.match(line):
            continue
        content = _PREFIX.sub("", line, count=1).rstrip()
        if not content.strip():
            continue
        if content[0].isspace() and blocks:
            blocks[-1][1].append(content.strip())
        elif not content[0].isspace():
            blocks.append((content, []))
    return blocks


def _shown(header: str, details: list) -> str:
    where = [d for d in details if not d.startswith(("Saved host", "Host Frame", "Device Frame"))][:4]
    return " ".join([header] + where)[:400]


def parse_report(text: str) -> dict:
    """One tool's findings from its output: ``errors`` and ``warnings`` (the tool's summary
    counts), ``invalid_reads`` / ``invalid_writes`` (memcheck out-of-bounds accesses; an
    atomic counts as a write), ``device_errors`` (other device-side reports, misaligned
    accesses included), ``api_errors`` (failed API calls), ``race_errors`` /
    ``race_warnings`` (racecheck reports), and the first line of each kind. Counts of
    findings are of those printed (see ``--print-limit``); ``errors`` is the total."""
    report = {"errors": 0, "warnings": 0, "invalid_reads": 0, "invalid_writes": 0, "device_errors": 0,
              "api_errors": 0, "race_errors": 0, "race_warnings": 0, "first": "", "summary_found": False}
    firsts = {}
    for header, details in _blocks(text):
        summary, race_summary = _ERROR_SUMMARY.match(header), _RACE_SUMMARY.match(header)
        if summary:
            report["summary_found"] = True
            report["errors"] += _number(summary.group(1))
            continue
        if race_summary:
            report["summary_found"] = True
            if race_summary.group(2) is not None:
                report["errors"] += _number(race_summary.group(2))
                report["warnings"] += _number(race_summary.group(3))
            else:
                report["errors"] += _number(race_summary.group(1))
            continue
        access, race = _INVALID_ACCESS.match(header), _RACE.match(header)
        if access and any("is misaligned" in d for d in details):
            kind = "device_errors"
        elif access:
            kind = "invalid_reads" if access.group(2) == "read" else "invalid_writes"
        elif race:
            kind = "race_errors" if race.group(1) == "Error" else "race_warnings"
        elif header.startswith("Program hit "):
            kind = "api_errors"
        elif _DEVICE_ERROR.match(header):
            kind = "device_errors"
        else:
            continue
        report[kind] += 1
        firsts.setdefault(kind, _shown(header, details))
        report["first"] = report["first"] or firsts[kind]
    for kind, line in firsts.items():
        report[f"first_{kind.rstrip('s')}"] = line
    child = _CHILD_DONE.findall(text)
    if child:
        report.update({k: v for k, v in json.loads(child[-1]).items() if k == "min_gap_bytes"})
    return report


def sanitizer_status(findings: dict) -> Optional[tuple]:
    """(status, message) that memcheck's findings give a member, or None when they give
    none (clean, not run, or the tool failed to run: that is recorded, never a status).
    Invalid writes win over invalid reads, which win over other device errors; failed API
    calls alone (often a consequence, or the host side's business) change nothing."""
    memcheck = (findings or {}).get("memcheck") or {}
    if memcheck.get("failed") or memcheck.get("errors") is None:
        return None
    for kind, status in (("invalid_writes", "out_of_bounds_write"), ("invalid_reads", "out_of_bounds_read"),
                         ("device_errors", "crashed")):
        if memcheck.get(kind):
            return status, (f"memcheck: {memcheck[kind]} {kind.replace('_', ' ')} reported "
                            f"({memcheck.get('errors')} errors in all); first: {memcheck.get(f'first_{kind[:-1]}', '')}")
    return None


def race_errors(findings: dict) -> Optional[int]:
    """racecheck's hazard errors for a member, or None when racecheck did not run or failed."""
    race = (findings or {}).get("racecheck") or {}
    if race.get("failed") or race.get("errors") is None:
        return None
    return int(race["errors"])


def racing_members(errors: dict) -> dict:
    """build_key -> message for the members whose racecheck hazards the group's other
    race-checked members lack. ``errors``: build_key -> race_errors (None: not checked).

    A hazard every other checked member shares is not held against one member: it says
    more about the sanitizer (e.g. async-proxy copies it cannot order) than about the
    member. A member alone in its group has no one to share with, so its hazard counts."""
    checked = {key: n for key, n in errors.items() if n is not None}
    racy = {key for key, n in checked.items() if n > 0}
    out = {}
    for key in sorted(racy):
        others = [other for other in checked if other != key]
        if others and all(other in racy for other in others):
            continue
        clean = len([other for other in others if other not in racy])
        out[key] = (f"racecheck: {checked[key]} shared-memory hazard error(s); "
                    f"{clean} of the group's {len(others)} other race-checked member(s) have none")
    return out


def uses_shared_memory(record) -> bool:
    """Whether any entry of the row declares static shared memory or any launch asks for
    dynamic shared memory (racecheck only checks shared memory). Unknown resources: True."""
    if any(launch.dynamic_smem for launch in record.launches):
        return True
    if record.resources:
        return any(r.shared_static for r in record.resources)
    return ptx_uses_shared_memory(record.ptx, {launch.entry for launch in record.launches})


def ptx_uses_shared_memory(ptx: str, entries: set) -> bool:
    """Whether any of ``entries`` (or a function the module holds, which they may call)
    declares or names shared memory in its PTX; True where the PTX does not parse."""
    from ptx_tools.parse import parse_ptx
    try:
        module = parse_ptx(ptx)
    except Exception:
        return True
    launched = [f for f in module.entries if f.name in entries]
    if len(launched) < len(entries) or any(f.body is None for f in launched):
        return True  # an entry the module does not define: unknown
    bodies = [f.body for f in launched] + [f.body or "" for f in module.funcs]
    names = "|".join(re.escape(v.name) for v in module.variables if v.state_space == "shared")
    pattern = re.compile(r"\.shared" + (rf"|\b(?:{names})\b" if names else ""))
    return any(pattern.search(body) for body in bodies)


def run_sanitizer(record_json: str, inputs: dict, tools=TOOLS, timeout: float = 300.0,
                  sanitizer: Optional[str] = None) -> dict:
    """Findings per tool for one member; ``inputs``: name -> storage array (first trial)."""
    sanitizer = sanitizer or find_sanitizer()
    result = {"tool": sanitizer, "version": sanitizer_version(sanitizer)}
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory(prefix="ptxds-sanitize-") as tmp:
        row_path, inputs_path = Path(tmp) / "row.json", Path(tmp) / "inputs.npz"
        row_path.write_text(record_json)
        np.savez(inputs_path, **inputs)
        record = record_or_none(record_json)
        for tool in tools:
            if tool == "racecheck" and record is not None and not uses_shared_memory(record):
                result[tool] = {"errors": 0, "warnings": 0,
                                "skipped": "no shared memory: racecheck checks shared memory only"}
                continue
            command = [sanitizer, "--tool", tool, "--print-limit", "10", "--error-exitcode", "0",
                       sys.executable, "-m", "verify.probes.sanitize", str(row_path), str(inputs_path)]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
                report = _judge_run(parse_report(done.stdout + done.stderr), done.stdout + done.stderr,
                                    done.returncode)
            except subprocess.TimeoutExpired:
                report = {"errors": None, "failed": f"no result within {timeout:.0f} s"}
            result[tool] = report
    return result




def racecheck_grid(grid: tuple, cluster: tuple = (1, 1, 1), whole_up_to: int = RACECHECK_FULL_GRID_BLOCKS) -> tuple:
    """The grid a launch gets under the every-member racecheck: its own when it has at most
    RACECHECK_FULL_GRID_BLOCKS blocks, else the first blocks of each dimension, at most
    RACECHECK_FEW_BLOCKS in all (whole clusters). Shared memory is a block's own, so a
    hazard is found in whichever block has it; racecheck made a CUTLASS ``llm`` GEMM take
    about 40 s per member whole, and the first blocks of
    each dimension (every split-K slice's predecessors included) run the same code as the
    rest, edge tiles aside."""
    grid, cluster = tuple(int(g) for g in grid), tuple(max(1, int(c)) for c in cluster)
    if grid[0] * grid[1] * grid[2] <= whole_up_to:
        return grid
    budget, shrunk = RACECHECK_FEW_BLOCKS, []
    for size, whole in zip(grid, cluster):
        keep = max(whole, min(size, budget) // whole * whole)
        shrunk.append(min(size, keep))
        budget = max(1, budget // shrunk[-1])
    return tuple(shrunk)


def racecheck_record(record, salt: str = "", whole_up_to: int = RACECHECK_FULL_GRID_BLOCKS):
    """``record`` as racecheck runs it, and whether only some of its blocks work. An entry
    whose every launch has more than ``whole_up_to`` blocks keeps its grid, and
    all but a sample of RACECHECK_FEW_BLOCKS blocks (whole clusters) leave at their first
    instruction (ptx_tools.instrument.block_sample): the kernel sees the grid of every other
    run, and which blocks are watched depends on ``salt`` (the run's trial salt) and the
    member. PTX that cannot be sampled, or an entry launched both small and large, gets its
    launches cut (``racecheck_grid``) instead."""
    import dataclasses
    import hashlib
    from ptx_tools.instrument.block_sample import BlockSample, sampled_copy
    from ptx_tools.instrument.probe import ProbeError

    def blocks(launch):
        return int(launch.grid[0]) * int(launch.grid[1]) * int(launch.grid[2])

    by_entry: dict = {}
    for launch in record.launches:
        by_entry.setdefault(launch.entry, []).append(launch)
    def cut():
        launches = [dataclasses.replace(launch, grid=racecheck_grid(launch.grid, launch.cluster, whole_up_to))
                    for launch in record.launches]
        return dataclasses.replace(record, launches=launches), any(
            new.grid != old.grid for new, old in zip(launches, record.launches))

    samples = []
    for entry, launches in by_entry.items():
        large = [blocks(launch) > whole_up_to for launch in launches]
        if not any(large):
            continue
        if not all(large):  # one prologue per entry cannot sample one launch and keep another whole
            return cut()
        per_cluster = max(1, max(int(c) for launch in launches for c in [
            int(launch.cluster[0]) * int(launch.cluster[1]) * int(launch.cluster[2])]))
        units = min(blocks(launch) // per_cluster for launch in launches)
        count = max(1, RACECHECK_FEW_BLOCKS // per_cluster)
        if units <= count:
            continue
        digest = hashlib.sha256(f"{salt}:{record.build_key}:{entry}".encode()).digest()
        start = int.from_bytes(digest[:8], "little") % (units - count + 1)
        samples.append(BlockSample(entry, start, count, clustered=per_cluster > 1))
    if not samples:
        return record, False
    try:
        return dataclasses.replace(record, ptx=sampled_copy(record.ptx, samples)), True
    except ProbeError:
        return cut()


def record_or_none(record_json: str):
    try:
        from dataset_spec.model import KernelRecord
        return KernelRecord.from_json(record_json)
    except Exception:  # the child reports the same problem in its own words
        return None


def member_report(segment: str, stopped: str) -> dict:
    """racecheck's findings for one member from its share of the process's output (from
    its start mark on): the hazards printed before its done line; without that line the
    member stopped the process (``stopped`` says how) and gets a ``failed`` report (errors
    None) with its last words."""
    report = parse_report(segment)
    report.pop("summary_found", None)
    if _CHILD_DONE.search(segment):
        report["errors"], report["warnings"] = report["race_errors"], report["race_warnings"]
        return report
    lines = [line for line in segment.strip().splitlines()
             if line.strip() and not _PREFIX.match(line) and not line.startswith(MEMBER_MARK)]
    return dict(report, errors=None, failed=f"the member did not finish under racecheck ({stopped}): "
                f"{lines[-1][:240] if lines else 'no message'}")


def _judge_run(report: dict, output: str, returncode: int) -> dict:
    """Marks a run that proves nothing as ``failed`` (errors None): no summary from the
    tool, or a member that never reached its launch (the child's last words are kept).
    A member that did launch and was stopped by a reported device error is a finding."""
    found = report.pop("summary_found", False)
    launched = bool(_CHILD_DONE.search(output)) or any(
        report.get(k) for k in ("invalid_reads", "invalid_writes", "device_errors", "race_errors", "race_warnings"))
    if found and launched:
        return report
    lines = [line for line in output.strip().splitlines() if line.strip() and not _PREFIX.match(line)]
    last = lines[-1][:300] if lines else f"exit code {returncode}"
    why = "no summary from the tool" if not found else "the member did not run to its launch"
    return dict(report, errors=None, failed=f"{why}: {last}")


def spacer_bytes(sizes: list) -> int:
    """Bytes of each spacer: as large as the largest buffer, within [1 MiB, 256 MiB]."""
    return int(min(max([SPACER_MIN_BYTES] + [int(s) for s in sizes]), SPACER_MAX_BYTES))


def smallest_gap(spans: list) -> Optional[int]:
    """Smallest distance in bytes between two of the (start, end) spans, None for fewer than two."""
    spans = sorted(spans)
    gaps = [b_start - a_end for (_, a_end), (b_start, _) in zip(spans, spans[1:])]
    return min(gaps) if gaps else None


def load_isolated(record, stream, cubin: Optional[bytes] = None):
    """``record`` loaded for a memory checker: its module from ``cubin`` (its PTX assembled
    ahead) or through the driver's JIT, every
    buffer its own allocation of exactly its size, each pair separated by a spacer
    allocation freed before returning (memory memcheck treats as invalid). Returns the
    LoadedRow and the smallest gap between two buffers."""
    from ..member.args import entry_params, pack_args
    from ..device.driver import DeviceBuffer, GuardedBuffer, Module, PreparedLaunch, encode_tensor_map
    from ..member.row import LoadedRow
    module = Module.from_cubin(cubin) if cubin else Module.from_ptx(record.ptx)
    specs = {buf.name: buf for buf in record.buffers()}
    spacer = spacer_bytes([buf.nbytes for buf in specs.values()])
    buffers, spacers = {}, []
    try:
        for name, buf in specs.items():
            # The driver serves small and large requests from different pools: a spacer of
            # the buffer's own size lands beside it, a large one beside large buffers.
            spacers += [DeviceBuffer(spacer), DeviceBuffer(max(buf.nbytes, 256))]
            buffers[name] = GuardedBuffer(buf.nbytes, 0)  # guard 0: an exactly sized plain allocation
        spacers += [DeviceBuffer(spacer)] + [DeviceBuffer(max(buf.nbytes, 256)) for buf in specs.values()]
        for space in spacers:
            space.free()
        addresses = {name: b.address for name, b in buffers.items()}
        launches = []
        for launch in record.launches:
            function = module.function(launch.entry)
            packed = pack_args(launch, addresses, entry_params(record.ptx, launch.entry), encode_tensor_map)
            launches.append(PreparedLaunch(function, launch.grid, launch.block, packed.buffer, packed.offsets,
                                           stream, launch.cluster, launch.dynamic_smem))
    except BaseException:
        for space in spacers:
            space.free()
        for b in buffers.values():
            b.free()
        module.unload()
        raise
    gap = smallest_gap([(b.address, b.address + max(b.nbytes, 1)) for b in buffers.values()])
    return LoadedRow(record.build_key, module, buffers, specs, launches, "cubin" if cubin else "driver_jit"), gap


_LAST_INPUTS: dict = {}  # the server child's last inputs file -> its arrays (a group's members share it)


def _inputs(inputs_path: str) -> dict:
    if inputs_path not in _LAST_INPUTS:
        _LAST_INPUTS.clear()
        with np.load(inputs_path) as data:
            _LAST_INPUTS[inputs_path] = {name: data[name] for name in data.files}
    return _LAST_INPUTS[inputs_path]


def _run_once(ctx, row_path: str, inputs_path: str, cubin_path: Optional[str] = None,
              seconds: Optional[dict] = None) -> Optional[int]:
    """Child side: the row loaded with isolated buffers, its launch sequence run once and
    finished, the row unloaded; the smallest gap between two of its buffers. ``seconds``
    gets each phase's wall time (load, prepare, run)."""
    from dataset_spec.model import KernelRecord
    from ..device.driver import check, cu
    seconds = {} if seconds is None else seconds
    start = time.perf_counter()
    cubin = Path(cubin_path).read_bytes() if cubin_path else None
    row, gap = load_isolated(KernelRecord.from_json(Path(row_path).read_text()), ctx.stream, cubin)
    loaded = time.perf_counter()
    row.prepare(_inputs(inputs_path))
    check(cu.cuStreamSynchronize(ctx.stream), "cuStreamSynchronize")
    prepared = time.perf_counter()
    row.enqueue()
    check(cu.cuStreamSynchronize(ctx.stream), "cuStreamSynchronize")
    seconds.update(load=loaded - start, prepare=prepared - loaded, run=time.perf_counter() - prepared)
    row.free()
    return gap


def _serve() -> None:
    """Child side of ``racecheck_server.RacecheckServer``: for each job line on stdin
    ({"index", "row", "inputs"}), one member run between its start mark and its done line."""
    from ..device.driver import Context
    ctx = Context(int(os.environ.get("PTXDS_SANITIZE_DEVICE", "0")))
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        print(f"{MEMBER_MARK}{job['index']}", flush=True)
        seconds: dict = {}
        gap = _run_once(ctx, job["row"], job["inputs"], job.get("cubin"), seconds)
        # the tool prints the member's hazards when its kernels end; a moment lets them reach
        # the pipe before the done line, which closes the member's share of the output
        time.sleep(REPORT_GRACE_SECONDS)
        print(json.dumps({"ran": True, "member": job["index"], "min_gap_bytes": gap,
                          "seconds": {k: round(v, 4) for k, v in seconds.items()}}), flush=True)


def _run_member(row_path: str, inputs_path: str) -> None:
    """Child side of ``run_sanitizer``: one member run once."""
    from ..device.driver import Context
    gap = _run_once(Context(int(os.environ.get("PTXDS_SANITIZE_DEVICE", "0"))), row_path, inputs_path)
    print(json.dumps({"ran": True, "min_gap_bytes": gap}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        _serve()
    else:
        _run_member(sys.argv[1], sys.argv[2])
