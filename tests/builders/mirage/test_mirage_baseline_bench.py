"""benchmarks/mirage_baseline.py's CPU parts: rank correlation and the ordering report."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "mirage_baseline", Path(__file__).resolve().parents[3] / "benchmarks" / "mirage_baseline.py")
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


def test_ranks_share_ties_and_spearman_reads_the_ordering():
    assert bench.ranks([3.0, 1.0, 1.0, 2.0]) == [4.0, 1.5, 1.5, 3.0]
    assert bench.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert bench.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert bench.spearman([1, 2, 3, 4], [1, 2, 4, 3]) == pytest.approx(0.8)
    assert math.isnan(bench.spearman([1, 2], [2, 1]))


def _rows(times, status="passed"):
    return [{"name": f"m{i}", "arch": "sm_90a", "status": status, "time_us_median": t} for i, t in enumerate(times)]


def test_ordering_change_names_the_fastest_and_the_largest_move():
    old, new = _rows([10.0, 20.0, 30.0, 40.0]), _rows([5.0, 10.0, 15.0, 4.0])
    text = bench.ordering_change(new, old)
    assert text.startswith("rank corr -0.20 over 4 members")
    assert "old/new kernel time median 2.00x" in text and "fastest m0 -> m3" in text
    assert "largest move m3 sm_90a (rank 4 -> 1)" in text


def test_ordering_change_ignores_members_not_verified_in_both():
    old = _rows([10.0, 20.0, 30.0])
    new = _rows([3.0, 2.0, 1.0], status="wrong_result")
    assert bench.ordering_change(new, old) == "no member timed in both"


def test_every_recognised_operator_has_a_torch_formula():
    from builders.mirage.operators import OPERATORS
    pytest.importorskip("torch")
    assert all(bench.torch_formula(op.op) for op in OPERATORS)
