"""Triton problem spec files without ``eval``: grid and argument expressions are evaluated
over a fixed set of operators and functions, an escape attempt or a division by zero is a
SpecError naming the expression, a failing expression costs its own rows only (they become
``no_problem``), and an entry with an unknown key stops the build before any item, naming
the key."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from builders.base import BuildOptions
from builders.triton_dump import TritonDumpBuilder
from builders.triton_dump.specs import load_problem_specs
from builders.triton.expressions import evaluate
from dataset_spec.model import SpecError

ROOT = Path(__file__).resolve().parents[3]
SCOPE = {"n": 1000, "m": 7, "max_range": 128, "min_range": 16, "ranges": [16, 64, 128], "num_warps": 4}
ADD = {"kernel": "add_kernel", "signature": "*fp32,*fp32,*fp32,i32",
       "problem": {"problem_id": "dump/add/n1048576", "op": "vector_add", "buffers": [
           {"name": "x", "dtype": "float32", "shape": [1048576], "role": "in"},
           {"name": "y", "dtype": "float32", "shape": [1048576], "role": "in"},
           {"name": "out", "dtype": "float32", "shape": [1048576], "role": "out"}]},
       "vars": {"n": 1048576}, "args": ["x", "y", "out", "n"], "grid": ["cdiv(n, max_range)"]}


@pytest.mark.parametrize("text, value", [
    ("cdiv(n, max_range)", 8), ("next_pow2(n)", 1024), ("max(ranges)", 128), ("min(m, 3) * 2", 6),
    ("ranges[0] + ranges[-1]", 144), ("n // 3 + n % 3", 334), ("(n + 127) >> 7 << 1", 16), ("n / 8", 125.0),
    ("2 ** 10 - 1 & 0xFF | 1", 255), ("-m + abs(-m)", 0), ("n if num_warps >= 4 else m", 1000),
    ("1 if 0 < m < 8 and not n == 3 else 2", 1), (" 12 ", 12), (7, 7), (2.5, 2.5)])
def test_the_expressions_spec_files_use(text, value):
    assert evaluate(text, SCOPE) == value


@pytest.mark.parametrize("text, says", [
    ("().__class__.__base__.__subclasses__()", "only calls of"),
    ("().__class__", "Attribute is not allowed"),
    ("__import__('os').system('true')", "only calls of"),
    ("(lambda: 1)()", "only calls of"),
    ("[x for x in ranges]", "ListComp is not allowed"),
    ("n.bit_length()", "only calls of"),
    ("'a' * 3", "'a' is not a number"),
    ("max(ranges, key=abs)", "plain arguments"),
    ("cdiv(n, 0)", "division by zero"),
    ("n % (m - 7)", "division by zero"),
    ("nn + 1", "unknown name 'nn'; known: m, max_range, min_range, n, num_warps, ranges"),
    ("2 ** 10 ** 10", "an exponent beyond 64"),
    ("1 << 100000", "a shift beyond 64 bits"),
    ("n ** 64", "beyond 2**64"),
    ("ranges[7]", "out of range"),
    ("ranges + 1", "is a list, not a number"),
    ("cdiv", "is a function; call it"),
    ("cdiv(n,", "not an expression"),
    ("n; m", "not an expression"),
    ("x = 1", "not an expression"),
])
def test_anything_else_is_one_spec_error_naming_the_expression(text, says):
    with pytest.raises(SpecError) as caught:
        evaluate(text, SCOPE)
    message = str(caught.value)
    assert says in message and "\n" not in message
    assert message.startswith(f"expression {text.strip()!r}")


def test_a_list_or_none_is_not_an_expression():
    for value in (None, [1], True):
        with pytest.raises(SpecError, match="give a number or an expression string"):
            evaluate(value, SCOPE)


@pytest.mark.parametrize("change, says", [
    ({"gird": ["1"]}, "entry 2 (add_kernel): unknown key 'gird'; the keys are kernel, signature, problem"),
    ({"args": "x, y"}, "entry 2 (add_kernel): args is a str, it should be a list"),
    ({"vars": {"n": "big"}}, "entry 2 (add_kernel): vars.n is 'big', it should be a number"),
    ({"kernel": None}, "entry 2: kernel is a NoneType, it should be a str"),
    ({"problem": dict(ADD["problem"], bufers=[])}, "entry 2 (add_kernel): problem has unknown field 'bufers'"),
])
def test_a_spec_file_with_a_wrong_key_is_refused_by_name(tmp_path, change, says):
    path = tmp_path / "problems.json"
    path.write_text(json.dumps([ADD, dict(ADD, **change)]))
    with pytest.raises(SpecError) as caught:
        load_problem_specs(str(path))
    assert str(caught.value).startswith(f"{path}: {says}")
    path.write_text(json.dumps([ADD]))
    assert load_problem_specs(str(path)) == [ADD]


def test_an_entry_without_its_kernel_or_problem_is_refused(tmp_path):
    path = tmp_path / "problems.yaml"
    path.write_text("- kernel: add_kernel\n  grid: [1]\n")
    with pytest.raises(SpecError, match=r"entry 1 \(add_kernel\): no problem; every entry names its kernel"):
        load_problem_specs(str(path))
    path.write_text("- [add_kernel]\n")
    with pytest.raises(SpecError, match="entry 1 is a list; each entry is a mapping"):
        load_problem_specs(str(path))


def test_no_eval_in_the_builders():
    found = subprocess.run(["grep", "-rn", "eval(", str(ROOT / "builders")], capture_output=True, text=True)
    assert found.stdout == ""


@pytest.fixture(scope="module")
def add_dump(tmp_path_factory):
    """A Triton cache of two add_kernel variants and one square_kernel (compiled for sm_80)."""
    pytest.importorskip("triton")
    from test_triton_builder import compile_into
    base = tmp_path_factory.mktemp("add-dump")
    with pytest.MonkeyPatch.context() as monkeypatch:
        compile_into(monkeypatch, base / "cache", base / "dump")
    return base / "cache"


def dump_rows(cache: Path, specs, tmp_path) -> list:
    path = tmp_path / "problems.json"
    path.write_text(json.dumps(specs))
    builder = TritonDumpBuilder(BuildOptions(extra={"from_dump": str(cache), "problem_file": str(path)}))
    return [row for item in builder.work_items() for row in builder.build(item)]


def test_a_division_by_zero_costs_its_own_rows_only(add_dump, tmp_path):
    good = [r for r in dump_rows(add_dump, [ADD], tmp_path) if r.name == "add_kernel"]
    assert len(good) == 2 and all(r.launches and r.status == "built" for r in good)
    rows = dump_rows(add_dump, [dict(ADD, grid=["cdiv(n, max_range - max_range)", 1, 1])], tmp_path)
    adds = [r for r in rows if r.name == "add_kernel"]
    assert len(rows) == 3 and len(adds) == 2
    for row in adds:
        assert row.status == "no_problem" and row.ptx and row.launches == []
        assert row.status_message == ("problem spec for add_kernel does not apply: SpecError: expression "
                                      "'cdiv(n, max_range - max_range)': division by zero")


def test_a_bad_key_stops_the_dump_build_before_any_item(add_dump, tmp_path):
    with pytest.raises(SpecError, match="unknown key 'grids'"):
        dump_rows(add_dump, [dict(ADD, grids=[1])], tmp_path)
