"""The installed layout's short names. Installed, ``builders``, ``dataset_spec``,
``ptx_tools`` and ``verify`` are subpackages of ``ptxds`` (setup.py), while the code imports
them by their short names, as the checkout's top-level folders. When the short names do
not already lead to those same files (a checkout on ``sys.path``),
``alias_installed_packages`` puts a finder first on ``sys.meta_path`` that answers
``verify.x`` with ``ptxds.verify.x`` (the same module object), so no top-level name is
installed and another distribution's ``verify`` cannot shadow ours after ``import ptxds``."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from pathlib import Path

INNER = ("builders", "dataset_spec", "ptx_tools", "verify")


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        """Nothing to run: ``create_module`` returned the imported ``ptxds.`` module."""


class ShortNameFinder(importlib.abc.MetaPathFinder):
    """``verify[.x]`` -> ``ptxds.verify[.x]`` for the four inner packages."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in INNER:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(f"ptxds.{fullname}"))


def _origin(name: str):
    module = sys.modules.get(name)
    if module is not None:
        return getattr(module, "__file__", None)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec else None


def _resolved(origin):
    return str(Path(origin).resolve()) if origin else None


def _inner_origin(name: str):
    """Where ``ptxds.<name>`` is for this ``ptxds``: inside it (installed), beside it (a
    checkout, editable or on sys.path), else wherever an installer's finder maps it. The
    folders next to the imported ``ptxds`` come first, so a second checkout (a git worktree)
    is not sent to the files an editable install of the first one maps."""
    here = Path(__file__).resolve().parent
    for folder in (here / name, here.parent / name):
        if (folder / "__init__.py").is_file():
            return str(folder / "__init__.py")
    return _resolved(_origin(f"ptxds.{name}"))


def alias_installed_packages() -> None:
    if any(isinstance(f, ShortNameFinder) for f in sys.meta_path):
        return
    inner = {name: _inner_origin(name) for name in INNER}
    if not all(inner.values()):
        return  # a checkout: the four are top-level folders beside ptxds
    short = {name: _resolved(_origin(name)) for name in INNER}
    if short == inner:
        return  # the short names already lead to the same files (the checkout is on sys.path)
    foreign = {name: where for name, where in short.items() if name in sys.modules and where != inner[name]}
    if foreign:
        name, where = next(iter(foreign.items()))
        raise ImportError(f"ptxds imports its package {name!r} by that name, but another {name!r} ({where}) "
                          f"was imported first; import ptxds before it (its own is ptxds.{name})")
    sys.meta_path.insert(0, ShortNameFinder())
