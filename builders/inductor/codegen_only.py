"""Lets Inductor generate CUDA Triton kernels on a machine without a GPU (docs/inductor.md).

Inductor only needs a GPU's description to write its kernels: the device properties that
go into each kernel's ``triton_meta`` (``DeviceProperties``), the Triton target, and a CUDA
device for fake tensors. ``codegen_only(target)`` supplies those for one named GPU while a
capture runs, and restores everything on exit. Nothing is launched and nothing is
autotuned: a capture stops once the graph's wrapper code is written.

Two things differ from a GPU machine, both recorded with every capture:
- the pattern passes (attention, pad-mm, misc) are traced once on the CPU device: their
  patterns are device-independent except ``randperm_index_add``, which then never fires;
- constant folding evaluates its (real, small) constants on the CPU: their values are the
  same, the folded graph still names the CUDA device;
- ``triton_helpers.set_driver_to_gpu`` does nothing (the kernels are compiled, never loaded);
- a fake tensor's ``copy_`` and ``~`` call their ATen ops directly (the methods' Python
  bindings open a CUDA device guard, which a CPU-only torch refuses; a backward graph's
  reinplacing of slice scatters and the embedding gradient's decomposition call them);
- the pad-mm pass never benchmarks: a GEMM it would time (a compute-bound one with a
  misaligned size) is left unpadded, as a GPU decides when padding is not faster; its
  rules that need no timing (``force_shape_pad``, the bf16 large-K rule) still apply.
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from types import SimpleNamespace


@dataclass(frozen=True)
class GpuTarget:
    """The GPU whose kernels Inductor writes: what ``torch.cuda.get_device_properties``
    and Triton's driver would report on it."""
    name: str
    major: int
    minor: int
    multi_processor_count: int
    shared_memory_per_block_optin: int
    l2_cache_bytes: int
    total_memory: int

    @property
    def cc(self) -> int:
        return self.major * 10 + self.minor

    def properties(self) -> SimpleNamespace:
        return SimpleNamespace(
            name=self.name, major=self.major, minor=self.minor,
            multi_processor_count=self.multi_processor_count, regs_per_multiprocessor=65536,
            max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32,
            total_memory=self.total_memory, shared_memory_per_block_optin=self.shared_memory_per_block_optin,
            L2_cache_size=self.l2_cache_bytes, gcnArchName="")


TARGETS = {
    "h100": GpuTarget("NVIDIA H100 80GB HBM3", 9, 0, 132, 232448, 50 * 2 ** 20, 80 * 2 ** 30),
    "a100": GpuTarget("NVIDIA A100-SXM4-80GB", 8, 0, 108, 166912, 40 * 2 ** 20, 80 * 2 ** 30),
}


