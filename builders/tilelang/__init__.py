"""The ``tilelang`` source: TileLang programs (GEMM, FlashAttention forward, RMSNorm) under
tile/pipeline configurations, lowered by TileLang to CUDA C and launch recipes (with TMA
descriptors on sm_90a), compiled to PTX with the pinned nvcc (kernels.py defines the
programs and problems, lower.py reads TileLang's artifact, environment.py checks the
installed extra, builder.py makes the rows)."""
from .builder import TileLangBuilder

__all__ = ["TileLangBuilder"]
