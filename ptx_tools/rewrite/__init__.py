"""The PTX rewrite engine: an instruction-level view of PTX (``PtxProgram``),
semantics-preserving rewrites (``REWRITES``) and semantic mutants (``MUTATIONS``). Each
operator records its name and the lines where it applied."""
from ..program import Instruction, Line, PtxProgram, defs_and_uses
from .operators import MUTATIONS, REWRITES, Context, Edit, NotApplicable, apply_mutation, apply_rewrites

__all__ = ["PtxProgram", "Instruction", "Line", "defs_and_uses", "REWRITES", "MUTATIONS", "Context",
           "Edit", "NotApplicable", "apply_rewrites", "apply_mutation"]
