"""The ``tvm-models`` source: the fused TIR tasks TVM makes of model blocks (frontend.py
imports a block through torch.export and TVM's Relax frontend, tasks.py fuses it as
MetaSchedule's task extraction does), each a group whose reference is the task's own
PrimFunc in float64 (program.py, reference_runtime.py, problem.py) and whose members are
dlight, MetaSchedule samples and tensor-core schedules (builder.py). docs/tvm-models.md."""
from .builder import TvmModelsBuilder, TvmModelsOptions

__all__ = ["TvmModelsBuilder", "TvmModelsOptions"]
