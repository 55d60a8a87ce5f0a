"""The ``tvm`` source: TE workloads scheduled by TVM (MetaSchedule samples and dlight),
lowered by TVM to CUDA C and launch recipes, compiled to PTX with the pinned nvcc
(workloads.py defines the programs and problems, schedules.py draws schedules, lower.py
lowers them, ptx_tools.ptx_cache runs nvcc, builder.py makes the rows; tuning.py and
proposals.py: tuning measured on the GPU, ``ptxds tune-tvm``)."""
from .builder import TvmBuilder

__all__ = ["TvmBuilder"]
