"""GPU worker processes: run a row's launch sequence in isolation, under a parent's watchdog.

A worker keeps one CUDA context for many rows (fast), but a trap, illegal address or
misaligned access kills a context for good, so after such an error the worker reports it
and exits; the parent (``GpuWorker``) starts a fresh process for the next row. A row that
hangs is killed by the parent after its timeout. The worker only moves bits; the parent
judges them (``outcome.classify``).
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import time

from typing import Optional

import numpy as np

from .l2flush import L2Flush
from .outcome import CheckResult, TrialRun, inputs_changed

HELLO_TIMEOUT = 120.0  # first context creation can take a while on a cold GPU


def flush_buffer(ctx) -> L2Flush:
    """The L2 flush ``timing.time_launches`` runs before each sample: a buffer of twice
    the GPU's L2 (at least l2flush.FLUSH_MIN_BYTES), written, then read back."""
    return L2Flush(ctx.info.l2_bytes, ctx.info.sm_count)


class WorkerTimeout(RuntimeError):
    """The worker did not answer within the job's timeout and was killed."""


class WorkerDied(RuntimeError):
    """The worker process ended without answering."""


# --------------------------------------------------------------------------------------
# Worker side (runs in the child process)
# --------------------------------------------------------------------------------------

class _Worker:
    def __init__(self, conn, ordinal: int):
        from .driver import Context, sm_clock_mhz
        self.conn = conn
        self.ctx = Context(ordinal)
        self.flush = flush_buffer(self.ctx)
        self.row = None  # the loaded row (row.LoadedRow), kept for its timing job
        self.inputs: dict = {}
        self.inputs_group = None
        self.sm_clock = sm_clock_mhz
        self.hold = None  # hold.StreamHold, made on the first timing job

    # ---- row set-up -------------------------------------------------------------------
    def _load_row(self, record, cubin: Optional[bytes]) -> str:
        from .row import load_row
        if self.row is not None:
            self.row.free()
            self.row = None
        self.row = load_row(record, self.ctx.stream, cubin)
        return self.row.load_path

    def _prepare(self, inputs: dict, seed: int) -> None:
        self.row.prepare(inputs, seed)

    def _run_once(self) -> None:
        from .driver import check, cu
        for launch in self.row.launches:
            launch.enqueue()
        check(cu.cuStreamSynchronize(self.ctx.stream), "cuStreamSynchronize")

    def _download(self, roles) -> dict:
        from .inputs import STORAGE_NUMPY
        out = {}
        for name, buf in self.row.buffers.items():
            spec = self.row.specs[name]
            if spec.role in roles:
                out[name] = buf.download(STORAGE_NUMPY[spec.dtype], spec.shape)
        return out

    # ---- jobs -------------------------------------------------------------------------
    def check_job(self, job: dict) -> CheckResult:
        from dataset_spec.model import KernelRecord
        from .args import ArgError
        from .driver import DriverError
        if job.get("group") != self.inputs_group:
            self.inputs, self.inputs_group = {}, job.get("group")
        self.inputs.update(job.get("inputs") or {})
        record = KernelRecord.from_json(job["record"])
        seconds: dict = {}
        clock = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            seconds[stage] = seconds.get(stage, 0.0) + now - clock
            clock = now
        try:
            load_path = self._load_row(record, job.get("cubin"))
            lap("load")
        except ArgError as exc:
            return CheckResult(error="arg_error", message=str(exc))
        except DriverError as exc:
            kind = "jit_failed" if exc.call.startswith(("cuModuleLoad", "cuModuleGetFunction")) else "launch_failed"
            return CheckResult(error="crashed" if exc.sticky else kind, message=str(exc), fatal=exc.sticky)
        runs = []
        for trial, key, seed in job["trials"]:
            inputs = self.inputs[key]
            outputs, out_of_bounds, after = [], [], {}
            for rerun in (False, True):  # the rerun checks determinism
                self._prepare(inputs, seed)
                lap("upload")
                try:
                    self._run_once()
                except DriverError as exc:
                    during_launch = exc.call == "cuLaunchKernelEx" and not exc.sticky
                    return CheckResult(runs=runs, error="launch_failed" if during_launch else "crashed",
                                       message=f"trial {trial}: {exc}", fatal=exc.sticky, load_path=load_path)
                lap("kernel")
                outputs.append(self._download(("out", "inout")))
                if not rerun:  # inputs are uploaded afresh before each run: the first run tells
                    after = self._download(("in",))
                out_of_bounds = out_of_bounds or self.row.guard_hits()
                lap("download")
            before = {name: inputs[name] for name in after}
            same = not inputs_changed(outputs[0], outputs[1])
            runs.append(TrialRun(trial, outputs[0], None if same else outputs[1], inputs_changed(before, after),
                                 out_of_bounds))
            lap("compare")
        return CheckResult(runs=runs, load_path=load_path, seconds=seconds)

    def time_job(self, job: dict) -> dict:
        from .driver import check, cu
        from .inputs import init_array
        from .kernel_clock import shared_clock
        from .timing import time_launches
        if self.row is None or self.row.build_key != job["build_key"]:
            return {"error": "crashed", "message": "timing asked for a row that is not loaded", "fatal": False}
        stream = self.ctx.stream
        reinit = []
        for name, buf in self.row.buffers.items():
            spec = self.row.specs[name]
            if spec.role == "scratch" and spec.init is not None:
                host = np.ascontiguousarray(init_array(spec))
                self.row.init_host[name] = host
                reinit.append((buf, host, not host.any()))

        def before():
            for buf, host, zero in reinit:
                if zero:
                    buf.fill_bytes(0, stream)
                else:
                    buf.upload_async(host, stream)

        if self.hold is None:
            from .hold import StreamHold
            self.hold = StreamHold(stream)
        # A copy from pageable host memory may wait for the stream, which a held stream
        # never frees: such rows are enqueued ahead without the hold.
        hold = self.hold if all(zero for _, _, zero in reinit) else None
        # CUPTI is started once per worker process, on its first timing job; where it cannot
        # be, every row is timed with events and says why.
        clock, no_clock_reason = shared_clock()
        timing = time_launches(stream, self.row.launches, self.flush, before if reinit else None, hold=hold,
                               budget_s=job.get("budget_s", 1.0), max_samples=job.get("max_samples", 2000),
                               kernel_clock=clock, no_clock_reason=no_clock_reason)
        check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
        return timing.reply(self.sm_clock(self.ctx.info))

    def serve(self) -> None:
        from .driver import DriverError, sm_clock_mhz
        self.conn.send({"type": "hello", "info": dataclasses.asdict(self.ctx.info),
                        "sm_clock_mhz": sm_clock_mhz(self.ctx.info), "pid": os.getpid()})
        while True:
            try:
                job = self.conn.recv()
            except (EOFError, OSError):
                return
            if job["type"] == "stop":
                return
            try:
                if job["type"] == "check":
                    reply = self.check_job(job)
                    fatal = reply.fatal
                else:
                    reply = self.time_job(job)
                    fatal = reply.get("fatal", False)
            except DriverError as exc:
                reply = (CheckResult(error="crashed", message=str(exc), fatal=exc.sticky) if job["type"] == "check"
                         else {"error": "crashed", "message": str(exc), "fatal": exc.sticky})
                fatal = exc.sticky
            except Exception as exc:  # a bug or a bad row must not take the run down silently
                message = f"{type(exc).__name__}: {exc}"
                reply = (CheckResult(error="crashed", message=message, fatal=True) if job["type"] == "check"
                         else {"error": "crashed", "message": message, "fatal": True})
                fatal = True
            self.conn.send(reply)
            if fatal:
                return  # the context may be dead: leave, and let the parent start a new worker


