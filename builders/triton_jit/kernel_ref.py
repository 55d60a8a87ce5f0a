"""Import a ``@triton.jit`` kernel named in a call description and read what Triton itself
says about it: its parameters (``JITFunction.params``), its ``@triton.autotune`` configs
(``Autotuner.configs``) and its ``@triton.heuristics`` (``Heuristics.values``).

``kernel`` is ``module:function`` (a module file next to the description, else an importable
module) or ``path/to/file.py:function`` (relative to the description's folder)."""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from builders.triton_jit.specialize import ParamInfo

KERNEL_FORM = re.compile(r"(?P<module>[^:]+):(?P<name>[A-Za-z_]\w*)")


class KernelImportError(Exception):
    """Why the kernel named in a description cannot be used (the loader adds file and field)."""


@dataclass
class KernelRef:
    """The kernel's JITFunction and what wraps it."""
    fn: object                                   # triton.runtime.JITFunction
    params: list                                 # ParamInfo, in the kernel's order
    module_file: str
    module_sha256: str
    autotune: list = field(default_factory=list)     # triton.Config of @triton.autotune
    heuristics: dict = field(default_factory=dict)   # constexpr name -> function of the args

    @property
    def name(self) -> str:
        return self.fn.__name__

    def param(self, name: str):
        return next((p for p in self.params if p.name == name), None)


def module_from_file(path: Path):
    """Import a module from its file under a name of its own (so two files both called
    kernels.py never meet in ``sys.modules``)."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"ptxds_triton_jit_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # @triton.jit reads its source through inspect
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def import_kernel_module(module: str, folder: Path):
    if module.endswith(".py") or "/" in module:
        path = (folder / module).resolve()
        if not path.is_file():
            raise KernelImportError(f"{module} is not a file (looked in {folder})")
        return module_from_file(path)
    local = folder / Path(*module.split(".")).with_suffix(".py")
    if local.is_file():
        return module_from_file(local.resolve())
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise KernelImportError(f"module {module!r} is neither next to the description ({local.name}) nor "
                                f"importable ({exc})") from None


def load_kernel(spec: str, folder: Path) -> KernelRef:
    """The kernel ``spec`` names, unwrapped from its autotuner and heuristics."""
    from triton.runtime import Autotuner, Heuristics, JITFunction

    match = KERNEL_FORM.fullmatch(spec.strip())
    if not match:
        raise KernelImportError(f"write it as module:function or path/to/file.py:function, got {spec!r}")
    try:
        module = import_kernel_module(match["module"], folder)
    except KernelImportError:
        raise
    except Exception as exc:  # user code: any failure to import is the description's error
        raise KernelImportError(f"importing {match['module']!r} failed: {type(exc).__name__}: {exc}") from None
    obj = getattr(module, match["name"], None)
    if obj is None:
        raise KernelImportError(f"{match['module']!r} has no {match['name']!r}")
    autotune, heuristics = [], {}
    while not isinstance(obj, JITFunction):
        if isinstance(obj, Autotuner):
            autotune = autotune or list(obj.configs)
        elif isinstance(obj, Heuristics):
            heuristics = {**obj.values, **heuristics}
        else:
            raise KernelImportError(f"{match['name']} is a {type(obj).__name__}, not a @triton.jit kernel")
        obj = obj.fn
    params = [ParamInfo(name=p.name, index=p.num, constexpr=p.is_constexpr, const=p.is_const,
                        annotation=p.annotation_type or "", no_specialize=p.do_not_specialize,
                        no_align=p.do_not_specialize_on_alignment, has_default=p.has_default,
                        default=p.default if p.has_default else None)
              for p in obj.params]
    module_file = str(Path(module.__file__).resolve()) if getattr(module, "__file__", None) else ""
    digest = hashlib.sha256(Path(module_file).read_bytes()).hexdigest() if module_file else ""
    return KernelRef(obj, params, module_file, digest, autotune, heuristics)
