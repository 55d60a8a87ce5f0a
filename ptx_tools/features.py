"""Feature tags of a PTX program: which instruction families and data types it uses.

Tags are read from instruction opcodes (with their modifiers), so they work on any
comment-free or commented PTX, even a fragment the parser would reject.
"""
from __future__ import annotations

import re

from ._text import iter_instructions, strip_comments

# opcode prefix -> tag; the longest matching prefix wins (cp.async.bulk.tensor before cp.async).
_PREFIX_TAGS = {
    "mma.sync": "mma.sync",
    "mma.sp": "mma.sync",
    "wmma": "wmma",
    "wgmma": "wgmma",
    "tcgen05": "tcgen05",
    "cp.async": "cp.async",
    "cp.async.bulk": "cp.async.bulk",
    "cp.async.bulk.tensor": "cp.async.bulk.tensor",
    "cp.async.bulk.prefetch.tensor": "cp.async.bulk.tensor",
    "cp.reduce.async.bulk": "cp.async.bulk",
    "cp.reduce.async.bulk.tensor": "cp.async.bulk.tensor",
    "ldmatrix": "ldmatrix",
    "stmatrix": "stmatrix",
    "mbarrier": "mbarrier",
    "setmaxnreg": "setmaxnreg",
    "tensormap": "tensormap",
    "fence.proxy.tensormap": "tensormap",
    "prefetch.tensormap": "tensormap",
    "fence.proxy.async": "fence.proxy.async",
    "elect.sync": "elect.sync",
    "barrier.cluster": "cluster",
    "mapa": "cluster",
    "redux.sync": "redux.sync",
    "shfl.sync": "shfl.sync",
    "vote.sync": "vote.sync",
    "atom": "atom",
    "red": "red",
    "bar.sync": "bar.sync",
    "barrier.sync": "bar.sync",
    "barrier.cta.sync": "bar.sync",
    "griddepcontrol": "griddepcontrol",
    "multimem": "multimem",
}
# Type modifiers -> data-type tag.
_TYPE_TAGS = {
    "f16": "fp16", "f16x2": "fp16",
    "bf16": "bf16", "bf16x2": "bf16",
    "tf32": "tf32",
    "e4m3": "fp8", "e5m2": "fp8", "e4m3x2": "fp8", "e5m2x2": "fp8", "e4m3x4": "fp8",
    "e5m2x4": "fp8", "f8f6f4": "fp8",
    "e2m1": "fp4", "e2m1x2": "fp4",
    "e3m2": "fp6", "e2m3": "fp6", "e3m2x2": "fp6", "e2m3x2": "fp6",
    "f64": "fp64",
}
_CLUSTER_REGISTER = re.compile(r"%(?:cluster_\w+|clusterid|nclusterid|is_explicit_cluster)\b")
_CLUSTER_DIRECTIVE = re.compile(r"\.(?:reqnctapercluster|explicitcluster|maxclusterrank)\b")


def _prefix_tag(opcode: str):
    parts = opcode.split(".")
    for n in range(len(parts), 0, -1):
        tag = _PREFIX_TAGS.get(".".join(parts[:n]))
        if tag:
            return tag
    return None


def feature_tags(text: str) -> list:
    """Sorted unique tags, e.g. ['bf16', 'cp.async', 'ldmatrix', 'mma.sync']."""
    clean = strip_comments(text)
    tags = set()
    for opcode in set(iter_instructions(clean)):
        tag = _prefix_tag(opcode)
        if tag:
            tags.add(tag)
        parts = opcode.split(".")
        for modifier in parts[1:]:
            if modifier in _TYPE_TAGS:
                tags.add(_TYPE_TAGS[modifier])
            if "::cluster" in modifier:  # e.g. ld.shared::cluster, multicast::cluster
                tags.add("cluster")
    if _CLUSTER_REGISTER.search(clean) or _CLUSTER_DIRECTIVE.search(clean):
        tags.add("cluster")
    return sorted(tags)
