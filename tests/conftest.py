"""Shared pytest setup: GPU tests skip cleanly (one line saying why) without a CUDA driver."""
import functools

import pytest


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason():
    """None when a CUDA driver with a device is usable, else why not."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return "cuda-bindings is not installed"
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # the driver library itself is missing
        return f"no CUDA driver: {exc}"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"no usable CUDA driver/device ({err.name})"
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return "no CUDA device"
    return None


def nvcc_available() -> bool:
    """Whether the pinned CUDA wheels' nvcc is installed (tests that compile skip without it)."""
    from ptx_tools import ToolchainError, find_tool
    try:
        return find_tool("nvcc").exists()
    except ToolchainError:
        return False


needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc from the CUDA wheels is not installed")


def compiled_or_skip(source: str, arch: str = "sm_80") -> str:
    """PTX of a test's CUDA C kernels, compiled with the pinned nvcc; the test skips in one
    line where no nvcc is installed."""
    ptx_tools = pytest.importorskip("ptx_tools")
    try:
        return ptx_tools.compile_cuda(source, arch)
    except ptx_tools.ToolchainError as exc:
        pytest.skip(f"no nvcc: {exc}")


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason or gpu_unavailable_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
