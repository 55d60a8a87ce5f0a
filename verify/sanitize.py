"""Optional ``ptxds verify --sanitize``: run a member under NVIDIA compute-sanitizer
(memcheck, racecheck) and summarise its findings for the row's ``sanitizer`` column.

The member runs once, on its first trial's inputs, in a child Python process started by
compute-sanitizer (``python -m verify.sanitize ROW.json INPUTS.npz``). Buffers there have
no guard regions, so memcheck sees each allocation's true bounds. compute-sanitizer is
found through ``$PTXDS_COMPUTE_SANITIZER`` or ``PATH``; the column records which binary
and version ran.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

TOOLS = ("memcheck", "racecheck")
_SUMMARY = re.compile(r"=+\s+(?:ERROR SUMMARY: (\d+) errors?|RACECHECK SUMMARY: (\d+) hazards? displayed"
                      r"(?: \((\d+) errors?, (\d+) warnings?\))?)")
_FINDING = re.compile(r"=+\s+(?:Invalid|Program hit|Error|Race reported|Warning|Saved host backtrace)(.*)")


class SanitizerMissing(RuntimeError):
    """compute-sanitizer is not installed where ptxds can find it."""


def find_sanitizer() -> str:
    path = os.environ.get("PTXDS_COMPUTE_SANITIZER") or shutil.which("compute-sanitizer")
    if not path or not Path(path).is_file():
        raise SanitizerMissing("--sanitize needs NVIDIA compute-sanitizer: put it on PATH or set "
                               "PTXDS_COMPUTE_SANITIZER to its path")
    return path


def sanitizer_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [line.strip() for line in out.splitlines() if "ersion" in line]
    return lines[-1] if lines else out.strip()[:200]


def parse_report(text: str) -> dict:
    """{"errors": n, "warnings": n, "first": first finding line} from one tool's output."""
    errors = warnings = 0
    found = False
    for m in _SUMMARY.finditer(text):
        found = True
        if m.group(1) is not None:
            errors += int(m.group(1))
        else:
            errors += int(m.group(3) or m.group(2) or 0)
            warnings += int(m.group(4) or 0)
    first = next((m.group(0).strip("= ").strip() for m in _FINDING.finditer(text)), "")
    return {"errors": errors, "warnings": warnings, "first": first[:300], "summary_found": found}


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
        for tool in tools:
            command = [sanitizer, "--tool", tool, "--print-limit", "10", "--error-exitcode", "0",
                       sys.executable, "-m", "verify.sanitize", str(row_path), str(inputs_path)]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
                report = parse_report(done.stdout + done.stderr)
                if done.returncode != 0 and not report["summary_found"]:
                    report["failed"] = (done.stdout + done.stderr).strip().splitlines()[-1:][0][:300] \
                        if (done.stdout + done.stderr).strip() else f"exit code {done.returncode}"
            except subprocess.TimeoutExpired:
                report = {"errors": None, "failed": f"no result within {timeout:.0f} s"}
            report.pop("summary_found", None)
            result[tool] = report
    return result


def _run_member(row_path: str, inputs_path: str) -> None:
    """Child side: load the row without guards, run its launch sequence once."""
    from dataset_spec.model import KernelRecord
    from .driver import Context, check, cu
    from .row import load_row
    record = KernelRecord.from_json(Path(row_path).read_text())
    ctx = Context(0)
    row = load_row(record, ctx.stream, guards=False)
    with np.load(inputs_path) as data:
        inputs = {name: data[name] for name in data.files}
    row.prepare(inputs)
    row.enqueue()
    check(cu.cuStreamSynchronize(ctx.stream), "cuStreamSynchronize")


if __name__ == "__main__":
    _run_member(sys.argv[1], sys.argv[2])
    print(json.dumps({"ran": True}))
