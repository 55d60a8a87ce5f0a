"""One compute-sanitizer racecheck process per GPU for a whole verify run.

The every-member racecheck (runner ``_racecheck_members``) used to start a sanitizer
process per group: Python, numpy, the CUDA bindings and a context under the tool, about a
second and a half each time, most of its cost on a suite of small groups. A server starts
that process once (``python -m verify.probes.sanitize --serve``) and sends it one member at a
time on its stdin; the child prints a mark before the member and a done line after it,
and racecheck's hazards between the two are the member's (``sanitize.member_report``).

A member that crashes the child, or outlives its time, gets a ``failed`` finding (which
changes no status) and the process is started again for the next one. racecheck's print
limit is the process's, so the process is also started again before the hazards it
printed could reach it (a later member's hazards would go unprinted).

A member may come with a cubin of its racecheck PTX, assembled ahead on the host's cores
(the runner hands it to the assembly pool when the member passes), so the child loads it
instead of JIT-compiling under the tool. ``RacecheckServers`` runs several such processes on
one GPU and hands each member to whichever is free: racecheck watches a handful of blocks,
so one instrumented member leaves most of the GPU idle. Each child's done line carries its
seconds per phase (load, prepare, run), summed in ``seconds``.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

import numpy as np

from .sanitize import (BATCH_PRINT_LIMIT, MEMBER_MARK, find_sanitizer, member_report, record_or_none,
                       sanitizer_version, uses_shared_memory)

STARTUP_SECONDS = 60.0
_EOF = object()


class RacecheckServer:
    """racecheck of members, one at a time, in one long-lived sanitizer process on GPU
    ``device`` (an ordinal among the visible GPUs). Not thread-safe: one per GPU thread."""

    def __init__(self, sanitizer: Optional[str] = None, device: int = 0):
        self.sanitizer = sanitizer or find_sanitizer()
        self.device = int(device)
        self.head = {"tool": self.sanitizer, "version": sanitizer_version(self.sanitizer)}
        self.tmp = tempfile.TemporaryDirectory(prefix="ptxds-racecheck-")
        self.proc: Optional[subprocess.Popen] = None
        self.lines: "queue.Queue" = queue.Queue()
        self.printed = 0    # hazards this process has printed (its print limit is the process's)
        self.last_words = ""
        self.sent = 0
        self.starts = 0
        self.seconds: dict = defaultdict(float)  # phase -> the children's seconds (load, prepare, run)

    def check(self, members: list, timeout_per_member: float = 20.0) -> dict:
        """build_key -> findings (``{"racecheck": {...}}`` with the tool and its version), as
        ``sanitize.run_sanitizer`` gives them. ``members``: [(build_key, record_json, inputs)
        or (build_key, record_json, inputs, cubin)]; members without shared memory are skipped."""
        with InputFiles(self.tmp.name) as files:
            return {member[0]: self.check_one(member, files, timeout_per_member) for member in members}

    def check_one(self, member: tuple, files: "InputFiles", timeout: float) -> dict:
        """One member's findings; its inputs' file from ``files`` (written once per inputs)."""
        key, record_json, inputs = member[:3]
        cubin = member[3] if len(member) > 3 else None
        record = record_or_none(record_json)
        if record is not None and not uses_shared_memory(record):
            return dict(self.head, racecheck={"errors": 0, "warnings": 0, "skipped": "no shared "
                                              "memory: racecheck checks shared memory only"})
        return dict(self.head, racecheck=self._one(record_json, files.path(inputs), timeout, cubin))

    def _one(self, record_json: str, inputs_path: Path, timeout: float, cubin: Optional[bytes] = None) -> dict:
        if self.printed >= BATCH_PRINT_LIMIT // 2:
            self.close()
        started_now = self.proc is None or self.proc.poll() is not None
        if started_now:
            self._start()
        index, self.sent = self.sent, self.sent + 1
        row_path = Path(self.tmp.name) / f"row{index}.json"
        row_path.write_text(record_json)
        job = {"index": index, "row": str(row_path), "inputs": str(inputs_path)}
        if cubin:
            job["cubin"] = str(row_path.with_suffix(".cubin"))
            Path(job["cubin"]).write_bytes(cubin)
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
        except OSError:
            pass  # the child is gone: what it printed says why, below
        segment, stopped = self._until_done(index, timeout + (STARTUP_SECONDS if started_now else 0.0))
        row_path.unlink(missing_ok=True)
        if cubin:
            Path(job["cubin"]).unlink(missing_ok=True)
        self._add_seconds(segment)
        if stopped:
            self.close(kill=stopped.startswith("no result"))
        if not segment:
            return {"errors": None, "failed": f"racecheck did not start: {self.last_words or stopped}"}
        report = member_report(segment, stopped)
        self.printed += int(report.get("race_errors") or 0) + int(report.get("race_warnings") or 0)
        return report

    def _add_seconds(self, segment: str) -> None:
        done = segment.rstrip().rsplit("\n", 1)[-1]
        if done.startswith('{"ran": true'):
            try:
                for phase, seconds in (json.loads(done).get("seconds") or {}).items():
                    self.seconds[phase] += float(seconds)
            except (ValueError, TypeError, AttributeError):
                pass

    def _until_done(self, index: int, timeout: float) -> tuple:
        """The child's output for member ``index``, from its start mark to its done line
        ('' when the mark never came), and '' or how the process stopped."""
        mark, done = f"{MEMBER_MARK}{index}", f'{{"ran": true, "member": {index},'
        lines, deadline = None, time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return "\n".join(lines or ()), f"no result within {timeout:.0f} s"
            if line is _EOF:
                return "\n".join(lines or ()), f"exit code {self.proc.wait()}"
            if lines is None:
                if line == mark:
                    lines = [line]
                elif line.strip():
                    self.last_words = line.strip()[:240]  # what a process that never starts says
                continue
            lines.append(line)
            if line.startswith(done):
                return "\n".join(lines), ""

    def _start(self) -> None:
        root = str(Path(__file__).resolve().parents[1])
        env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PTXDS_SANITIZE_DEVICE=str(self.device))
        command = [self.sanitizer, "--tool", "racecheck", "--print-limit", str(BATCH_PRINT_LIMIT),
                   "--error-exitcode", "0", sys.executable, "-m", "verify.probes.sanitize", "--serve"]
        self.lines = queue.Queue()
        self.printed = 0
        self.last_words = ""
        self.starts += 1
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1, env=env)
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True,
                         name="racecheck-reader").start()

    @staticmethod
    def _read(proc: subprocess.Popen, lines: "queue.Queue") -> None:
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(_EOF)

    def close(self, kill: bool = False) -> None:
        """Ends the process: its stdin closed, then killed if it does not exit (at once with
        ``kill``: a member that outlived its time is still running)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=0.1 if kill else 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def shutdown(self) -> None:
        self.close()
        self.tmp.cleanup()


