"""Builders turn a source (Triton kernels, CUTLASS templates, user manifests, ...) into
Problems + KernelRecords. ``BUILDERS`` is the one explicit registry: name -> "module:Class",
imported on use so a missing optional dependency only affects its own source."""
from __future__ import annotations

import importlib

from dataset_spec.errors import PtxdsError


BUILDERS = {
    "triton": "builders.triton:TritonBuilder",
    "triton-dump": "builders.triton:TritonDumpBuilder",
    "ptx": "builders.manifest:ManifestBuilder",
    "cutlass": "builders.cutlass:CutlassBuilder",
    "mirage": "builders.mirage:MirageBuilder",
    "handhack": "builders.handhack:HandhackBuilder",
    "tvm": "builders.tvm:TvmBuilder",
}

EXTRAS = {"triton": "triton", "triton-dump": "triton", "cutlass": "cutlass", "handhack": "triton", "tvm": "tvm"}


class UnknownSourceError(PtxdsError, ValueError):
    """The named source is not in the registry."""


class MissingSourceDependency(PtxdsError, RuntimeError):
    """A source's optional dependency is not installed."""


def load_builder(name: str):
    """The builder class registered under ``name``."""
    if name not in BUILDERS:
        raise UnknownSourceError(f"unknown source {name!r}; known sources: {', '.join(sorted(BUILDERS))}")
    return import_builder(name, BUILDERS[name])


def import_builder(name: str, path: str):
    """The class at ``path`` ("module:Class"), the builder of source ``name``; a missing
    optional dependency is one line naming the extra to install. Workers of a build import
    by path, so a source registered only in the driver still reaches them."""
    module_name, class_name = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("builders",):
            raise
        raise MissingSourceDependency(
            f"source {name!r} needs the Python package {exc.name!r}; install it with "
            f"pip install 'ptxds[{EXTRAS.get(name, name)}]'") from None
    return getattr(module, class_name)
