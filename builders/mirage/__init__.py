"""The ``mirage`` source: Mirage muGraph files lowered to CUDA C and compiled to PTX
(graph.py parses, plan.py lowers, cuda.py prints CUDA, interpret.py runs the plan with
numpy, operators.py names each file's operator and problem, builder.py makes the rows)."""
from .builder import MirageBuilder, MirageInputError

__all__ = ["MirageBuilder", "MirageInputError"]