class _DriverUtils:
    def __init__(self, target: GpuTarget):
        self.target = target

    def get_device_properties(self, device=0) -> dict:
        return {"max_shared_mem": self.target.shared_memory_per_block_optin,
                "multiprocessor_count": self.target.multi_processor_count, "max_num_regs": 65536,
                "warpSize": 32, "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120}


class CodegenOnlyDriver:
    """Triton's active driver while Inductor writes code: it names the target and nothing
    else (no launcher, no device)."""

    def __init__(self, target: GpuTarget):
        self.target = target
        self.utils = _DriverUtils(target)

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget as TritonTarget
        return TritonTarget("cuda", self.target.cc, 32)

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_active_torch_device(self):
        import torch
        return torch.device("cuda", 0)

    def is_active(self) -> bool:
        return True


class _Patches:
    """setattr with undo, in reverse order."""

    def __init__(self):
        self._undo = []

    def set(self, owner, name: str, value) -> None:
        self._undo.append((owner, name, owner.__dict__.get(name, _MISSING) if isinstance(owner, type)
                           else getattr(owner, name, _MISSING)))
        setattr(owner, name, value)

    def undo(self) -> None:
        for owner, name, value in reversed(self._undo):
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        self._undo.clear()


_MISSING = object()


@contextlib.contextmanager
def codegen_only(target: GpuTarget):
    """Inside: Inductor compiles graphs of fake CUDA tensors for ``target`` as far as its
    wrapper code. Undone on exit."""
    import torch
    import torch._inductor.fx_passes.joint_graph as joint_graph
    import torch._inductor.fx_passes.post_grad as post_grad
    from torch._inductor.runtime import triton_helpers
    from torch._dynamo.device_interface import CudaInterface
    from torch._inductor import constant_folding
    from torch.utils import _triton
    from triton.runtime.driver import driver

    props = target.properties()
    patches = _Patches()
    try:
        for module in (joint_graph, post_grad):
            # pattern tracing runs real factory calls on the graph's device: trace on the CPU
            patches.set(module, "lazy_init", functools.partial(_lazy_init_on_cpu, module.lazy_init))
        for name, value in (("get_device_properties", lambda device=None: props),
                            ("get_device_capability", lambda device=None: (target.major, target.minor)),
                            ("device_count", lambda: 1), ("current_device", lambda: 0),
                            ("_lazy_init", lambda: None), ("set_device", lambda device: None)):
            patches.set(torch.cuda, name, value)
        for name, value in (("get_device_properties", lambda device=None: props),
                            ("get_compute_capability", lambda device=None: target.cc),
                            ("is_available", lambda: True), ("is_triton_capable", lambda device=None: True),
                            ("raise_if_triton_unavailable", lambda device=None: None),
                            ("current_device", lambda: 0), ("device_count", lambda: 1),
                            ("is_bf16_supported", lambda *a, **k: True), ("get_raw_stream", lambda d=0: 0)):
            patches.set(CudaInterface, name, staticmethod(value))
        from torch._inductor.fx_passes import pad_mm
        patches.set(pad_mm, "is_mm_compute_bound", lambda *args, **kwargs: False)  # no timing runs
        fold = constant_folding.ConstantFolder.run
        patches.set(constant_folding.ConstantFolder, "run", functools.partialmethod(_fold_on_cpu, fold))
        # a kernel module calls this when it is imported (to read its autotune configs)
        patches.set(triton_helpers, "set_driver_to_gpu", lambda: None)
        from torch._subclasses.fake_tensor import FakeTensor
        patches.set(FakeTensor, "copy_", _fake_copy)
        patches.set(FakeTensor, "__invert__", _fake_invert)
        patches.set(CudaInterface.Worker, "get_device_properties", staticmethod(lambda device=None: props))
        patches.set(CudaInterface.Worker, "current_device", staticmethod(lambda: 0))
        previous_driver = driver._active
        driver.set_active(CodegenOnlyDriver(target))
        _triton.triton_backend.cache_clear()
        _triton.triton_hash_with_backend.cache_clear()
        try:
            yield
        finally:
            driver._active = previous_driver
            _triton.triton_backend.cache_clear()
            _triton.triton_hash_with_backend.cache_clear()
    finally:
        patches.undo()


def _fake_copy(self, src, non_blocking=False):
    import torch
    return torch.ops.aten.copy_.default(self, src, non_blocking)


def _fake_invert(self):
    import torch
    return torch.ops.aten.bitwise_not.default(self)


def _lazy_init_on_cpu(lazy_init, input_device=None, **kwargs):
    import torch
    return lazy_init(torch.device("cpu"), **kwargs)


def _fold_on_cpu(self, fold, *args, **kwargs):
    with _CudaOnCpu():
        return fold(self, *args, **kwargs)


def _cpu(value):
    import torch
    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("cpu")
    if isinstance(value, (list, tuple)):
        return type(value)(_cpu(v) for v in value)
    return value


def _cuda_on_cpu_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class CudaOnCpu(TorchDispatchMode):
        """Real ops that name the CUDA device run on the CPU (constant folding's values)."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*_cpu(tuple(args)), **{k: _cpu(v) for k, v in (kwargs or {}).items()})

    return CudaOnCpu()


class _CudaOnCpu:
    def __enter__(self):
        self.mode = _cuda_on_cpu_mode()
        return self.mode.__enter__()

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)
