"""Whether this environment can run the ``tilelang`` source, read from installed package
metadata (importing a broken tilelang can crash the process, so nothing is imported).

tilelang 0.1.15 pins ``apache-tvm-ffi<0.1.13``; the ``tvm`` extra pins apache-tvm-ffi
0.1.14.post0 (apache-tvm 0.27 needs at least 0.1.14.post0). The two extras exclude each
other: one environment holds one of them.
"""
from __future__ import annotations

from importlib import metadata
from typing import Optional

EXTRA = "tilelang"
FFI = "apache-tvm-ffi"


def _version(dist: str) -> Optional[str]:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _ffi_requirement(tilelang_dist: str = "tilelang"):
    """tilelang's own requirement on apache-tvm-ffi (a packaging Requirement), or None."""
    from packaging.requirements import Requirement
    for text in metadata.requires(tilelang_dist) or ():
        req = Requirement(text)
        if req.name == FFI and (req.marker is None or req.marker.evaluate({"extra": ""})):
            return req
    return None


def tilelang_blocker() -> Optional[str]:
    """One line saying why the tilelang source cannot run here, or None when it can."""
    tilelang_version = _version("tilelang")
    tvm_version = _version("apache-tvm")
    if tilelang_version is None:
        apart = (f" in an environment without the tvm extra (apache-tvm {tvm_version} is installed here, and "
                 f"the two extras pin conflicting {FFI} versions)") if tvm_version else ""
        return f"source 'tilelang' needs the Python package 'tilelang'; install it with pip install 'ptxds[{EXTRA}]'{apart}"
    requirement = _ffi_requirement()
    ffi_version = _version(FFI)
    if requirement is not None and (ffi_version is None or not requirement.specifier.contains(ffi_version, prereleases=True)):
        found = f"{ffi_version} is installed" if ffi_version else "it is not installed"
        cause = (f" (apache-tvm {tvm_version}, the tvm extra, needs a newer one: the tilelang and tvm extras "
                 f"exclude each other)") if tvm_version else ""
        return (f"source 'tilelang': tilelang {tilelang_version} needs {FFI}{requirement.specifier}, but {found}"
                f"{cause}; install pip install 'ptxds[{EXTRA}]' in an environment of its own")
    return None
