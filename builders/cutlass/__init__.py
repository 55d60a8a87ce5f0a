"""The CUTLASS source: profiler GEMM templates enumerated (``catalog.py``), compiled in
batches (``source.py``, ``compile.py``), their Params packed on the host (``packer.py``,
``host/``) and grouped per function and size (``problem.py``, ``builder.py``). The ``cutlass-conv``
source does the same for the implicit-GEMM convolutions (``conv_catalog.py``,
``conv_source.py``, ``conv_pack.py``, ``host/conv_packer.h``, ``conv_builder.py``)."""
from builders.cutlass.builder import CutlassBuilder, entry_params

__all__ = ["CutlassBuilder", "entry_params"]
