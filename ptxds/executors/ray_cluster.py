"""The Ray executor: build work items run as Ray tasks (``num_cpus=1``, a memory hint for
heavy translation units, retried when their worker or node dies); verify runs one Ray
actor per GPU (``num_gpus=1``), each keeping one GPU worker process and its CUDA context
for many rows, as the local runner does, with rows' PTX assembled by Ray tasks ahead of
the GPUs. Results stream back to the driver, which alone writes the store."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Optional

from verify.device.assembly_pool import AssemblyPool, assemble_for_gpu

from . import BuildTask, ExecutorUnavailable, ItemOutcome, build_item

MAX_RETRIES = 3          # a build task lost with its worker or node is run again this often
MAX_ACTOR_CALL_TRIES = 3  # a verify call whose actor died is sent again to the restarted actor
IN_FLIGHT_PER_CPU = 2    # tasks submitted ahead per cluster CPU: keeps CPUs busy, driver memory flat


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ExecutorUnavailable("--executor ray needs the Python package 'ray'; "
                                  "install it with pip install 'ptxds[ray]'") from None
    return ray


def _project_root() -> str:
    """The folder this ptxds is imported from, so local Ray workers import the same code."""
    return str(Path(__file__).resolve().parents[2])


def _build_task(task: BuildTask, item) -> list:
    return build_item(task, item)


class RayExecutor:
    """Connects to the Ray cluster at ``address`` (None: ``RAY_ADDRESS``, else a new
    local one); an already connected session (``ray.init`` by the caller) is reused."""
    name = "ray"

    def __init__(self, address: Optional[str] = None):
        ray = self.ray = _import_ray()
        self.owns_session = not ray.is_initialized()
        if self.owns_session:
            kwargs = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
            if not (address or os.environ.get("RAY_ADDRESS")):
                path = os.pathsep.join(p for p in (_project_root(), os.environ.get("PYTHONPATH")) if p)
                kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
            try:
                ray.init(address=address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
                raise ExecutorUnavailable(f"could not start Ray at {where}: {str(exc).splitlines()[0]}; "
                                          "start a cluster with ray start --head and pass --address") from None

    def describe(self) -> str:
        resources = self.ray.cluster_resources()
        return (f"ray, {len([n for n in self.ray.nodes() if n['Alive']])} node(s), "
                f"{int(resources.get('CPU', 0))} CPU(s), {int(resources.get('GPU', 0))} GPU(s)")

    # ---- build ------------------------------------------------------------------------
    def _memory_hint(self, wanted: int) -> int:
        """The item's memory hint, capped at the largest node's (else it would never run)."""
        if not wanted:
            return 0
        largest = max((n["Resources"].get("memory", 0) for n in self.ray.nodes() if n["Alive"]), default=0)
        return int(min(wanted, largest)) if largest else 0

    def run_items(self, task: BuildTask, items: list) -> Iterator[ItemOutcome]:
        """Each item's outcome, in completion order; at most a few tasks per CPU in flight."""
        ray = self.ray
        options = {"num_cpus": 1, "max_retries": MAX_RETRIES, "retry_exceptions": False}
        memory = self._memory_hint(task.memory_bytes)
        if memory:
            options["memory"] = memory
        remote = ray.remote(_build_task).options(**options)
        shared = ray.put(task)
        window = max(2, IN_FLIGHT_PER_CPU * int(ray.cluster_resources().get("CPU", 1)))
        queue = iter(items)
        pending: dict = {}

        def submit_up_to_window():
            for item in queue:
                pending[remote.remote(shared, item)] = item
                if len(pending) >= window:
                    return

        submit_up_to_window()
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                item = pending.pop(ready[0])
                yield self._outcome(item, ready[0])
                submit_up_to_window()
        finally:  # interrupted or abandoned: stop what is still queued or running
            for ref in pending:
                ray.cancel(ref, force=True)

    def _outcome(self, item, ref) -> ItemOutcome:
        ray = self.ray
        try:
            return ItemOutcome(item, ray.get(ref))
        except ray.exceptions.RayTaskError as exc:  # the builder raised: a bug costs one item
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            return ItemOutcome(item, [], f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}")
        except ray.exceptions.RayError as exc:  # worker or node lost more often than retried
            return ItemOutcome(item, [], f"lost after {MAX_RETRIES} retries: {type(exc).__name__}: "
                                         f"{str(exc).splitlines()[0]}")

    # ---- verify -----------------------------------------------------------------------
    def gpu_workers(self, count: Optional[int]) -> list:
        """One actor per GPU of the cluster (``count`` of them; more than the GPUs share)."""
        from verify.device.driver import NoDriverError
        ray = self.ray
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if not gpus:
            raise NoDriverError("the Ray cluster has no GPU; verify needs nodes with NVIDIA GPUs "
                                "(ray start ... --num-gpus N)")
        count = count or gpus
        share = 1 if count <= gpus else 1.0 / -(-count // gpus)
        actor_class = ray.remote(num_gpus=share, max_restarts=MAX_ACTOR_CALL_TRIES)(GpuActor)
        actors = [actor_class.remote() for _ in range(count)]
        try:
            infos = ray.get([a.info.remote() for a in actors])
        except ray.exceptions.RayError as exc:
            infos = [{"start_error": f"a GPU actor did not start: {str(exc).splitlines()[0]}"}]
        failed = next((info["start_error"] for info in infos if info.get("start_error")), None)
        if failed:
            for actor in actors:
                ray.kill(actor)
            raise NoDriverError(failed)
        return [RayGpuWorker(ray, actor, driver_ordinal(info.get("pci_bus_id"), index), info)
                for index, (actor, info) in enumerate(zip(actors, infos))]

    def assembly_pool(self, cc: tuple, jobs: Optional[int]):
        """Rows' PTX assembled by Ray tasks on the cluster's CPUs (``jobs=0``: none, the
        driver JIT in each actor loads the PTX)."""
        from verify.device.assembly_pool import AssemblyPool
        return AssemblyPool(cc, 0) if jobs == 0 else RayAssemblyPool(self.ray, cc)

    def close(self) -> None:
        if self.owns_session and self.ray.is_initialized():
            self.ray.shutdown()


def parse_bus_id(bus_id: str) -> Optional[tuple]:
    """(domain, bus, device) of a PCI bus id such as ``0000:07:00.0``; None if unreadable."""
    try:
        domain, bus, rest = bus_id.split(":")
        return int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)
    except (AttributeError, ValueError):
        return None


