"""The ``tilelang`` source: TileLang programs (GEMM, FlashAttention forward, RMSNorm) under
tile/pipeline configurations, lowered by TileLang to CUDA C and launch recipes (with TMA
descriptors on sm_90a), compiled to PTX with the pinned nvcc (kernels.py defines the
programs and problems, lower.py reads TileLang's artifact, builder.py makes the rows;
builders/extras.py checks the installed extra)."""
from .builder import TileLangBuilder

__all__ = ["TileLangBuilder"]
