"""Which ops a captured reference may call: those a plain ``import torch`` of the declared
minimum torch provides (docs/inductor.md, "Portable references").

A reference runs on the verifying machine, whose torch may be older than the capturing one
and never imports Inductor. Inductor's own prims (``prims.prepare_softmax_online``,
``prims.fma``, ...) exist only once ``torch._inductor`` is imported, so a reference that
names one fails there. The capture decomposes every op outside ``MINIMUM_TORCH_OPS`` into
ops inside it (``decomposition``); the build refuses a reference that still names one.

``MINIMUM_TORCH_OPS`` (torch_ops_minimum.py) lists every ATen overload and prim of
``MINIMUM_TORCH``, read from that release's wheel by ``ops_in_wheel``:
``python -m builders.inductor.portable_ops WHEEL`` writes it again for another release.
"""
from __future__ import annotations

import ast
import re
import sys
import textwrap
import zipfile
from pathlib import Path

from builders.inductor.torch_ops_minimum import MINIMUM_TORCH, OPS

MINIMUM_TORCH_OPS = frozenset(OPS.split())
OP_IN_CODE = re.compile(r"torch\.ops\.(\w+)\.(\w+)\.(\w+)")


def op_key(namespace: str, name: str, overload: str) -> str:
    """``aten::amax.default``: how MINIMUM_TORCH_OPS names an op overload."""
    return f"{namespace}::{name}.{overload}"


def overload_key(op) -> str:
    """The key of a torch OpOverload (``op.name()`` is ``aten::amax`` or ``aten::add.Tensor``)."""
    namespace, rest = op.name().split("::", 1)
    name = rest.split(".")[0]
    return op_key(namespace, name, op._overloadname or "default")


def is_portable(target) -> bool:
    """Whether an FX node target is a plain Python function (getitem) or an op overload of
    the minimum torch."""
    if not hasattr(target, "_overloadname"):
        return True
    return overload_key(target) in MINIMUM_TORCH_OPS


def missing_ops(reference_source: str) -> list:
    """Op overloads a reference module's text calls that the minimum torch lacks, sorted."""
    return sorted({f"{ns}.{name}.{overload}" for ns, name, overload in OP_IN_CODE.findall(reference_source)
                   if op_key(ns, name, overload) not in MINIMUM_TORCH_OPS})


def decomposition(target):
    """A function of ops of the minimum torch that computes ``target``, or None: a prim's own
    ATen implementation (Inductor's prims carry one), else torch's decomposition table's."""
    impl = getattr(target, "impl_aten", None)
    if impl is not None:
        return impl
    from torch._decomp import decomposition_table
    return decomposition_table.get(target)


# ----------------------------------------------------------------------------- the op list
def ops_in_wheel(wheel: str) -> tuple:
    """(torch version, sorted op keys) of a torch wheel: every ATen overload its operator
    headers declare and every prim its ``torch/_prims`` defines."""
    ops = set()
    header = re.compile(r'name = "aten::(\w+)";\s*static constexpr const char\* overload_name = "(\w*)";')
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        version = re.search(r"__version__ = '([^']+)'", archive.read("torch/version.py").decode()).group(1)
        for name in names:
            if name.startswith("torch/include/ATen/ops/") and name.endswith("_ops.h"):
                for op, overload in header.findall(archive.read(name).decode()):
                    ops.add(op_key("aten", op, overload or "default"))
        prims = archive.read("torch/_prims/__init__.py").decode()
    for name in _prim_names(prims):
        ops.add(op_key("prims", name, "default"))
    return version, sorted(ops)


def _prim_names(source: str) -> set:
    """The prims ``torch/_prims/__init__.py`` defines: its ``__all__`` and every schema or
    ``name=`` it passes to a prim maker."""
    names = set(re.findall(r'schema\s*=\s*"(\w+)\(', source)) | set(re.findall(r'\bname\s*=\s*"(\w+)"', source))
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            names |= {e.value for e in node.value.elts if isinstance(e, ast.Constant) and e.value.islower()}
    return names


def write_ops_module(wheel: str, out: Path) -> int:
    """Writes torch_ops_minimum.py from a torch wheel; returns the number of ops."""
    version, ops = ops_in_wheel(wheel)
    release = ".".join(version.split("+")[0].split(".")[:2])
    body = "\n".join(textwrap.wrap(" ".join(ops), 110, break_on_hyphens=False))
    out.write_text(f'"""Every ATen overload and prim of torch {release} ({version}), as '
                   f'builders/inductor/portable_ops.py\nreads them from its wheel: the ops a '
                   f'captured reference may call."""\nMINIMUM_TORCH = "{release}"\n'
                   f'OPS = """\n{body}\n"""\n')
    return len(ops)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m builders.inductor.portable_ops TORCH_WHEEL")
    count = write_ops_module(sys.argv[1], Path(__file__).with_name("torch_ops_minimum.py"))
    print(f"{count} ops written")
