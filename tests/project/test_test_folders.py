"""The test folders shadow no package: pytest puts every folder that holds a test file on
sys.path, so a subfolder of it named like a package (``tests/builders/tilelang`` beside
``tests/builders/test_x.py``) would be imported as an empty namespace package wherever that
package is not installed, and code probing for the package would think it is."""
import importlib.util
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _shadowed(folder: Path) -> list:
    """Subfolders of ``folder`` whose name some code could import as a package or module
    found outside the tests."""
    out = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))):
        saved = list(sys.path)
        try:
            sys.path[:] = [p for p in sys.path if not Path(p or ".").resolve().is_relative_to(TESTS)]
            spec = importlib.util.find_spec(sub.name)
        except (ImportError, ValueError):
            spec = None
        finally:
            sys.path[:] = saved
        known = {"builders", "verify", "dataset_spec", "ptx_tools", "ptxds"}  # regular packages: they win
        if spec is not None and sub.name not in known or sub.name in {"tilelang", "tvm", "cutlass", "triton", "torch",
                                                                        "mirage", "fla", "transformers", "inductor"}:
            out.append(sub.name)
    return out


def test_no_folder_of_tests_holds_a_folder_named_like_a_package():
    holders = sorted({p.parent for p in TESTS.rglob("test_*.py")} - {TESTS})
    clashes = [f"{folder.relative_to(TESTS)}/{name}" for folder in holders for name in _shadowed(folder)]
    assert not clashes, f"move the test files beside these folders one level down: {clashes}"


def test_the_check_sees_a_clash(tmp_path):
    (tmp_path / "tilelang").mkdir()
    (tmp_path / "numpy").mkdir()
    (tmp_path / "plain_folder_name").mkdir()
    assert _shadowed(tmp_path) == ["numpy", "tilelang"]
