"""Where the op registry used to live: ``dataset_spec.ops`` now holds it, one module per
family. These names stay importable from here for callers of the old path."""
from __future__ import annotations

from .ops import DEFAULT_INPUT_RANGE, OPS, OpSpec, get_op, init_moments
from .ops.gemm import gemm_exact, saturate_to_output

__all__ = ["OPS", "OpSpec", "get_op", "init_moments", "DEFAULT_INPUT_RANGE", "gemm_exact", "saturate_to_output"]
