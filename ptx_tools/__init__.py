"""PTX tools for ptxds: parse, normalise and hash, split per entry, tag features, compile
CUDA C++ to PTX and assemble PTX with the pinned CUDA wheels."""
from .assemble import Assembly, assemble, parse_resources, pin_ptx_version
from .errors import AssemblyError, CompileError, PtxError, ToolchainError
from .features import feature_tags
from .normalize import normalize_ptx, ptx_hash, split_module
from .parse import ModuleItem, PtxFunction, PtxModule, PtxParam, PtxVariable, parse_ptx
from .toolchain import compile_cuda, cuda_root, find_tool, toolchain_versions

__all__ = [
    "parse_ptx", "normalize_ptx", "ptx_hash", "split_module", "feature_tags", "assemble",
    "pin_ptx_version", "compile_cuda", "find_tool", "cuda_root", "toolchain_versions",
    "parse_resources", "PtxError", "ToolchainError", "AssemblyError", "CompileError",
    "PtxModule", "PtxFunction", "PtxParam", "PtxVariable", "ModuleItem", "Assembly",
]
