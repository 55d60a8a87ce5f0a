"""Builders turn a source (Triton kernels, CUTLASS templates, user manifests, ...) into
Problems + KernelRecords. ``BUILDERS`` is the one explicit registry: name -> "module:Class",
imported on use so a missing optional dependency only affects its own source."""
from __future__ import annotations

import importlib

from .extras import extra_blocker
from .options import OptionError, option_fields, options_from_values

from dataset_spec.errors import PtxdsError


BUILDERS = {
    "triton": "builders.triton:TritonBuilder",
    "triton-dump": "builders.triton_dump:TritonDumpBuilder",
    "triton-jit": "builders.triton_jit:TritonJitBuilder",
    "ptx": "builders.manifest:ManifestBuilder",
    "cutlass": "builders.cutlass:CutlassBuilder",
    "cutlass-conv": "builders.cutlass.conv_builder:CutlassConvBuilder",
    "mirage": "builders.mirage:MirageBuilder",
    "handhack": "builders.handhack:HandhackBuilder",
    "tvm": "builders.tvm:TvmBuilder",
    "tilelang": "builders.tilelang:TileLangBuilder",
    "inductor": "builders.inductor:InductorBuilder",
    "tvm-models": "builders.tvm_models:TvmModelsBuilder",
}

# The ``ptxds[...]`` extra that installs each optional top-level package a builder module
# may import: a source whose module cannot load names its extra from the missing package
# (a source's own ``pip_extra`` says the same once it loads).
EXTRA_OF_PACKAGE = {"triton": "triton", "cutlass_library": "cutlass", "cutlass": "cutlass", "tvm": "tvm",
                    "tilelang": "tilelang"}


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
            f"pip install 'ptxds[{EXTRA_OF_PACKAGE.get(exc.name.split('.')[0], name)}]'") from None
    return getattr(module, class_name)


def source_classes() -> dict:
    """name -> builder class of every registered source whose module loads."""
    classes = {}
    for name in BUILDERS:
        try:
            classes[name] = load_builder(name)
        except MissingSourceDependency:
            continue
    return classes


def option_takers(classes: dict) -> dict:
    """option name -> (its flag, [sources taking it]) over ``classes`` (name -> class)."""
    takers: dict = {}
    for source, cls in classes.items():
        for name, field in option_fields(cls.Options).items():
            flag, sources = takers.get(name, (None, []))
            takers[name] = (flag or field.metadata.get("flag"), sources + [source])
    return takers


def resolve_source_options(source: str, values: dict, shapes: str = "default"):
    """(source, its typed Options) for a build of ``source`` with option ``values`` (name ->
    value, only those given) and the ``--shapes`` set. A source that ``serves`` requests
    setting one of its options takes them over (``--source triton --from-dump``); an option
    the source does not take is an error naming the sources that do."""
    cls = load_builder(source)
    blocker = extra_blocker(source)   # the tilelang and tvm extras exclude each other
    if blocker:
        raise MissingSourceDependency(blocker)
    classes = source_classes()
    for name, other in classes.items():
        if other.serves and other.serves[0] == source and values.get(other.serves[1]) is not None:
            source, cls = name, other
    if cls.takes_shapes:
        values = {**values, "shapes": shapes}
    elif shapes != "default":
        shaped = sorted(name for name, other in classes.items() if other.takes_shapes)
        raise OptionError(f"--shapes applies to --source {' and '.join(shaped)}; {source} states its own sizes")
    return source, options_from_values(cls.Options, values, source, option_takers(classes))


def source_credits(sources) -> dict:
    """{source: credit line} for the given sources whose builder declares one (the card's
    ``credits``); a source that is not registered, or cannot load, has none."""
    credits = {}
    for name in sorted(set(sources) & set(BUILDERS)):
        try:
            credit = load_builder(name).credit
        except MissingSourceDependency:
            continue
        if credit:
            credits[name] = credit
    return credits
