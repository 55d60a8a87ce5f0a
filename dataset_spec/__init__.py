"""The ptxds data model, Arrow schema, problem registry, shard I/O and dataset card.

Imports no other package of the project."""
from .model import (SCHEMA_VERSION, Arg, Buffer, Distribution, KernelRecord, Launch, Pair,
                    Patch, Problem, Resources, SpecError, make_kernel_id)

__all__ = ["SCHEMA_VERSION", "Arg", "Buffer", "Distribution", "KernelRecord", "Launch", "Pair",
           "Patch", "Problem", "Resources", "SpecError", "make_kernel_id"]