def worker_main(conn, ordinal: int) -> None:
    """Entry point of a worker process."""
    from .driver import DriverError, NoDriverError
    try:
        worker = _Worker(conn, ordinal)
    except (NoDriverError, DriverError) as exc:
        conn.send({"type": "hello", "error": "no_driver" if isinstance(exc, NoDriverError) else "driver",
                   "message": str(exc)})
        return
    worker.serve()
    conn.close()
    # os._exit: skip interpreter teardown, which can hang on a dead context.
    os._exit(0)


# --------------------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------------------

class GpuWorker:
    """The parent's handle on one worker process bound to GPU ``ordinal``."""

    def __init__(self, ordinal: int = 0, hello_timeout: float = HELLO_TIMEOUT):
        self.ordinal = ordinal
        self.hello_timeout = hello_timeout
        self._mp = mp.get_context("spawn")
        self.proc = None
        self.conn = None
        self.info: dict = {}
        self.sm_clock_mhz = 0
        self.sent_keys: set = set()
        self.sent_group = None
        self.restarts = -1
        self.start()

    def start(self) -> None:
        from .driver import NoDriverError
        parent, child = self._mp.Pipe()
        self.proc = self._mp.Process(target=worker_main, args=(child, self.ordinal), daemon=True,
                                     name=f"ptxds-verify-gpu{self.ordinal}")
        self.proc.start()
        child.close()
        self.conn = parent
        self.sent_keys, self.sent_group = set(), None
        self.restarts += 1
        if not parent.poll(self.hello_timeout):
            self.kill()
            raise NoDriverError(f"GPU worker {self.ordinal} did not start within {self.hello_timeout:.0f} s")
        try:
            hello = parent.recv()
        except (EOFError, OSError):
            self.kill()
            raise NoDriverError(f"GPU worker {self.ordinal} died while starting (exit code {self.proc.exitcode})") from None
        if hello.get("error"):
            self.kill()
            raise NoDriverError(hello["message"])
        self.info = hello["info"]
        self.sm_clock_mhz = hello.get("sm_clock_mhz", 0)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(10)
        if self.conn is not None:
            self.conn.close()
        self.proc, self.conn = None, None

    def close(self) -> None:
        if self.alive:
            try:
                self.conn.send({"type": "stop"})
                self.proc.join(10)
            except (OSError, BrokenPipeError):
                pass
        self.kill()

    def _request(self, job: dict, timeout: float):
        if not self.alive:
            self.kill()
            self.start()
        try:
            self.conn.send(job)
        except (OSError, BrokenPipeError):
            self.kill()
            raise WorkerDied("the worker's pipe closed before the job was sent") from None
        deadline = time.monotonic() + timeout
        while True:
            if self.conn.poll(min(1.0, max(0.0, deadline - time.monotonic()))):
                try:
                    return self.conn.recv()
                except (EOFError, OSError):
                    code = self.proc.exitcode if self.proc else None
                    self.kill()
                    raise WorkerDied(f"worker exited without a result (exit code {code})") from None
            if not self.proc.is_alive():
                code = self.proc.exitcode
                self.kill()
                raise WorkerDied(f"worker exited without a result (exit code {code})")
            if time.monotonic() >= deadline:
                self.kill()
                raise WorkerTimeout(f"no result within {timeout:.1f} s; worker killed")

    def check(self, record_json: str, group: str, trials: list, cubin: Optional[bytes], timeout: float) -> CheckResult:
        """Run one row. ``trials``: list of (trial, key, seed, storage dict); inputs the worker
        already holds for this group are not sent again."""
        if not self.alive:
            self.kill()
            self.start()
        if group != self.sent_group:  # the worker drops its input cache when the group changes
            self.sent_keys, self.sent_group = set(), group
        inputs = {key: storage for _, key, _, storage in trials if key not in self.sent_keys}
        job = {"type": "check", "record": record_json, "group": group, "cubin": cubin, "inputs": inputs,
               "trials": [(t, key, seed) for t, key, seed, _ in trials]}
        try:
            result = self._request(job, timeout)
        except WorkerTimeout as exc:
            return CheckResult(error="timeout", message=str(exc), fatal=True)
        except WorkerDied as exc:
            return CheckResult(error="died", message=str(exc), fatal=True)
        self.sent_keys |= set(inputs)
        if result.fatal:
            self.kill()  # it exits by itself; reap it now so the next call starts fresh
        return result

    def time(self, build_key: str, budget_s: float, timeout: float, max_samples: int = 2000) -> dict:
        job = {"type": "time", "build_key": build_key, "budget_s": budget_s, "max_samples": max_samples}
        try:
            reply = self._request(job, timeout)
        except WorkerTimeout as exc:
            return {"error": "timeout", "message": str(exc)}
        except WorkerDied as exc:
            return {"error": "died", "message": str(exc)}
        if reply.get("fatal"):
            self.kill()
        return reply


def start_local_workers(count: Optional[int] = None) -> list:
    """``count`` worker processes spread over the visible GPUs (0/None: one per GPU)."""
    workers = [GpuWorker(0)]
    try:
        visible = int(workers[0].info.get("device_count", 1)) or 1
        for i in range(1, count or visible):
            workers.append(GpuWorker(i % visible))
    except BaseException:
        for worker in workers:
            worker.close()
        raise
    return workers
