"""Thin wrapper over the CUDA driver API (cuda.bindings): context, modules, launches, memory.

Every driver call goes through ``check`` so a failure raises ``DriverError`` carrying the
CUresult name, the driver's message and a hint. ``NoDriverError`` means there is no usable
driver or device at all; callers report it in one line instead of a traceback.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from dataset_spec.errors import PtxdsError

try:
    from cuda.bindings import driver as cu
except ImportError:  # the package itself is missing: same outcome as no driver
    cu = None

# Errors after which the CUDA context is unusable: the process must exit.
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_ASSERT", "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    "CUDA_ERROR_TENSOR_MEMORY_LEAK", "CUDA_ERROR_UNKNOWN",
})

_HINTS = {
    "CUDA_ERROR_NO_DEVICE": "no CUDA device is visible (check CUDA_VISIBLE_DEVICES and nvidia-smi)",
    "CUDA_ERROR_INSUFFICIENT_DRIVER": "the driver is older than the CUDA version these bindings need; update the driver",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "the PTX ISA version is newer than this driver's JIT; assemble to cubin or update the driver",
    "CUDA_ERROR_INVALID_PTX": "the driver's JIT rejected the PTX; see the JIT log",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "the code was built for another architecture than this GPU",
    "CUDA_ERROR_NOT_FOUND": "the entry name is not in the module (check Launch.entry against the PTX)",
    "CUDA_ERROR_INVALID_VALUE": "a launch parameter is out of range (grid, block, shared memory, cluster)",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": "too many registers or threads per block for this GPU",
    "CUDA_ERROR_OUT_OF_MEMORY": "device memory exhausted; the problem's buffers are too large",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "the kernel accessed memory outside its buffers; the context is dead",
    "CUDA_ERROR_MISALIGNED_ADDRESS": "the kernel made a misaligned access; the context is dead",
    "CUDA_ERROR_LAUNCH_FAILED": "the kernel trapped or failed; the context is dead",
    "CUDA_ERROR_CLUSTER_OUT_OF_RESOURCES": "the cluster shape cannot be scheduled with this shared memory / block size",
}


class DriverError(PtxdsError, RuntimeError):
    """A driver call failed. ``name`` is the CUresult name (e.g. CUDA_ERROR_ILLEGAL_ADDRESS)."""

    def __init__(self, name: str, message: str, call: str = "", hint: str = "", log: str = ""):
        text = f"{call + ': ' if call else ''}{name}: {message}"
        if hint:
            text += f" ({hint})"
        if log:
            text += f"\n{log.strip()}"
        super().__init__(text)
        # after the base's __init__, which sets message and hint to the whole text
        self.name, self.message, self.call, self.hint, self.log = name, message, call, hint, log

    @property
    def sticky(self) -> bool:
        """True when the context cannot be used any more after this error."""
        return self.name in STICKY_ERRORS

    def __reduce__(self):
        return (DriverError, (self.name, self.message, self.call, self.hint, self.log))


NO_GPU_FIX = "; ptxds verify needs a machine with an NVIDIA GPU and its driver (build and info do not)"


class NoDriverError(PtxdsError, RuntimeError):
    """No CUDA driver can be loaded or no device is present."""


def _error_text(err) -> tuple[str, str]:
    name = getattr(err, "name", str(err))
    try:
        rc, text = cu.cuGetErrorString(err)
        message = text.decode() if rc == cu.CUresult.CUDA_SUCCESS and text else ""
    except Exception:  # a dead driver may not even answer this
        message = ""
    return name, message or "unknown error"


def check(result, call: str = "", log: str = ""):
    """Unwrap a cuda.bindings result tuple ``(CUresult, *values)``; raise DriverError on failure.

    Returns None, the single value, or a tuple of values, like cuda-python's handle_return.
    """
    err, values = result[0], result[1:]
    if err != cu.CUresult.CUDA_SUCCESS:
        name, message = _error_text(err)
        raise DriverError(name, message, call, _HINTS.get(name, ""), log)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


_initialised = False


def init() -> None:
    """cuInit once per process; NoDriverError when libcuda or a device is missing."""
    global _initialised
    if _initialised:
        return
    if cu is None:
        raise NoDriverError("no CUDA driver: the cuda-bindings package is not installed")
    try:
        err, = cu.cuInit(0)
    except RuntimeError as exc:  # cuda.bindings raises this when libcuda.so cannot be opened
        raise NoDriverError(f"no CUDA driver ({exc}){NO_GPU_FIX}") from None
    if err != cu.CUresult.CUDA_SUCCESS:
        name, message = _error_text(err)
        raise NoDriverError(f"no CUDA device (cuInit failed with {name}: {message}){NO_GPU_FIX}")
    count = check(cu.cuDeviceGetCount(), "cuDeviceGetCount")
    if count < 1:
        raise NoDriverError(f"no CUDA device (the driver reports 0 devices){NO_GPU_FIX}")
    _initialised = True


def device_count() -> int:
    init()
    return check(cu.cuDeviceGetCount(), "cuDeviceGetCount")


def driver_version() -> str:
    """Driver's CUDA version as 'major.minor' (e.g. '13.0')."""
    init()
    v = check(cu.cuDriverGetVersion(), "cuDriverGetVersion")
    return f"{v // 1000}.{(v % 1000) // 10}"