def driver_ordinal(bus_id: Optional[str], fallback: int) -> int:
    """The index, among this process's visible GPUs, of the GPU at PCI ``bus_id`` (an
    actor's, reported by its worker), so that the driver prepares and judges an actor's
    members on the actor's own GPU and holds that GPU's quiet lock while the actor times;
    ``fallback`` where this process sees no such GPU (a driver on another node)."""
    wanted = parse_bus_id(bus_id or "")
    if wanted is None:
        return fallback
    try:
        import torch
        if not torch.cuda.is_available():
            return fallback
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            if (getattr(props, "pci_domain_id", None), getattr(props, "pci_bus_id", None),
                    getattr(props, "pci_device_id", None)) == wanted:
                return index
    except Exception:  # no usable torch here: the actor's index is as good a guess as any
        return fallback
    return fallback


class RayAssemblyPool(AssemblyPool):
    """``AssemblyPool`` on Ray tasks: each row's PTX is assembled on any node's CPU, so
    verify on many GPUs is not capped by the driver's cores."""

    failure_label = "assembly task"

    def __init__(self, ray, cc: tuple):
        super().__init__(cc, jobs=0)
        self.ray = ray
        self.remote = ray.remote(assemble_for_gpu).options(num_cpus=1, max_retries=MAX_RETRIES)

    @property
    def accepting(self) -> bool:
        return True

    def _start(self, ptx: str, arch: str):
        return self.remote.remote(ptx, arch)

    def _wait(self, handle, timeout: float):
        return self.ray.get(handle, timeout=timeout)

    def _cancel(self, handle) -> None:
        self.ray.cancel(handle, force=True)


