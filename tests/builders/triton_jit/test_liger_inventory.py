"""Every @triton.jit function of the installed Liger-Kernel is accounted for: described by a
call description in examples/liger, or listed in examples/liger/KERNELS.md with the reason it
is not (a device function, a backend that is not CUDA's, a kernel not written yet), so the
count of described kernels cannot drop without a test failing."""
import importlib.util
import re
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "liger"
JIT = re.compile(r"^@triton\.jit\b")
DEF = re.compile(r"^def\s+(\w+)\s*\(")
ROW = re.compile(r"^\| `(?P<kernel>[\w.:]+)`(?: \((?P<count>\d+) functions\))? \| (?P<what>.+) \|$")
DESCRIBED_AT_LEAST = 44


def installed_kernels() -> list:
    """module:function of every top-level @triton.jit function under liger_kernel/ops."""
    root = Path(importlib.util.find_spec("liger_kernel").origin).parent
    found = []
    for path in sorted((root / "ops").rglob("*.py")):
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            if JIT.match(line):
                name = next((m.group(1) for m in map(DEF.match, lines[index + 1:index + 6]) if m), None)
                assert name, f"{path}:{index + 1}: @triton.jit without a def below it"
                found.append(".".join(path.relative_to(root.parent).with_suffix("").parts) + ":" + name)
    return found


def described_kernels() -> dict:
    """kernel -> description files naming it (their ``kernel:`` line)."""
    described = {}
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for line in path.read_text().splitlines():
            if line.startswith("kernel:"):
                described.setdefault(line.split(":", 1)[1].strip(), []).append(path.name)
    return described


def listed_kernels() -> dict:
    """KERNELS.md's rows: kernel (or module prefix) -> (function count or None, what it says)."""
    rows = {}
    for line in (EXAMPLES / "KERNELS.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            rows[match["kernel"]] = (int(match["count"]) if match["count"] else None, match["what"])
    return rows


def test_every_installed_kernel_is_described_or_listed_with_its_reason():
    pytest.importorskip("liger_kernel")
    found, described, listed = installed_kernels(), described_kernels(), listed_kernels()
    prefixes = {k: count for k, (count, _) in listed.items() if count is not None}
    for prefix, count in prefixes.items():
        under = [k for k in found if k.startswith(prefix + ".")]
        assert len(under) == count, f"KERNELS.md says {prefix} has {count} functions; the package has {len(under)}"
    own = [k for k in found if not any(k.startswith(p + ".") for p in prefixes)]
    unaccounted = [k for k in own if k not in described and k not in listed]
    assert not unaccounted, f"neither described nor listed in KERNELS.md: {unaccounted}"
    assert not [k for k in described if k not in found], "a description names a kernel the package lacks"
    assert not [k for k in listed if k not in found and k not in prefixes], "KERNELS.md lists a kernel the package lacks"
    for kernel in own:  # KERNELS.md tells the same story as the description files
        what = listed[kernel][1]
        if kernel in described:
            assert what == ", ".join(described[kernel]), (kernel, what)
        else:
            assert what.startswith("not described: "), (kernel, what)
    assert len(described) >= DESCRIBED_AT_LEAST, sorted(described)
