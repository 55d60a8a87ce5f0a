"""Whether this environment can run a source whose extra excludes another's, read from
installed package metadata (importing a TVM built against another apache-tvm-ffi ABI can
crash the process, so nothing is imported).

tilelang 0.1.15 (the ``tilelang`` extra) requires ``apache-tvm-ffi<0.1.13``; apache-tvm 0.27
(the ``tvm`` extra) requires at least 0.1.14.post0. The two extras exclude each other: one
environment holds one of them, and the source of the other stops with one line saying so.
"""
from __future__ import annotations

from importlib import metadata
from typing import Optional

FFI = "apache-tvm-ffi"
# source -> (its distribution, the Python package it imports, its extra; the other source's)
EXCLUSIVE = {
    "tilelang": (("tilelang", "tilelang", "tilelang"), ("apache-tvm", "tvm")),
    "tvm": (("apache-tvm", "tvm", "tvm"), ("tilelang", "tilelang")),
}


def _version(dist: str) -> Optional[str]:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _ffi_requirement(dist: str):
    """``dist``'s own requirement on apache-tvm-ffi (a packaging Requirement), or None."""
    from packaging.requirements import Requirement
    for text in metadata.requires(dist) or ():
        req = Requirement(text)
        if req.name == FFI and (req.marker is None or req.marker.evaluate({"extra": ""})):
            return req
    return None


def extra_blocker(source: str) -> Optional[str]:
    """One line saying why ``source`` (tilelang or tvm) cannot run here, or None when it
    can (and for every other source)."""
    if source not in EXCLUSIVE:
        return None
    (dist, package, extra), (other_dist, other_extra) = EXCLUSIVE[source]
    own, other = _version(dist), _version(other_dist)
    if own is None:
        apart = (f" in an environment without the {other_extra} extra ({other_dist} {other} is installed here, "
                 f"and the two extras pin conflicting {FFI} versions)") if other else ""
        return (f"source {source!r} needs the Python package {package!r}; install it with "
                f"pip install 'ptxds[{extra}]'{apart}")
    requirement = _ffi_requirement(dist)
    ffi = _version(FFI)
    if requirement is not None and (ffi is None or not requirement.specifier.contains(ffi, prereleases=True)):
        found = f"{ffi} is installed" if ffi else "it is not installed"
        cause = (f" ({other_dist} {other}, the {other_extra} extra, needs another one: the {extra} and "
                 f"{other_extra} extras exclude each other)") if other else ""
        return (f"source {source!r}: {dist} {own} needs {FFI}{requirement.specifier}, but {found}{cause}; "
                f"install pip install 'ptxds[{extra}]' in an environment of its own")
    return None