class GpuActor:
    """Runs on a GPU node: one ``GpuWorker`` process on the GPU Ray assigned
    (``CUDA_VISIBLE_DEVICES`` holds just it, so it is ordinal 0), and the current group's
    inputs, so each input is sent over the network once per group."""

    def __init__(self):
        from verify.device.driver import NoDriverError
        from verify.worker import GpuWorker
        self.worker, self.start_error = None, ""
        try:
            self.worker = GpuWorker(0)
        except NoDriverError as exc:  # told to the driver by info(), in the driver's words
            self.start_error = str(exc).splitlines()[0]
        self.group = None
        self.inputs: dict = {}

    def info(self) -> dict:
        if self.worker is None:
            return {"start_error": self.start_error}
        import ray
        return {**self.worker.info, "node": ray.get_runtime_context().get_node_id()}

    def check(self, record_json: str, group: str, trials: list, new_inputs: dict, cubin, timeout: float,
              keep=None):
        if group != self.group:
            self.group, self.inputs = group, {}
        self.inputs.update(new_inputs)
        missing = [key for _, key, _ in trials if key not in self.inputs]
        if missing:  # restarted since the driver sent them: ask again with every input
            return None
        return self.worker.check(record_json, group, [(t, key, seed, self.inputs[key]) for t, key, seed in trials],
                                 cubin, timeout, keep=keep)

    def time(self, build_key: str, budget_s: float, timeout: float, max_samples: int, sets=None) -> dict:
        return self.worker.time(build_key, budget_s, timeout, max_samples, sets)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()


class RayGpuWorker:
    """The driver's handle on one ``GpuActor``, with ``GpuWorker``'s interface, so the
    verify runner drives local processes and Ray actors alike."""

    def __init__(self, ray, actor, ordinal: int, info: dict):
        self.ray, self.actor, self.ordinal, self.info = ray, actor, ordinal, info
        self.sent_group, self.sent_keys = None, set()

    @property
    def gpu_identity(self) -> tuple:
        """The actor's GPU: its node and PCI bus id (actors given a share of one GPU have the same)."""
        return self.info.get("node"), self.info.get("pci_bus_id")

    def _call(self, method: str, *args, resend=None):
        """``actor.method(*args)``; an actor that died (node lost, out of memory) is not the
        row's fault: the call goes again to the restarted actor, and past that the run stops
        with the group unwritten, so a rerun redoes it."""
        last = None
        for _ in range(MAX_ACTOR_CALL_TRIES):
            try:
                return self.ray.get(getattr(self.actor, method).remote(*args))
            except self.ray.exceptions.RayActorError as exc:
                last = exc
                self.sent_group, self.sent_keys = None, set()
                if resend is not None:
                    args = resend()
        raise ExecutorUnavailable(f"GPU actor {self.ordinal} lost {MAX_ACTOR_CALL_TRIES} times "
                                  f"({type(last).__name__}); rerun the same command to resume")

    def check(self, record_json: str, group: str, trials: list, cubin, timeout: float, keep=None):
        def payload(everything: bool):
            if group != self.sent_group or everything:
                self.sent_group, self.sent_keys = group, set()
            new = {key: storage for _, key, _, storage in trials if key not in self.sent_keys}
            self.sent_keys |= set(new)
            return (record_json, group, [(t, key, seed) for t, key, seed, _ in trials], new, cubin, timeout, keep)

        result = self._call("check", *payload(False), resend=lambda: payload(True))
        if result is None:  # the actor restarted between calls and lost the group's inputs
            result = self._call("check", *payload(True), resend=lambda: payload(True))
        return result

    def time(self, build_key: str, budget_s: float, timeout: float, max_samples: int = 2000, sets=None) -> dict:
        return self._call("time", build_key, budget_s, timeout, max_samples, sets)

    def close(self) -> None:
        try:
            self.ray.get(self.actor.close.remote(), timeout=30)
        except Exception:  # closing is best effort: the actor is killed next anyway
            pass
        self.ray.kill(self.actor)
