"""The inductor source: the Triton kernels torch.compile's Inductor writes for model graphs,
captured without a GPU (``capture.py``, ``codegen_only.py``), each with its reference cut from
the model's own post-grad FX graph and run in float64 (``reference_runtime.py``), built as
triton-jit members per autotune config and arch (``builder.py``). docs/inductor.md."""
from builders.inductor.builder import CaptureError, InductorBuilder, InductorOptions

__all__ = ["InductorBuilder", "InductorOptions", "CaptureError"]
