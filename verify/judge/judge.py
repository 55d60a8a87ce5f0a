"""Where the per-element checks of a member's outputs run: numpy on the host, or torch on
the GPU the member ran on.

At tens of millions of output elements, the float64 passes over every member's outputs
(error against the reference, agreement with the other members) took most of a group's
verify time on the host. On the GPU they take milliseconds, so with torch installed the
reference, the error bounds and the agreement bounds of a large problem are copied once to
the worker's GPU and every member's outputs are judged there. The verdicts do not depend
on where they are computed: both paths evaluate the same float64 formulas
(``compare.error_stats``). ``device_type="cpu"`` runs the torch path on the host's CPU,
which is how the comparisons are tested where no GPU is.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from ..trials.reference import BACKENDS, output_elements, torch_for

# Below this many output elements per trial the copies to the GPU cost more than numpy's pass.
MIN_GPU_ELEMENTS = 1 << 20


def judge_device(problem, backend: str = "auto", device_index: int = 0, device_type: str = "cuda"):
    """The torch device that judges ``problem``'s members, or None for numpy on the host.
    ``backend`` is the verifier's ``reference`` choice (auto, numpy, torch); ``device_type``
    "cpu" asks for torch on the CPU (no CUDA needed)."""
    if device_type not in ("cuda", "cpu"):
        raise ValueError(f"judge device_type must be 'cuda' or 'cpu', got {device_type!r}")
    if device_type == "cpu":
        if backend not in BACKENDS:
            raise ValueError(f"reference backend must be one of {BACKENDS}, got {backend!r}")
        torch = None if backend == "numpy" else _torch_module()
        if torch is None and backend == "torch":
            raise ValueError("judging with torch on the CPU needs torch installed; use --reference numpy")
        if torch is None or (backend == "auto" and output_elements(problem) < MIN_GPU_ELEMENTS):
            return None
        return torch.device("cpu")
    torch = torch_for(backend)
    if torch is None or (backend == "auto" and output_elements(problem) < MIN_GPU_ELEMENTS):
        return None
    return torch.device("cuda", int(device_index) % max(1, torch.cuda.device_count()))


def _torch_module():
    try:
        import torch
    except ImportError:
        return None
    return torch


def to_device(array, device):
    """A float64 array as a tensor on ``device``; an array that broadcasts one value stays
    a 0-d tensor (no full-size copy)."""
    import torch
    if is_tensor(array):  # made on the device already (device_prepare.py)
        return array.to(device=device, dtype=torch.float64)
    array = np.asarray(array)
    if array.size and all(stride == 0 for stride in array.strides):
        return torch.tensor(float(array.reshape(-1)[0]), dtype=torch.float64, device=device)
    host = np.ascontiguousarray(array, dtype=np.float64)
    if not host.flags.writeable:  # a broadcast view: torch wants memory it may own
        host = host.copy()
    return torch.from_numpy(host).to(device)


# torch float types numpy has no dtype for; widening them to float32 is exact
_WIDENED_ON_DOWNLOAD = frozenset({"torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2",
                                  "torch.float8_e4m3fnuz", "torch.float8_e5m2fnuz"})


def to_host(array) -> np.ndarray:
    """numpy view of an array that may be a torch tensor (bfloat16 and float8 tensors come
    back as float32, exactly)."""
    if hasattr(array, "detach"):
        array = array.detach()
        if str(array.dtype) in _WIDENED_ON_DOWNLOAD:
            array = array.float()
        return array.cpu().numpy()
    return np.asarray(array)


def on_device(prepared, device):
    """A copy of a prepared problem (runner._ProblemTrials) whose references, error bounds
    and agreement bounds live on ``device``; ``prepared`` itself when ``device`` is None."""
    if device is None or prepared.refusal:
        return prepared
    specs = [dataclasses.replace(spec, bounds=[to_device(b, device) for b in spec.bounds],
                                 agreement_bounds=[to_device(b, device) for b in spec.agreement_bounds])
             for spec in prepared.specs]
    references = [{name: to_device(ref, device) for name, ref in trial.items()} for trial in prepared.references]
    return dataclasses.replace(prepared, specs=specs, references=references)


def is_tensor(array) -> bool:
    return hasattr(array, "detach") and hasattr(array, "device")


def device_of(*arrays) -> Optional[object]:
    """The device of the first torch tensor among ``arrays`` (None: all numpy)."""
    for array in arrays:
        if is_tensor(array):
            return array.device
    return None
