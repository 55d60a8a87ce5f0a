"""The rooms inside verify/, ptx_tools/ and dataset_spec/ (docs/contracts.md): each module imports only
modules of its own room or of the rooms its room may use, lazy imports inside functions
included, so no arrow runs back up and no two rooms import each other."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# room -> the rooms it may import ("" is the package's top level: orchestration)
VERIFY = {
    "device": set(),
    "trials": {"device"},
    "judge": {"device", "trials"},
    "member": {"device", "trials"},
    "timing": {"device", "trials", "member"},
    "probes": {"device", "trials", "judge", "member"},
    "": {"device", "trials", "judge", "member", "timing", "probes"},
}
PTX_TOOLS = {
    "base": set(),  # parse, normalize, assemble, toolchain, errors, ...: the package's own files
    "program": {"base"},
    "analysis": {"base", "program"},
    "instrument": {"base", "program", "analysis"},
    "rewrite": {"base", "program", "analysis"},
}

# the folder I/O and publishing sit above the model, the schema and the op semantics
DATASET_SPEC = {"": {"ops"}, "ops": {""}, "store": {"", "ops"}}


def _room(package: str, path: Path) -> str:
    parts = path.relative_to(ROOT / package).parts
    if package == "ptx_tools":
        if len(parts) > 1:
            return parts[0]
        return "program" if parts[0] == "program.py" else "base"
    return parts[0] if len(parts) > 1 else ""


def _imported_rooms(package: str, path: Path):
    """(line, room) of every import of a module of ``package`` in ``path``."""
    here = list(path.relative_to(ROOT).parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                module = base + (node.module.split(".") if node.module else [])
            else:
                module = (node.module or "").split(".")
            if module[0] != package:
                continue
            targets = [module + [alias.name] for alias in node.names] if len(module) == 1 else [module]
        elif isinstance(node, ast.Import):
            targets = [alias.name.split(".") for alias in node.names if alias.name.split(".")[0] == package]
        else:
            continue
        for target in targets:
            file = ROOT.joinpath(*target)
            file = file / "__init__.py" if file.is_dir() else file.with_suffix(".py")
            if file.exists():
                yield node.lineno, _room(package, file)


@pytest.mark.parametrize("package,rules", [("verify", VERIFY), ("ptx_tools", PTX_TOOLS),
                                           ("dataset_spec", DATASET_SPEC)])
def test_every_import_goes_to_an_allowed_room(package, rules):
    rooms = {_room(package, path) for path in (ROOT / package).rglob("*.py")}
    assert rooms == set(rules), f"rooms on disk {sorted(rooms)} differ from the rules' {sorted(rules)}"
    wrong = []
    for path in sorted((ROOT / package).rglob("*.py")):
        own = _room(package, path)
        for line, room in _imported_rooms(package, path):
            if room != own and room not in rules[own]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({own or 'top'}) imports room {room or 'top'}")
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_a_back_arrow(monkeypatch):
    """A device module that imported the judge, lazily, would be reported."""
    fake = ROOT / "verify" / "device" / "driver.py"
    text = fake.read_text() + "\n\ndef _late():\n    from ..judge.findings import derive\n"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: text if self == fake else Path.read_bytes(self).decode())
    rooms = [room for _, room in _imported_rooms("verify", fake)]
    assert "judge" in rooms and "judge" not in VERIFY["device"]
