"""Outputs that stay on the GPU: a worker's output buffers copied into torch tensors on
the device, compared there bit for bit, and handed to the parent as CUDA IPC handles.

Moving every member's outputs (tens of millions of elements per trial) to the host,
through the worker's pipe and back onto the GPU for judging took most of a verify's wall
time. With torch and CUDA importable in the worker, and the parent judging on the same
GPU (judge.py), each run's outputs are instead copied device to device into a tensor;
the worker compares runs with ``bits_equal`` and ``unwritten_mask`` on the device, and
the pipe carries only the tensors' IPC handles (torch's multiprocessing reductions), so
the parent judges the worker's memory in place. Every check reads the same bits as the
host path, so the verdicts are the same; ``supported`` names the dtypes whose tensors hold
the exact storage bits and values (the rest keep the host path).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

# dtype -> torch dtype name whose elements are the storage bits and whose values are exact
_TORCH_DTYPE = {
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
    "int8": "int8", "uint8": "uint8", "int16": "int16", "int32": "int32", "int64": "int64",
}
# element size -> signed integer dtype for bitwise comparisons (torch compares these everywhere)
_BITS_TORCH = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}

_torch_state: dict = {}


def device_torch():
    """torch with a usable CUDA device in this process, else None (checked once)."""
    if "torch" not in _torch_state:
        try:
            import torch
            _torch_state["torch"] = torch if torch.cuda.is_available() else None
        except Exception:  # no torch, or a torch without CUDA: the host path
            _torch_state["torch"] = None
    return _torch_state["torch"]


def supported(dtypes) -> bool:
    """Whether outputs of every one of ``dtypes`` can be judged as device tensors."""
    return all(dtype in _TORCH_DTYPE for dtype in dtypes)


def is_tensor(array) -> bool:
    return hasattr(array, "detach") and hasattr(array, "device")


def copy_to_tensor(buf, dtype: str, shape, stream, ordinal: int):
    """A new tensor on GPU ``ordinal`` holding a copy of device buffer ``buf``'s bits, in
    the torch dtype of ``dtype``; the copy is enqueued on ``stream`` and waited for."""
    from .driver import check, cu
    torch = device_torch()
    out = torch.empty(tuple(shape), dtype=getattr(torch, _TORCH_DTYPE[dtype]), device=torch.device("cuda", ordinal))
    nbytes = out.numel() * out.element_size()
    if nbytes != buf.nbytes:
        raise ValueError(f"output tensor of {nbytes} bytes for a buffer of {buf.nbytes} bytes")
    torch.cuda.current_stream(out.device).synchronize()  # the allocation is ordered before the copy
    if nbytes:
        check(cu.cuMemcpyDtoDAsync(cu.CUdeviceptr(out.data_ptr()), buf.ptr, nbytes, stream), "cuMemcpyDtoDAsync")
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
    return out


def _bits(tensor):
    import torch
    flat = tensor.contiguous().reshape(-1)
    return flat.view(getattr(torch, _BITS_TORCH[flat.element_size()]))


def bits_equal(a, b) -> bool:
    """Whether two tensors hold the same bits (NaN payloads included)."""
    import torch
    if tuple(a.shape) != tuple(b.shape) or a.element_size() != b.element_size():
        return False
    return bool(torch.equal(_bits(a), _bits(b)))


def _signed(word: np.ndarray) -> int:
    """An unsigned element's bits as the signed integer of the same width."""
    return int(word.view(np.dtype(f"i{word.dtype.itemsize}"))[0])


def unwritten_mask(first, second: Optional[object], poisons: tuple):
    """inputs.unwritten_mask on tensors: elements holding poison 1 in run 1 and poison 2 in
    run 2 (``poisons``: the two elements' bits, unsigned arrays of one element), compared as
    bits; a bool tensor shaped like ``first``."""
    import torch
    if second is None:
        return torch.zeros(tuple(first.shape), dtype=torch.bool, device=first.device)
    one, two = (_signed(p) for p in poisons)
    return ((_bits(first) == one) & (_bits(second) == two)).reshape(tuple(first.shape))


def host_bits(tensor) -> np.ndarray:
    """A tensor's storage bits as a host array of unsigned words (what the host path's
    download holds, byte for byte)."""
    bits = _bits(tensor).cpu().numpy()
    return bits.view(np.dtype(f"u{bits.dtype.itemsize}"))


def own_copy(outputs: list) -> list:
    """Per-trial outputs with every tensor cloned into this process's memory: tensors
    received from a worker live in the worker's memory, which a worker restart frees."""
    return [{name: (value.clone() if is_tensor(value) else value) for name, value in trial.items()}
            for trial in outputs]


def changed_outside(a, b, mask) -> bool:
    """Whether tensors ``a`` and ``b`` differ in bits at an element where ``mask`` is False."""
    return bool(((_bits(a) != _bits(b)) & ~mask.reshape(-1)).any())


def device_inputs(storage: dict, device) -> dict:
    """A trial's input storage arrays as byte tensors on ``device``: uploaded once per group
    by the parent, they reach the worker as IPC handles instead of through the pipe."""
    import torch

    def as_bytes(array):
        if is_tensor(array):  # made on the device (device_prepare.py): its bytes, on ``device``
            return array.contiguous().reshape(-1).view(torch.uint8).to(device)
        return torch.from_numpy(np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()).to(device)
    return {name: as_bytes(array) for name, array in storage.items()}


def copy_from_tensor(buf, tensor) -> None:
    """Device buffer ``buf`` gets the bytes of ``tensor`` (a byte tensor of device_inputs)."""
    from .driver import check, cu
    nbytes = tensor.numel() * tensor.element_size()
    if nbytes != buf.nbytes:
        raise ValueError(f"input of {nbytes} bytes for a buffer of {buf.nbytes} bytes")
    device_torch().cuda.current_stream(tensor.device).synchronize()  # the sender's writes are done
    if nbytes:
        check(cu.cuMemcpyDtoD(buf.ptr, cu.CUdeviceptr(tensor.data_ptr()), nbytes), "cuMemcpyDtoD")