class InputFiles:
    """Each distinct inputs dict written once as an ``.npz`` (a group's members share their
    first trial), removed on exit; safe to share between threads."""

    def __init__(self, folder: str):
        self.folder = folder
        self.written: dict = {}  # id(inputs) -> its file
        self.lock = threading.Lock()
        self.inputs: list = []   # kept alive so no id is reused while its file exists

    def path(self, inputs: dict) -> Path:
        with self.lock:
            if id(inputs) not in self.written:
                self.written[id(inputs)] = Path(self.folder) / f"inputs{len(self.written)}-{os.getpid()}-{id(self)}.npz"
                self.inputs.append(inputs)
                np.savez(self.written[id(inputs)], **inputs)
            return self.written[id(inputs)]

    def __enter__(self) -> "InputFiles":
        return self

    def __exit__(self, *exc) -> None:
        for path in self.written.values():
            path.unlink(missing_ok=True)


class RacecheckServers:
    """``count`` racecheck processes on GPU ``device``, each member given to whichever is
    free (members are independent runs: one process's hazards are its member's alone).
    Processes start on first use; ``seconds`` sums every child's phases."""

    def __init__(self, sanitizer: Optional[str] = None, device: int = 0, count: int = 1):
        self.servers = [RacecheckServer(sanitizer, device) for _ in range(max(1, int(count)))]
        self.threads = ThreadPoolExecutor(max_workers=len(self.servers), thread_name_prefix="racecheck")
        self.tmp = tempfile.TemporaryDirectory(prefix="ptxds-racecheck-inputs-")

    @property
    def starts(self) -> int:
        return sum(server.starts for server in self.servers)

    @property
    def seconds(self) -> dict:
        total: dict = defaultdict(float)
        for server in self.servers:
            for phase, seconds in server.seconds.items():
                total[phase] += seconds
        return dict(total)

    def check(self, members: list, timeout_per_member: float = 20.0) -> dict:
        """As ``RacecheckServer.check``, the members spread over the processes.
        ``timeout_per_member`` is a member's time alone: a member that fills the GPU (a whole
        grid of 256 blocks) shares it with the others, so each gets that times the number of
        processes at work."""
        todo: "queue.Queue" = queue.Queue()
        for member in members:
            todo.put(member)
        results: dict = {}

        def drain(server: RacecheckServer) -> None:
            while True:
                try:
                    member = todo.get_nowait()
                except queue.Empty:
                    return
                results[member[0]] = server.check_one(member, files, timeout_per_member * len(busy))

        busy = self.servers[:max(1, min(len(self.servers), len(members)))]
        with InputFiles(self.tmp.name) as files:
            for future in [self.threads.submit(drain, server) for server in busy]:
                future.result()
        return results

    def check_alone(self, members: list, timeout_per_member: float = 20.0) -> dict:
        """As ``check``, one member at a time in one process, nothing beside it."""
        return self.servers[0].check(members, timeout_per_member)

    def shutdown(self) -> None:
        for server in self.servers:
            server.shutdown()
        self.threads.shutdown(wait=False)
        self.tmp.cleanup()