@dataclass
class DeviceInfo:
    ordinal: int
    name: str
    cc: tuple  # (major, minor)
    sm_count: int
    l2_bytes: int
    max_clock_mhz: int
    pci_bus_id: str
    driver_version: str
    device_count: int
    memory_clock_khz: int = 0   # peak memory clock (the roofline's bandwidth where no table has the GPU)
    memory_bus_bits: int = 0

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"


def _attr(dev, name: str) -> int:
    attr = getattr(cu.CUdevice_attribute, name, None)
    if attr is None:  # removed in a newer driver API
        return 0
    try:
        return check(cu.cuDeviceGetAttribute(attr, dev), f"cuDeviceGetAttribute({name})")
    except DriverError:
        return 0


def device_info(ordinal: int = 0) -> DeviceInfo:
    init()
    dev = check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
    name = check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
    bus = check(cu.cuDeviceGetPCIBusId(64, dev), "cuDeviceGetPCIBusId")
    return DeviceInfo(
        ordinal=ordinal,
        name=name.split(b"\0", 1)[0].decode(),
        cc=(_attr(dev, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
            _attr(dev, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")),
        sm_count=_attr(dev, "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
        l2_bytes=_attr(dev, "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
        max_clock_mhz=_attr(dev, "CU_DEVICE_ATTRIBUTE_CLOCK_RATE") // 1000,
        pci_bus_id=bus.split(b"\0", 1)[0].decode(),
        driver_version=driver_version(),
        device_count=device_count(),
        memory_clock_khz=_attr(dev, "CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE"),
        memory_bus_bits=_attr(dev, "CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH"),
    )


class Context:
    """The primary context of one device, made current on this thread."""

    def __init__(self, ordinal: int = 0):
        init()
        self.device = check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        self.ctx = check(cu.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        check(cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        # A blocking stream: the synchronous copies and memsets (legacy default stream) used
        # to prepare buffers are then ordered before every launch on it.
        self.stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_DEFAULT.value), "cuStreamCreate")
        self.info = device_info(ordinal)

    def synchronize(self) -> None:
        check(cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")


class Module:
    """A loaded module: from PTX (driver JIT, error log captured) or from cubin bytes."""

    LOG_SIZE = 1 << 16

    def __init__(self, image: bytes, is_ptx: bool):
        if is_ptx and not image.endswith(b"\0"):
            image = image + b"\0"  # the driver reads PTX as a C string
        error_log = bytearray(self.LOG_SIZE)
        info_log = bytearray(self.LOG_SIZE)
        options = [cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER, cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                   cu.CUjit_option.CU_JIT_INFO_LOG_BUFFER, cu.CUjit_option.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
        values = [error_log, self.LOG_SIZE, info_log, self.LOG_SIZE]
        result = cu.cuModuleLoadDataEx(image, len(options), options, values)
        log = bytes(error_log).split(b"\0", 1)[0].decode(errors="replace")
        self.handle = check(result, "cuModuleLoadDataEx", log=log)
        self.info_log = bytes(info_log).split(b"\0", 1)[0].decode(errors="replace")
        self._functions: dict = {}

    @classmethod
    def from_ptx(cls, ptx: str) -> "Module":
        return cls(ptx.encode(), is_ptx=True)

    @classmethod
    def from_cubin(cls, cubin: bytes) -> "Module":
        return cls(bytes(cubin), is_ptx=False)

    def function(self, entry: str):
        if entry not in self._functions:
            self._functions[entry] = check(cu.cuModuleGetFunction(self.handle, entry.encode()),
                                           f"cuModuleGetFunction({entry})")
        return self._functions[entry]

    def unload(self) -> None:
        if self.handle is not None:
            check(cu.cuModuleUnload(self.handle), "cuModuleUnload")
            self.handle = None




def allow_dynamic_smem(function, dynamic_smem: int) -> None:
    """Raise ``function``'s dynamic shared memory allowance to ``dynamic_smem`` when it is
    below. The default allowance is 48 KiB less the kernel's static shared memory, so a
    kernel with 1 KiB static and exactly 48 KiB dynamic needs it too; it is never lowered,
    because launches of one function with different sizes (extra shared memory) are
    prepared once and enqueued in any order."""
    if dynamic_smem <= 0:
        return
    attribute = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    allowed = check(cu.cuFuncGetAttribute(attribute, function), "cuFuncGetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
    if dynamic_smem > int(allowed):
        check(cu.cuFuncSetAttribute(function, attribute, int(dynamic_smem)),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")


class PreparedLaunch:
    """One kernel launch with its parameter buffer and launch config built once, so that
    enqueueing it again (timing loops) costs one driver call."""

    def __init__(self, function, grid: Sequence[int], block: Sequence[int], param_buffer: bytes,
                 param_offsets: Sequence[int], stream, cluster=(1, 1, 1), dynamic_smem: int = 0):
        self.function = function
        allow_dynamic_smem(function, int(dynamic_smem))
        cluster = tuple(int(c) for c in cluster)
        if cluster[0] * cluster[1] * cluster[2] > 8:  # 8 is the portable cluster size limit
            check(cu.cuFuncSetAttribute(
                function, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)")
        # One packed buffer holds every parameter; the driver gets a pointer to each one.
        # Both arrays are kept on self so their memory outlives every launch.
        self._params = np.frombuffer(bytearray(param_buffer) or bytearray(8), dtype=np.uint8)
        base = self._params.ctypes.data
        self._pointers = np.array([base + o for o in param_offsets] or [0], dtype=np.uint64)
        self.kernel_params = self._pointers.ctypes.data if param_offsets else 0
        config = cu.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = (int(g) for g in grid)
        config.blockDimX, config.blockDimY, config.blockDimZ = (int(b) for b in block)
        config.sharedMemBytes = int(dynamic_smem)
        config.hStream = stream
        if cluster != (1, 1, 1):
            attr = cu.CUlaunchAttribute()
            attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
            config.attrs = [attr]
            config.numAttrs = 1
        else:
            config.numAttrs = 0
        self.config = config

    def enqueue(self) -> None:
        check(cu.cuLaunchKernelEx(self.config, self.function, self.kernel_params, 0), "cuLaunchKernelEx")


def u64_launch(function, grid: Sequence[int], block: Sequence[int], words: Sequence[int], stream) -> PreparedLaunch:
    """A prepared launch of a kernel whose parameters are all 64-bit words (addresses,
    counts): the verifier's own small kernels (hold, flush read, hashes, SM holder)."""
    params = b"".join(int(w).to_bytes(8, "little") for w in words)
    return PreparedLaunch(function, grid, block, params, [8 * i for i in range(len(words))], stream)


class DeviceBuffer:
    """A device allocation of ``nbytes`` (at least 1 byte, so empty buffers still get an address)."""

    def __init__(self, nbytes: int):
        self.nbytes = int(nbytes)
        self.ptr = check(cu.cuMemAlloc(max(self.nbytes, 1)), "cuMemAlloc")

    @property
    def address(self) -> int:
        return int(self.ptr)

    def upload(self, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        if host.nbytes != self.nbytes:
            raise ValueError(f"upload of {host.nbytes} bytes into a {self.nbytes}-byte buffer")
        if self.nbytes:
            check(cu.cuMemcpyHtoD(self.ptr, host.ctypes.data, self.nbytes), "cuMemcpyHtoD")

    def download(self, dtype, shape) -> np.ndarray:
        host = np.empty(shape, dtype=dtype)
        if host.nbytes != self.nbytes:
            raise ValueError(f"download of {self.nbytes} bytes into {host.nbytes}")
        if self.nbytes:
            check(cu.cuMemcpyDtoH(host.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return host

    def fill_bytes(self, value: int, stream=None) -> None:
        if not self.nbytes:
            return
        if stream is None:
            check(cu.cuMemsetD8(self.ptr, value & 0xFF, self.nbytes), "cuMemsetD8")
        else:
            check(cu.cuMemsetD8Async(self.ptr, value & 0xFF, self.nbytes, stream), "cuMemsetD8Async")

    def fill_word(self, width: int, value: int, stream=None) -> None:
        """Fill with a repeated 1-, 2- or 4-byte word (poison patterns); on ``stream``
        (asynchronously) when given."""
        if not self.nbytes:
            return
        if width == 4 and self.nbytes % 4 == 0:
            call, args = ("cuMemsetD32", (self.ptr, value & 0xFFFFFFFF, self.nbytes // 4))
        elif width == 2 and self.nbytes % 2 == 0:
            call, args = ("cuMemsetD16", (self.ptr, value & 0xFFFF, self.nbytes // 2))
        elif width in (1, 2, 4):
            call, args = ("cuMemsetD8", (self.ptr, value & 0xFF, self.nbytes))
        else:
            raise ValueError(f"fill width {width} is not 1, 2 or 4")
        if stream is None:
            check(getattr(cu, call)(*args), call)
        else:
            check(getattr(cu, call + "Async")(*args, stream), call + "Async")

    def upload_async(self, host: np.ndarray, stream) -> None:
        """Asynchronous copy; ``host`` must stay alive until the stream passes this point."""
        if self.nbytes:
            check(cu.cuMemcpyHtoDAsync(self.ptr, host.ctypes.data, self.nbytes, stream), "cuMemcpyHtoDAsync")

    def free(self) -> None:
        if self.ptr is not None:
            check(cu.cuMemFree(self.ptr), "cuMemFree")
            self.ptr = None


# 64 KiB each side: a multiple of every alignment a buffer needs (256 B for the allocator,
# 16 B for TMA), and far past the few vectors an off-by-one loop writes. Each run fills the
# guards with its own random bytes (inputs.guard_fill), so a read past an end changes the
# output between runs, and no fixed pattern can be recognised.
GUARD_BYTES = 1 << 16


class GuardedBuffer(DeviceBuffer):
    """A buffer of ``nbytes`` between two guard regions of one allocation (the arena used
    where the virtual memory API is missing, and under a memory checker with ``guard=0``:
    a plain allocation of exactly ``nbytes``). ``arm`` writes a run's guard fill into both
    guards; ``hits`` finds the guard bytes a kernel changed since."""

    placement = "after"

    def __init__(self, nbytes: int, guard: int = GUARD_BYTES):
        self.raw = DeviceBuffer(int(nbytes) + 2 * guard)
        self.guard = guard
        self.nbytes = int(nbytes)
        self.ptr = cu.CUdeviceptr(int(self.raw.ptr) + guard)

    def kernel_address(self, placement: str) -> int:
        return self.address

    def place(self, placement: str) -> None:
        """One allocation serves every placement."""

    def _guard_starts(self) -> tuple:
        base = int(self.raw.ptr)
        return ((-self.guard, base), (self.nbytes, base + self.guard + self.nbytes))

    def _expected(self, fill: np.ndarray, side: int) -> np.ndarray:
        """The guard bytes ``arm`` wrote: the fill's last bytes precede the buffer, its
        first bytes follow it (as on the virtual memory API's guard pages)."""
        reps = -(-self.guard // fill.size)
        tiled = np.tile(fill, reps)
        return tiled[tiled.size - self.guard:] if side < 0 else tiled[:self.guard]

    def arm(self, fill: np.ndarray) -> None:
        if not self.guard:
            return
        for side, start in self._guard_starts():
            host = np.ascontiguousarray(self._expected(fill, side))
            check(cu.cuMemcpyHtoD(cu.CUdeviceptr(start), host.ctypes.data, self.guard), "cuMemcpyHtoD(guard)")

    def hits(self, fill: np.ndarray) -> list:
        """[(offset of the first changed byte from the buffer's start, changed bytes)] per
        guard that was written."""
        found = []
        if not self.guard:
            return found
        for side, start in self._guard_starts():
            host = np.empty(self.guard, dtype=np.uint8)
            check(cu.cuMemcpyDtoH(host.ctypes.data, cu.CUdeviceptr(start), self.guard), "cuMemcpyDtoH(guard)")
            changed = np.flatnonzero(host != self._expected(fill, side))
            if changed.size:
                found.append((side + int(changed[0]), int(changed.size)))
        return found

    def free(self) -> None:
        if self.ptr is not None:
            self.raw.free()
            self.ptr = None


def function_attribute(function, name: str) -> int:
    return int(check(cu.cuFuncGetAttribute(getattr(cu.CUfunction_attribute, name), function),
                     f"cuFuncGetAttribute({name})"))


def smem_headroom(function, device, dynamic_smem: int) -> int:
    """Bytes of dynamic shared memory a launch of ``function`` could still add per block."""
    optin = check(cu.cuDeviceGetAttribute(
        cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device),
        "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)")
    static = function_attribute(function, "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES")
    return max(0, int(optin) - static - int(dynamic_smem))


# A spin kernel that loads and stores its own words until a clock deadline: launched on a
# second stream just before a row's kernels, it holds a block on every SM and competes for
# memory, so their blocks are scheduled differently than when they run alone.
NOISE_PTX = """
.version 7.0
.target sm_70
.address_size 64
.visible .entry ptxds_noise(.param .u64 words, .param .u64 cycles)
{
    .reg .pred %p;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [words];
    ld.param.u64 %rd2, [cycles];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    mov.u64 %rd5, %clock64;
    add.s64 %rd6, %rd5, %rd2;
SPIN:
    ld.volatile.global.u32 %r5, [%rd4];
    add.s32 %r5, %r5, 1;
    st.volatile.global.u32 [%rd4], %r5;
    mov.u64 %rd7, %clock64;
    setp.lt.u64 %p, %rd7, %rd6;
    @%p bra SPIN;
    ret;
}
"""
NOISE_BLOCK = 128
NOISE_CYCLES = 100_000  # about 60 us at H100 clocks


class NoiseKernel:
    """``NOISE_PTX`` loaded once, with its own buffer and non-blocking stream."""

    def __init__(self, sm_count: int):
        self.module = Module.from_ptx(NOISE_PTX)
        self.grid = max(1, int(sm_count))
        self.words = DeviceBuffer(self.grid * NOISE_BLOCK * 4)
        self.words.fill_bytes(0)
        self.stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value), "cuStreamCreate")
        params = np.array([self.words.address, NOISE_CYCLES], dtype=np.uint64)
        self.launch = PreparedLaunch(self.module.function("ptxds_noise"), (self.grid, 1, 1), (NOISE_BLOCK, 1, 1),
                                     params.tobytes(), [0, 8], self.stream)

    def enqueue(self) -> None:
        self.launch.enqueue()

    def synchronize(self) -> None:
        check(cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize(noise)")


def tensor_map_encode_call(params: dict, address: int) -> tuple:
    """(driver function name, its arguments) that encode the recorded arguments of a
    tensormap patch (see ``dataset_spec.model.Patch``) for ``address``:
    ``cuTensorMapEncodeTiled``, or ``cuTensorMapEncodeIm2col`` when
    ``params["encode"] == "im2col"`` (3.x convolutions). Needs cuda.bindings, not a device."""
    if cu is None:
        raise NoDriverError("cuda-bindings is not installed (pip install cuda-bindings)")
    common_head = (cu.CUtensorMapDataType(int(params["data_type"])), int(params["rank"]), int(address),
                   [cu.cuuint64_t(int(v)) for v in params["global_dim"]],
                   [cu.cuuint64_t(int(v)) for v in params["global_strides"]])
    element_strides = [cu.cuuint32_t(int(v)) for v in params["element_strides"]]
    common_tail = (cu.CUtensorMapInterleave(int(params["interleave"])), cu.CUtensorMapSwizzle(int(params["swizzle"])),
                   cu.CUtensorMapL2promotion(int(params["l2_promotion"])),
                   cu.CUtensorMapFloatOOBfill(int(params["oob_fill"])))
    encode = params.get("encode", "tiled")
    if encode == "im2col":
        return "cuTensorMapEncodeIm2col", (
            *common_head, [int(v) for v in params["pixel_box_lower_corner"]],
            [int(v) for v in params["pixel_box_upper_corner"]], int(params["channels_per_pixel"]),
            int(params["pixels_per_column"]), element_strides, *common_tail)
    if encode != "tiled":
        raise ValueError(f"tensormap encode {encode!r} is neither 'tiled' nor 'im2col'")
    return "cuTensorMapEncodeTiled", (
        *common_head, [cu.cuuint32_t(int(v)) for v in params["box_dim"]], element_strides, *common_tail)


def encode_tensor_map(params: dict, address: int) -> bytes:
    """The 128-byte ``CUtensorMap`` that the driver encodes for ``address`` and the recorded
    arguments of a tensormap patch (``tensor_map_encode_call`` says which encode)."""
    init()
    name, args = tensor_map_encode_call(params, address)
    tensor_map = check(getattr(cu, name)(*args), name)
    return b"".join(int(word).to_bytes(8, "little") for word in tensor_map.opaque)


class Event:
    def __init__(self):
        self.handle = check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DEFAULT.value), "cuEventCreate")

    def record(self, stream) -> None:
        check(cu.cuEventRecord(self.handle, stream), "cuEventRecord")

    def elapsed_ms(self, start: "Event") -> float:
        return float(check(cu.cuEventElapsedTime(start.handle, self.handle), "cuEventElapsedTime"))

    def destroy(self) -> None:
        check(cu.cuEventDestroy(self.handle), "cuEventDestroy")


class SmClock(int):
    """An SM clock in MHz that says where it came from. An ``int`` (every caller stores,
    compares and JSON-encodes it as one), with ``source``: ``nvml`` (cuda.bindings.nvml),
    ``pynvml`` (nvidia-ml-py), ``max_clock`` (the driver's maximum: no NVML reader could give
    the current clock, ``reason`` says why) or ``none`` (no device: 0)."""

    def __new__(cls, mhz: int, source: str, reason: str = ""):
        clock = super().__new__(cls, mhz)
        clock.source, clock.reason = source, reason
        return clock

    def __reduce__(self):  # the worker's hello pickles it through a pipe: keep the source
        return (SmClock, (int(self), self.source, self.reason))

    def __repr__(self) -> str:
        return f"SmClock({int(self)}, {self.source!r}, {self.reason!r})"


def sm_clock_mhz(info: Optional[DeviceInfo]) -> SmClock:
    """The current SM clock of ``info``'s GPU through NVML, found by PCI bus id:
    cuda.bindings.nvml (the cuda-bindings this module already uses; releases before its
    NVML module fall through), else pynvml when it is installed (never required). Where neither reads it, the
    driver's maximum clock, marked ``source == "max_clock"`` with each reader's failure in
    ``reason``, so a maximum is never taken for a measured clock."""
    import importlib
    if info is None:
        return SmClock(0, "none", "no device information (no CUDA driver or device)")
    failures = []

    def nvml_clock(nvml) -> int:
        nvml.init_v2()
        try:
            # by bus id, never by index: CUDA's ordinal and NVML's index differ under
            # CUDA_VISIBLE_DEVICES or CUDA's fastest-first order, and another GPU's clock
            # would pass for this one's
            handle = nvml.device_get_handle_by_pci_bus_id_v2(info.pci_bus_id)
            return int(nvml.device_get_clock_info(handle, nvml.ClockType.CLOCK_SM))
        finally:
            nvml.shutdown()

    def pynvml_clock(pynvml) -> int:
        pynvml.nvmlInit()
        try:
            handle = None
            for bus_id in (info.pci_bus_id.encode(), info.pci_bus_id):  # versions differ: bytes or str
                try:
                    handle = pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
                    break
                except Exception as error:  # the other spelling may be the one this version takes
                    last = error
            if handle is None:
                raise last
            return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
        finally:
            pynvml.nvmlShutdown()

    for source, module, read in (("nvml", "cuda.bindings.nvml", nvml_clock), ("pynvml", "pynvml", pynvml_clock)):
        try:
            reader = importlib.import_module(module)
        except ImportError as error:
            failures.append(f"{module} not importable ({error})")
            continue
        try:
            return SmClock(read(reader), source)
        except Exception as error:  # no NVML library, no permission, bus id unknown to NVML
            failures.append(f"{module}: {type(error).__name__}: {error}".strip())
    return SmClock(int(info.max_clock_mhz), "max_clock",
                   "the driver's maximum SM clock, not the current one: " + "; ".join(failures))
