"""GPU worker processes: run a row's launch sequence in isolation, under a parent's watchdog.

A worker keeps one CUDA context for many rows (fast), but a trap, illegal address or
misaligned access kills a context for good, so after such an error the worker reports it
and exits; the parent (``GpuWorker``) starts a fresh process for the next row. A row that
hangs is killed by the parent after its timeout. The worker only moves bits; the parent
judges them (``outcome.classify``). Where both can, the bits stay on the GPU and the
parent judges them there (device_outputs.py).
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import time

from typing import Optional

import numpy as np

from .device.l2flush import L2Flush
from .judge.outcome import CheckResult, TrialRun, float_atomics, inputs_changed

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
        from .device.driver import Context, DriverError, sm_clock_mhz
        self.conn = conn
        self.ctx = Context(ordinal)
        self.flush = flush_buffer(self.ctx)
        self.row = None  # the loaded row (row.LoadedRow), kept for its timing job
        self.inputs: dict = {}
        self.inputs_group = None
        self.device_outputs = False  # the loaded row's outputs stay on the GPU (device_outputs.py)
        self.sm_clock = sm_clock_mhz
        self.hold = None  # hold.StreamHold, made on the first timing job
        self.guard_page, self.arena_reason = None, ""
        from .member.fence import GuardPage, vmm_support
        self.arena_reason = vmm_support(self.ctx.device)
        if not self.arena_reason:
            try:
                self.guard_page = GuardPage(self.ctx.info.ordinal)
            except DriverError as exc:
                if exc.sticky:
                    raise
                self.arena_reason = f"the guard page could not be mapped ({exc})"
        from .device.driver import NoiseKernel
        self.noise = NoiseKernel(self.ctx.info.sm_count)
        self.holder, self.holder_reason = None, ""  # residency.SmHolder, made on first use
        self.checksums = None  # checked_timing.Checksums, made on first use
        self.kept: dict = {}   # input key -> checked_timing.KeptRun of the loaded row's checks
        self.last_run_s = 0.0  # wall seconds of the last unhindered run's launches
        self.stalled = ""      # why the last held run did not finish in time ('' when it did)

    # ---- row set-up -------------------------------------------------------------------
    def _load_row(self, record, cubin: Optional[bytes], fence: str = "all") -> str:
        """``fence``: all (virtual memory fences where available), inputs (only inputs
        read-only), ends (only guard pages read-only), none (the guarded arena)."""
        from .member.row import load_row
        if self.row is not None:
            self.row.free()
            self.row = None
        page = self.guard_page if fence != "none" else None
        self.row = load_row(record, self.ctx.stream, cubin, guard_page=page, fence_inputs=fence in ("all", "inputs"),
                            fence_ends=fence in ("all", "ends"))
        return self.row.load_path

    def _fences(self) -> str:
        if self.row.fences == "vmm":
            return "vmm"
        return f"arena: {self.arena_reason or 'fences lifted to attribute a fault'}"

    def _sm_holder(self):
        """The SM holder (residency.py), made once; None (with ``holder_reason``) where it
        cannot be."""
        if self.holder is None and not self.holder_reason:
            from .device.driver import DriverError
            from .device.residency import SmHolder
            try:
                self.holder = SmHolder(self.ctx.info.sm_count)
            except DriverError as exc:
                if exc.sticky:
                    raise
                self.holder_reason = f"the SM holder could not be loaded ({exc.name})"
        return self.holder

    def _run(self, inputs: dict, seed: int, poison: int, fill, placement: str = "after",
             extra_smem: bool = False, noise: bool = False) -> dict:
        """One run of the row: prepare, launch (beside the noise kernel and while part of
        the SMs are held, or with extra shared memory, when asked), wait, download the
        outputs. After a held run, ``stalled`` says why the row did not finish in time
        ('' when it did)."""
        from .device.driver import DriverError, check, cu
        self.row.prepare(inputs, seed, poison, fill, placement)
        launches = self.row.launch_set(placement, extra_smem)
        self.stalled = ""
        holder = self._sm_holder() if noise else None
        held = holder.hold() if holder is not None else 0
        if noise:
            self.noise.enqueue()
        started = time.perf_counter()
        try:
            for launch in launches:
                launch.enqueue()
        except DriverError as exc:
            if holder is not None:
                holder.release()
            # more shared memory can leave a cluster unschedulable: run without it
            if not extra_smem or exc.sticky or exc.call != "cuLaunchKernelEx":
                raise
            check(cu.cuStreamSynchronize(self.ctx.stream), "cuStreamSynchronize")
            self.row.smem_note = f"no extra shared memory: the launch refused it ({exc.name})"
            self.row.launch_sets[(placement, True, self.row.buffer_set)] = self.row.launch_set(placement, False)
            return self._run(inputs, seed, poison, fill, placement, False, noise)
        if holder is not None:
            from .device.residency import deadline_s
            limit = deadline_s(self.last_run_s)
            late = holder.finish_within(self.ctx.stream, limit)
            if late is not None and held:
                self.stalled = (f"the launches did not finish within {limit:.2f} s ({late / max(self.last_run_s, 1e-6):.0f}x "
                                f"their unhindered time) while {held} of {self.ctx.info.sm_count} SMs were held by "
                                "another kernel; they finished once it let go, so the kernel needs blocks to be "
                                "resident together, which only a cooperative launch promises")
        check(cu.cuStreamSynchronize(self.ctx.stream), "cuStreamSynchronize")
        if not noise and placement == "after" and not extra_smem:
            self.last_run_s = time.perf_counter() - started
        if noise:
            self.noise.synchronize()
        return self._download(("out", "inout"))

    def _download(self, roles, host: bool = False) -> dict:
        """The buffers of ``roles`` as host arrays; outputs as tensors on the device when
        this row keeps them there (device_outputs.py) and ``host`` is not asked."""
        from .trials.inputs import STORAGE_NUMPY, storage_shape
        out = {}
        for name, buf in self.row.buffers.items():
            spec = self.row.specs[name]
            if spec.role not in roles:
                continue
            if self.device_outputs and not host and spec.role in ("out", "inout"):
                from .device.device_outputs import copy_to_tensor
                out[name] = copy_to_tensor(buf, spec.dtype, spec.shape, self.ctx.stream, self.ctx.info.ordinal)
            else:
                out[name] = buf.download(STORAGE_NUMPY[spec.dtype], storage_shape(spec.dtype, spec.shape))
        return out

    # ---- jobs -------------------------------------------------------------------------
    def check_job(self, job: dict) -> CheckResult:
        from dataset_spec.model import KernelRecord
        from .member.args import ArgError
        from .device.driver import DriverError
        if job.get("group") != self.inputs_group:
            self.inputs, self.inputs_group = {}, job.get("group")
        self.inputs.update(job.get("inputs") or {})
        record = KernelRecord.from_json(job["record"])
        self.device_outputs = False
        if job.get("device_outputs"):
            from .device.device_outputs import device_torch, supported
            self.device_outputs = device_torch() is not None and supported(
                b.dtype for b in record.problem.buffers if b.role in ("out", "inout"))
        seconds: dict = {}
        clock = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            seconds[stage] = seconds.get(stage, 0.0) + now - clock
            clock = now
        try:
            load_path = self._load_row(record, job.get("cubin"), job.get("fence", "all"))
            if job.get("keep"):
                self.row.snapshot_globals()  # timing restores this instead of loading the module again
            lap("load")
        except ArgError as exc:
            return CheckResult(error="arg_error", message=str(exc))
        except DriverError as exc:
            kind = "jit_failed" if exc.call.startswith(("cuModuleLoad", "cuModuleGetFunction")) else "launch_failed"
            return CheckResult(error="crashed" if exc.sticky else kind, message=str(exc), fatal=exc.sticky)
        runs = []
        atomics = float_atomics(record.ptx, [launch.entry for launch in record.launches])
        self.kept, keep = {}, set(job.get("keep") or ())
        try:
            for trial, key, seed in job["trials"]:
                runs.append(self._trial(trial, self.inputs[key], seed, lap, key if key in keep else None, atomics))
        except DriverError as exc:
            during_launch = exc.call == "cuLaunchKernelEx" and not exc.sticky
            if self.device_outputs:  # a failed row is judged by its error alone: keep no device memory
                runs = [dataclasses.replace(run, outputs={}, rerun_outputs=None, second_outputs=None) for run in runs]
            return CheckResult(runs=runs, error="launch_failed" if during_launch else "crashed",
                               message=f"trial {len(runs)}: {exc}", fatal=exc.sticky, load_path=load_path,
                               float_atomics=atomics, fences=self._fences())
        notes = ([f"fences: {self._fences()}"] + ([self.row.smem_note] if self.row.smem_note else [])
                 + ([self.row.fresh_note] if self.row.fresh_note else [])
                 + ([f"residency not checked: {self.holder_reason}"] if self.holder_reason else [])
                 + ([f"residency: the holder got {self.holder.registers} registers a thread, not 64: held SMs "
                     "may take other blocks"] if self.holder is not None and self.holder.registers < 64 else []))
        return CheckResult(runs=runs, load_path=load_path, seconds=seconds, float_atomics=atomics,
                           fences=self._fences(), notes=notes)

    def _keep(self, key: str, atomics: bool, first: dict) -> None:
        """Right after run 1 of a trial the timing job will use: its output hashes, and
        where runs may differ by design (float atomics) its outputs on the host (``first``,
        run 1's downloaded outputs, unless this row keeps them on the device)."""
        from .timing.checked_timing import Checksums, KeptRun
        from .timing.timing import MAX_BATCH
        if self.checksums is None:
            self.checksums = Checksums(self.ctx.info.sm_count, MAX_BATCH * 8)
        names = [n for n, spec in self.row.specs.items() if spec.role in ("out", "inout")]
        outputs = None
        if atomics:
            outputs = self._download(("out", "inout"), host=True) if self.device_outputs else first
        self.kept[key] = KeptRun(self.checksums.of([self.row.buffers[n] for n in names], self.ctx.stream), outputs)

    def _trial(self, trial: int, inputs: dict, seed: int, lap, keep_key: Optional[str] = None,
               atomics: bool = False) -> TrialRun:
        """Run 1 (guard fill 1, poison 1), run 2 (fill 2, poison 2, every buffer on fresh
        pages in the other placement, extra shared memory) and run 3 (run 1 again beside
        the noise kernel, while half the SMs are held). Equal bits: done. Otherwise, extra
        runs tell what the outputs depend on: the buffers' pages (run 2 repeated on the first
        buffers agrees with run 1, on fresh ones it does not), the schedule (a plain repeat
        of run 1 differs, or run 2's fill and poison alone do not change run 1), the poison
        (run 1 with poison 2 differs) or else the guard fill."""
        from .device.device_outputs import changed_outside, is_tensor
        from .trials.inputs import BITS_NUMPY, guard_fill, poison_words, unwritten_mask
        fills = guard_fill(seed, 1), guard_fill(seed, 2, finite=True)
        out_of_bounds: list = []

        def run(poison: int, fill, fresh: bool = False, **how) -> dict:
            lap("upload")
            if fresh:
                self.row.use_fresh_set()
                lap("fresh")
            try:
                outputs = self._run(inputs, seed, poison, fill, **how)
                lap("held" if how.get("noise") else "kernel")
                out_of_bounds.extend(hit for hit in self.row.guard_hits() if hit not in out_of_bounds)
            finally:
                self.row.use_first_set()
            lap("download")
            return outputs

        first = run(0, fills[0])
        if keep_key is not None:
            self._keep(keep_key, atomics, first)
        after = {}
        if not (self.row.fences == "vmm" and self.row.buffers and self._inputs_fenced()):
            after = self._download(("in",))  # unfenced inputs: compare their bits after the run
        tables = dict(self.row.tables)  # the addresses tables run 1 read
        second = run(1, fills[1], fresh=True, placement="before", extra_smem=True)
        third = run(0, fills[0], noise=True)
        stalled = self.stalled
        poisons = {name: poison_words(spec.dtype, seed) for name, spec in self.row.specs.items()
                   if spec.role == "out" and spec.init is None}

        def differs(a: dict, b: dict) -> bool:
            return bool(inputs_changed(a, b))

        def only_unwritten(a: dict, b: dict) -> bool:
            for name in a:
                if name not in poisons:
                    if differs({name: a[name]}, {name: b[name]}):
                        return False
                    continue
                if is_tensor(a[name]):
                    mask = unwritten_mask(a[name], b[name], self.row.specs[name].dtype, poisons[name])
                    if changed_outside(a[name], b[name], mask):
                        return False
                    continue
                bits = BITS_NUMPY[a[name].dtype.itemsize]
                changed = np.ascontiguousarray(a[name]).view(bits) != np.ascontiguousarray(b[name]).view(bits)
                if (changed & ~unwritten_mask(a[name], b[name], self.row.specs[name].dtype, poisons[name])).any():
                    return False
            return True

        varies, variation, rerun = "", "", None
        if differs(first, third):
            varies, variation, rerun = "schedule", "a repeat of run 1 beside a concurrent noise kernel differs", third
        elif differs(first, second) and not only_unwritten(first, second):
            if not differs(first, run(1, fills[1])):
                if differs(first, run(1, fills[1], fresh=True)):
                    varies = "binding"
                    variation = ("run 2's fill and poison on the first buffers agree with run 1; on fresh buffers, "
                                 "the first ones holding junk, they do not")
                else:
                    varies = "schedule"
                    variation = "run 2 differs only through extra dynamic shared memory and buffer placement"
            else:
                repeat = run(0, fills[0])
                if differs(first, repeat):
                    varies, variation, rerun = "schedule", "a plain repeat of run 1 differs", repeat
                elif differs(first, run(1, fills[0])):
                    varies, variation = "poison", "run 1 repeated with the second poison differs"
                else:
                    varies, variation = "guard", "run 1 repeated with the second guard fill differs"
        before = {name: inputs[name] if name in inputs else tables[name] for name in after}
        result = TrialRun(trial, first, rerun, inputs_changed(before, after), out_of_bounds,
                          second if differs(first, second) else None, poisons, varies, variation, stalled)
        lap("compare")
        return result

    def _inputs_fenced(self) -> bool:
        from .member.fence import FencedBuffer
        return all(getattr(buf, "read_only", False) for name, buf in self.row.buffers.items()
                   if self.row.specs[name].role == "in" and isinstance(buf, FencedBuffer))

    def time_job(self, job: dict) -> dict:
        """Time the row just checked from its module's load-time state, every sample checked
        (checked_timing.py): ``job["sets"]`` names the ordinary trials' inputs, [(key, seed)],
        whose checked runs this worker kept. The loaded module's globals get back the image
        taken right after loading; ``job["record"]``/``job["cubin"]``, when given, load
        another row afresh in its place (tests time a row that differs from the checked one)."""
        from dataset_spec.model import KernelRecord
        from .timing.checked_timing import CheckedSamples, TimingMismatch
        from .device.driver import check, cu
        from .device.kernel_clock import shared_clock
        from .timing.timing import time_launches
        if self.row is None or self.row.build_key != job["build_key"]:
            return {"error": "crashed", "message": "timing asked for a row that is not loaded", "fatal": False}
        sets = [(self.inputs.get(key), seed, self.kept.get(key)) for key, seed in job.get("sets") or ()]
        if not sets or any(storage is None or kept is None for storage, _, kept in sets):
            return {"error": "unchecked", "message": "timing needs the checked runs of its input sets, which this "
                    "worker does not hold (it restarted after the checks): not timed", "fatal": False}
        exact = not any(kept.outputs is not None for _, _, kept in sets)
        seconds, started = {}, time.perf_counter()
        if job.get("record"):  # another row than the one checked: loaded afresh
            self._load_row(KernelRecord.from_json(job["record"]), job.get("cubin"))
            self.row.snapshot_globals()
        else:
            # the module as loaded, without loading it again: its globals get their load-time
            # image back (nothing the checks' launches left there survives)
            self.row.restore_globals()
        stream = self.ctx.stream
        storage, seed, _ = sets[0]
        self.row.prepare(storage, seed, 0, None, "after")  # tables, guards, placement
        checker = CheckedSamples(self.row, stream, sets, self.checksums, salt=int(seed) ^ 0x5EED, exact=exact)
        seconds["prepare"] = time.perf_counter() - started
        if self.hold is None:
            from .device.hold import StreamHold
            self.hold = StreamHold(stream)
        # CUPTI is started once per worker process, on its first timing job; where it cannot
        # be, every row is timed with events and says why.
        clock, no_clock_reason = shared_clock()
        try:
            timing = time_launches(stream, self.row.launches, self.flush, hold=self.hold,
                                   budget_s=job.get("budget_s", 1.0), max_samples=job.get("max_samples", 2000),
                                   kernel_clock=clock, no_clock_reason=no_clock_reason, checker=checker)
        except TimingMismatch as exc:
            check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
            return {"error": "timing_mismatch", "message": str(exc), "fatal": False}
        finally:
            checker.close()
        check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
        sm_clock = self.sm_clock(self.ctx.info)
        reply = timing.reply(sm_clock)
        # where the clock came from (nvml, pynvml, or the maximum because nothing read it)
        reply["sm_clock_source"] = getattr(sm_clock, "source", "")
        reply["checked_samples"] = checker.judged
        reply["input_sets"] = len(sets)
        seconds["samples"] = time.perf_counter() - started - seconds["prepare"]
        reply["seconds"] = seconds
        return reply

    def serve(self) -> None:
        from .device.driver import DriverError, sm_clock_mhz
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
                elif job["type"] == "peak_rss":
                    import resource
                    reply = {"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
                    fatal = False
                elif job["type"] == "site_count":
                    from .probes.coverage import count_site
                    reply = count_site(self, job)
                    fatal = reply.get("fatal", False)
                elif job["type"] == "outputs":
                    from .probes.race_delays import run_outputs
                    reply = run_outputs(self, job)
                    fatal = reply.get("fatal", False)
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
    from .device.driver import DriverError, NoDriverError
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

    entry = staticmethod(worker_main)  # what the process runs (tests give a stand-in)

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
        self._spare = None  # (process, pipe) of a worker started ahead, after a first crash
        self.start()

    def _spawn(self) -> tuple:
        """A new worker process (process, parent's pipe end); it says hello once it is ready."""
        parent, child = self._mp.Pipe()
        proc = self._mp.Process(target=type(self).entry, args=(child, self.ordinal), daemon=True,
                                name=f"ptxds-verify-gpu{self.ordinal}")
        proc.start()
        child.close()
        return proc, parent

    def start(self) -> None:
        from .device.driver import NoDriverError
        spare, self._spare = self._spare, None
        self.sent_keys, self.sent_group = set(), None
        self.restarts += 1
        try:
            self._greet(*(spare or self._spawn()))
        except NoDriverError:
            if spare is None:
                raise
            self._greet(*self._spawn())  # the worker started ahead did not live to be used
        if self.restarts:
            # A member crashed its worker. Crashes come in runs (a mutant set; a fault run again
            # under each fence), and a start costs seconds (a process, imports, a CUDA context),
            # so the next worker starts now beside this one, idle, and the next crash takes it.
            self._spare = self._spawn()

    def _greet(self, proc, parent) -> None:
        """Takes ``proc`` as this handle's worker once it says hello (NoDriverError if it cannot)."""
        from .device.driver import NoDriverError
        self.proc, self.conn = proc, parent
        if not parent.poll(self.hello_timeout):
            self.kill()
            raise NoDriverError(f"GPU worker {self.ordinal} did not start within {self.hello_timeout:.0f} s")
        try:
            hello = parent.recv()
        except (EOFError, OSError):
            code = proc.exitcode
            self.kill()
            raise NoDriverError(f"GPU worker {self.ordinal} died while starting (exit code {code})") from None
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
        if self._spare is not None:
            proc, conn = self._spare
            self._spare = None
            proc.kill()
            proc.join(10)
            conn.close()

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

    # The worker runs on this host, so its outputs can stay on the GPU and reach the
    # parent as CUDA IPC handles (device_outputs.py).
    device_outputs_ok = True

    def check(self, record_json: str, group: str, trials: list, cubin: Optional[bytes], timeout: float,
              device_outputs: bool = False, keep: Optional[list] = None) -> CheckResult:
        """Run one row. ``trials``: list of (trial, key, seed, storage dict); inputs the worker
        already holds for this group are not sent again. ``device_outputs``: keep outputs on
        the GPU where the worker can (torch with CUDA), the parent judging them there.
        ``keep``: input keys whose checked run the worker keeps for timing."""
        if not self.alive:
            self.kill()
            self.start()
        if group != self.sent_group:  # the worker drops its input cache when the group changes
            self.sent_keys, self.sent_group = set(), group
        inputs = {key: storage for _, key, _, storage in trials if key not in self.sent_keys}
        job = {"type": "check", "record": record_json, "group": group, "cubin": cubin, "inputs": inputs,
               "trials": [(t, key, seed) for t, key, seed, _ in trials], "device_outputs": device_outputs,
               "keep": list(keep or ())}
        try:
            result = self._request(job, timeout)
        except WorkerTimeout as exc:
            return CheckResult(error="timeout", message=str(exc), fatal=True)
        except WorkerDied as exc:
            return CheckResult(error="died", message=str(exc), fatal=True)
        self.sent_keys |= set(inputs)
        if result.fatal:
            self.kill()  # it exits by itself; reap it now so the next call starts fresh
            if result.error == "crashed" and result.fences == "vmm":
                return self._attribute_fault(job, trials, result, timeout)
        return result

    def _attribute_fault(self, job: dict, trials: list, fenced: CheckResult, timeout: float) -> CheckResult:
        """A fenced run faulted. Run the row in the arena: if it faults there too, it
        crashes whatever the fences; else run it with only the inputs fenced: a fault then
        means it writes an input, none means it writes past an end (into a guard page)."""
        def again(fence: str) -> CheckResult:
            self.sent_keys, self.sent_group = set(), None  # a fresh worker holds no inputs
            retry = dict(job, fence=fence, inputs={key: storage for _, key, _, storage in trials})
            try:
                result = self._request(retry, timeout)
            except (WorkerTimeout, WorkerDied) as exc:
                return CheckResult(error="crashed", message=str(exc), fatal=True)
            if result.fatal:
                self.kill()
            else:
                self.sent_keys, self.sent_group = {key for _, key, _, _ in trials}, job["group"]
            return result
        plain = again("none")
        if plain.error:
            return fenced
        if any(run.out_of_bounds or run.modified_inputs for run in plain.runs):
            return plain  # the arena saw the write itself, and names the buffer
        faults = {fence: again(fence).error == "crashed" for fence in ("inputs", "ends")}
        if faults["inputs"] and not faults["ends"]:
            return CheckResult(error="modified_input", message="the kernel writes an input buffer: with inputs "
                               f"mapped read-only it faults ({fenced.message}); without fences it runs",
                               load_path=fenced.load_path, fences="vmm")
        if faults["ends"] and not faults["inputs"]:
            return CheckResult(error="out_of_bounds_write", message="the kernel writes outside its buffers, into "
                               "the read-only guard page beside a buffer's end or start: it faults there "
                               f"({fenced.message}); without fences it runs", load_path=fenced.load_path,
                               fences="vmm")
        return CheckResult(error="crashed", message=f"{fenced.message} (faults only with fences, and with "
                           f"{'either' if all(faults.values()) else 'neither'} fence alone)",
                           load_path=fenced.load_path, fences="vmm")

    def site_count(self, record_json: str, group: str, trials: list, counter: str, timeout: float,
                   words: int = 0) -> dict:
        """Run a coverage probe (coverage.probe_record's row) once per trial; returns
        {"counts": [per trial]} (with ``words``, the counter buffer's first ``words`` values
        per trial) or {"error", "message"}."""
        return self._trial_job({"type": "site_count", "record": record_json, "counter": counter, "words": words},
                               group, trials, timeout)

    def run_outputs(self, records: list, group: str, trials: list, timeout: float) -> dict:
        """Run each (label, record_json) once on the first of ``trials`` (the runner's
        payload) and bring its outputs back as host arrays (race_delays.run_outputs);
        returns {"runs": {label: {"outputs"} or {"error", "message"}}} or {"error", "message"}
        when the worker timed out or died (the runs it finished are lost with it)."""
        return self._trial_job({"type": "outputs", "records": records}, group, trials[:1], timeout)

    def _trial_job(self, job: dict, group: str, trials: list, timeout: float) -> dict:
        """Sends ``job`` with the (trial, key, seed) of ``trials`` and the inputs the worker
        does not hold yet (a worker that died is started again); a timeout or death becomes
        {"error", "message"}, and a reply marked fatal stops the worker."""
        if not self.alive:
            self.kill()
            self.start()
        if group != self.sent_group:
            self.sent_keys, self.sent_group = set(), group
        inputs = {key: storage for _, key, _, storage in trials if key not in self.sent_keys}
        job = {**job, "group": group, "inputs": inputs, "trials": [(t, key, seed) for t, key, seed, _ in trials]}
        try:
            reply = self._request(job, timeout)
        except (WorkerTimeout, WorkerDied) as exc:
            return {"error": "timeout" if isinstance(exc, WorkerTimeout) else "died", "message": str(exc)}
        self.sent_keys |= set(inputs)
        if reply.get("fatal"):
            self.kill()
        return reply

    def peak_rss_mib(self, timeout: float = 10.0) -> Optional[float]:
        """The worker process's peak resident memory (getrusage), None when it is not running
        (a worker started again after a crash counts from its restart)."""
        if not self.alive:
            return None
        try:
            return float(self._request({"type": "peak_rss"}, timeout)["peak_rss_mib"])
        except (WorkerTimeout, WorkerDied, KeyError):
            return None

    def time(self, build_key: str, budget_s: float, timeout: float, max_samples: int = 2000,
             sets: Optional[list] = None, record_json: str = "", cubin: Optional[bytes] = None) -> dict:
        """Time the row last checked on this worker. ``sets``: [(input key, seed)] of the
        ordinary trials to alternate (their checked runs were kept: ``check(keep=...)``)."""
        job = {"type": "time", "build_key": build_key, "budget_s": budget_s, "max_samples": max_samples,
               "sets": list(sets or ()), "record": record_json, "cubin": cubin}
        if self._spare is not None:  # a worker started ahead makes its CUDA context: not beside a timed member
            self._spare[1].poll(self.hello_timeout)
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
    """``count`` worker processes spread over the visible GPUs (0/None: one per GPU). The
    first says how many GPUs there are; the others start side by side (each creates a
    context and loads its modules: seconds that would otherwise add up before any work)."""
    from concurrent.futures import ThreadPoolExecutor
    workers = [GpuWorker(0)]
    try:
        visible = int(workers[0].info.get("device_count", 1)) or 1
        ordinals = [i % visible for i in range(1, count or visible)]
        if ordinals:
            with ThreadPoolExecutor(max_workers=len(ordinals), thread_name_prefix="verify-start") as starting:
                futures = [starting.submit(GpuWorker, ordinal) for ordinal in ordinals]
            started = [f.result() for f in futures if f.exception() is None]
            workers += started
            failed = next((f.exception() for f in futures if f.exception() is not None), None)
            if failed is not None:
                raise failed
    except BaseException:
        for worker in workers:
            worker.close()
        raise
    return workers
