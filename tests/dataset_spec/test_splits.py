"""Leak-free splits by function, the held-out-size config, resplit of old datasets (atomic,
nothing lost), witnesses of verified negatives, and surviving mutants not counted as
positives."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from dataset_spec.store import resplit as resplit_module
from dataset_spec.model import Buffer, KernelRecord, Launch, Problem
from dataset_spec.store.resplit import recover, resplit, split_check
from dataset_spec.schema import record_to_row, rows_to_table
from dataset_spec.store.shards import ShardWriter, _atomic_write_table, read_pairs, read_split_table, split_of
from dataset_spec.store.splits import crossing_hashes, default_splits, function_key, shape_splits
from ptxds.cli import cli
from ptxds.pairs import make_pairs, publish
from verify.trials.inputs import float_to_bits
from verify.judge.outcome import CheckResult, Consensus, TrialRun, classify
from verify.runner import add_consensus_witnesses, apply_verdict, prepare_problem


def vadd_problem(n: int, dtype: str = "float32") -> Problem:
    return Problem(f"vadd_{dtype}_{n}", "vector_add", [
        Buffer("x", dtype, (n,)), Buffer("y", dtype, (n,)), Buffer("out", dtype, (n,), role="out")],
        params={"shape": {"n": n}})


def row(n: int, name: str, ptx_hash: str, dtype: str = "float32", status: str = "built", **extra) -> KernelRecord:
    problem = vadd_problem(n, dtype)
    return KernelRecord(group_id=f"test/vector_add/{dtype}/n{n}", source="test", variant={"v": name}, name=name,
                        arch="sm_80", ptx=".version 8.0", launches=[Launch("vadd", 1, 32, [])], problem=problem,
                        ptx_hash=ptx_hash, kernel_id=f"id-{name}-{n}-{dtype}", status=status, **extra)


def light(records) -> list:
    return [{"problem": r.problem.to_json(), "group_id": r.group_id, "build_key": r.build_key,
             "ptx_hash": r.ptx_hash, "kernel_id": r.kernel_id} for r in records]


# ---- assignment ------------------------------------------------------------------------

def test_function_key_ignores_sizes_but_not_dtypes():
    assert function_key(vadd_problem(1024).to_json()) == function_key(vadd_problem(77).to_json())
    assert function_key(vadd_problem(1024).to_json()) != function_key(vadd_problem(1024, "float16").to_json())


def test_every_size_of_a_function_lands_in_one_split_and_a_shared_ptx_follows_its_first_row():
    # 60 functions (dtype x a non-size param) at three sizes; every one shares its PTX
    records = []
    for f in range(60):
        for n in (64, 4096, 1 << 20):
            r = row(n, f"k{f}", f"hash{f}")
            r.problem.params["eps"] = f
            records.append(r)
    splits = default_splits(light(records))
    assert {s for s in splits} == {"train", "validation", "test"}
    assert crossing_hashes(light(records), splits) == {}
    by_function = {}
    for r, s in zip(records, splits):
        by_function.setdefault(r.problem.params["eps"], set()).add(s)
    assert all(len(s) == 1 for s in by_function.values())
    # one PTX serving two functions that hash apart: every row goes to the first row's split
    a, b = next((x, y) for x in range(60) for y in range(60)
                if splits[3 * x] != splits[3 * y] and records[3 * x].group_id == records[3 * y].group_id)
    shared = [dataclasses.replace(r, ptx_hash="shared") for r in records[3 * a:3 * a + 3] + records[3 * b:3 * b + 3]]
    moved = default_splits(light(shared))
    first = min(range(6), key=lambda i: (shared[i].group_id, shared[i].build_key))
    assert set(moved) == {moved[first]}


def test_shape_split_holds_out_the_largest_size():
    four = [row(n, "k", f"h{n}") for n in (256, 64, 1 << 20, 4096)]
    two = [row(n, "k", f"g{n}", "float16") for n in (64, 1 << 20)]
    splits = shape_splits(light(four + two))
    assert splits[2] == "test" and sorted(splits[:4]) == ["test", "train", "train", "validation"]
    assert splits[4:] == ["train", "train"]  # fewer than three sizes: nothing to hold out
    assert shape_splits(light(four)) == splits[:4]  # seeded: the same every time


def test_writer_keeps_a_ptx_on_the_side_it_was_first_written_to(tmp_path):
    rows = [row(n, f"k{f}", "same", status="built") for f in range(12) for n in (64,)]
    for f, r in enumerate(rows):
        r.problem.params["eps"] = f  # 12 functions: not all in one split by their own hash
    for r in rows:  # one write each: the check holds after every write
        ShardWriter(tmp_path).write([r])
        assert split_check(tmp_path)["crossing_ptx_hashes"] == 0
    assert len({p.parent.name for p in (tmp_path / "kernels").glob("*/*.parquet")}) == 1


# ---- resplit -----------------------------------------------------------------------------

def old_layout(root: Path, records: list) -> None:
    """A dataset as builds wrote it before: split by a hash of group_id."""
    for index, record in enumerate(records):
        table = rows_to_table([record_to_row(record)], "kernels")
        _atomic_write_table(table, root / "kernels" / split_of(record.group_id) / f"part-old-{index:05d}.parquet")


def leaky_records() -> list:
    records = []
    for f in range(8):
        for n in (64, 256, 4096, 65536):
            r = row(n, f"k{f}", f"hash{f}")
            r.problem.params["eps"] = f
            records.append(r)
    return records


def snapshot(root) -> list:
    return sorted(read_split_table(root, "kernels", columns=["kernel_id", "build_key"]).column("kernel_id").to_pylist())


def test_resplit_rewrites_an_old_dataset_without_loss_and_loads(tmp_path):
    datasets = pytest.importorskip("datasets")
    records = leaky_records()
    old_layout(tmp_path, records)
    assert split_check(tmp_path)["crossing_ptx_hashes"] > 0
    before = snapshot(tmp_path)
    result = CliRunner().invoke(cli, ["info", str(tmp_path)], catch_exceptions=False)
    assert "LEAK" in result.output and "ptxds resplit" in result.output
    result = CliRunner().invoke(cli, ["resplit", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert snapshot(tmp_path) == before
    check = split_check(tmp_path)
    assert check["crossing_ptx_hashes"] == 0 and sum(check["kernels_by_shape"].values()) == len(records)
    assert check["kernels_by_shape"]["test"] == 8  # each function's largest size
    assert "no ptx_hash is in more than one split" in CliRunner().invoke(cli, ["info", str(tmp_path)]).output
    for config in ("kernels", "kernels_by_shape"):
        loaded = datasets.load_dataset(str(tmp_path), config)
        assert sum(len(split) for split in loaded.values()) == len(records)
        assert sorted(k for split in loaded.values() for k in split["kernel_id"]) == before
    card = (tmp_path / "README.md").read_text()
    assert "config_name: kernels_by_shape" in card and "How to use this dataset" in card


def test_a_crash_while_writing_leaves_the_old_dataset(tmp_path, monkeypatch):
    old_layout(tmp_path, leaky_records())
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.parquet"))
    before = snapshot(tmp_path)
    calls = []
    real = resplit_module._write_config

    def crash_on_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("injected")
        return real(*args, **kwargs)
    monkeypatch.setattr(resplit_module, "_write_config", crash_on_second)
    with pytest.raises(RuntimeError, match="injected"):
        resplit(tmp_path)
    assert snapshot(tmp_path) == before and split_check(tmp_path)["crossing_ptx_hashes"] > 0
    assert recover(tmp_path) == "" and not (tmp_path / ".resplit-new").exists()  # split_check discarded it
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.parquet")) == files


def test_a_crash_while_swapping_is_rolled_forward(tmp_path, monkeypatch):
    old_layout(tmp_path, leaky_records())
    before = snapshot(tmp_path)
    moves = []
    real = resplit_module._move

    def crash_on_second(src, dst):
        moves.append(src)
        if len(moves) == 2:
            raise OSError("injected")
        return real(src, dst)
    monkeypatch.setattr(resplit_module, "_move", crash_on_second)
    with pytest.raises(OSError, match="injected"):
        resplit(tmp_path)
    monkeypatch.setattr(resplit_module, "_move", real)
    assert recover(tmp_path) == "rolled forward"
    assert snapshot(tmp_path) == before and split_check(tmp_path)["crossing_ptx_hashes"] == 0


# ---- builds --------------------------------------------------------------------------------

def hashes_across_groups(root) -> int:
    rows = read_split_table(root, "kernels", columns=["group_id", "ptx_hash"]).to_pylist()
    groups = {}
    for r in rows:
        groups.setdefault(r["ptx_hash"], set()).add(r["group_id"])
    return sum(len(g) > 1 for g in groups.values())


def test_a_triton_llm_build_has_no_ptx_across_splits(tmp_path, monkeypatch):
    pytest.importorskip("triton")
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    out = str(tmp_path / "tri")
    # --limit counts rows (e362519); this test was written beside it when it counted work
    # items, and 8 items of this draw were 29 rows
    result = CliRunner().invoke(cli, ["build", "--source", "triton", "--arch", "sm_90a", "--shapes", "llm",
                                      "--limit", "29", "--sample-seed", "3", "--jobs", "1", "--silent", "--out", out],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert hashes_across_groups(out) >= 1  # the same PTX at two sizes ...
    assert split_check(out)["crossing_ptx_hashes"] == 0  # ... lands in one split
    for config in ("kernels", "kernels_by_shape"):
        assert sum(len(s) for s in datasets.load_dataset(out, config).values()) == 29


def test_a_cutlass_llm_slice_has_no_ptx_across_splits(tmp_path):
    pytest.importorskip("cutlass_library")
    from helpers import nvcc_available
    if not nvcc_available():
        pytest.skip("nvcc from the CUDA wheels is not installed")
    out = str(tmp_path / "cut")
    result = CliRunner().invoke(cli, ["build", "--source", "cutlass", "--arch", "sm_80", "--shapes", "llm",
                                      "--family", "cutlass_tensorop_bf16_s16816gemm_bf16_[0-9]*_tn_align*",
                                      "--limit", "2", "--sample-seed", "1", "--jobs", "1", "--silent", "--out", out],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert hashes_across_groups(out) >= 1  # CUTLASS PTX does not depend on the size
    assert split_check(out)["crossing_ptx_hashes"] == 0


# ---- witnesses -------------------------------------------------------------------------------

def verified_group(tmp_path, n: int = 1000):
    """Two correct members and one planted wrong one, judged on the CPU as the runner does."""
    members = [row(n, name, f"h-{name}") for name in ("good1", "good2", "bad")]
    prepared = prepare_problem(members[0].problem, members[0].group_id)
    consensus = Consensus(prepared.specs)
    out_rows, planted = [], None
    for member in members:
        runs = []
        for t in prepared.trials:
            out = (t.storage["x"] + t.storage["y"]).astype(np.float32)
            if member.name == "bad" and t.trial == 2:
                # 0.75 beside the value's own size: the wide trial's out[417] may be large
                # (-3.7e12 in its stratified draw), where a bare + 0.75 rounds away
                out[417] = np.float32(out[417] + 0.75 * max(1.0, abs(float(out[417]))))
                planted = float(out[417])
            runs.append(TrialRun(t.trial, {"out": out}))
        verdict = classify(CheckResult(runs), prepared.specs, prepared.references)
        new = apply_verdict(member, verdict, prepared, {"name": "cpu"})
        if verdict.status == "passed":
            consensus.add(member.build_key, verdict.outputs)
        out_rows.append(new)
    add_consensus_witnesses(out_rows, {members[0].problem.digest(): consensus},
                            {members[0].problem.digest(): prepared})
    ShardWriter(tmp_path).write(out_rows)
    return out_rows, planted


def test_trial_errors_per_kind(tmp_path):
    rows, _ = verified_group(tmp_path)
    good, bad = rows[0], rows[2]
    assert [t["kind"] for t in good.trial_errors] == ["normal", "uniform", "wide", "edge", "stress"]
    assert all(t["n_bad"] == 0 and t["max_ulp_err"] <= 0.5 for t in good.trial_errors)
    assert [t["n_bad"] for t in bad.trial_errors] == [0, 0, 1, 0, 0] and bad.trial_errors[2]["max_ulp_err"] > 1e3
    assert bad.trial_errors[2]["seed"] == bad.provenance["verify"]["seeds"][2]


def test_a_planted_wrong_member_has_a_witness_that_regenerates(tmp_path):
    rows, planted = verified_group(tmp_path)
    bad = rows[2]
    assert bad.status == "wrong_result"
    w = bad.witness
    assert (w["trial"], w["kind"], w["output"], w["flat_index"], w["value"]) == (2, "wide", "out", 417, planted)
    assert w["consensus_kernel_id"] == rows[0].kernel_id and w["consensus_value"] != w["value"]
    assert abs(w["consensus_value"] - w["reference"]) <= w["bound"] < abs(w["value"] - w["reference"])
    publish(tmp_path)
    negatives = [p for p in read_pairs(tmp_path) if p.equivalent is False]
    assert negatives and all(p.witness["flat_index"] == 417 for p in negatives)
    pair = negatives[0]
    result = CliRunner().invoke(cli, ["show-witness", str(tmp_path), f"{pair.kernel_a}:{pair.kernel_b}"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    recomputed = float(result.output.split("reference (recomputed)")[1].split()[0])
    assert recomputed == w["reference"] and repr(planted) in result.output
    assert abs(planted - recomputed) > w["bound"]  # the regenerated reference still differs from the value
    result = CliRunner().invoke(cli, ["show-witness", str(tmp_path), rows[0].kernel_id])
    assert result.exit_code != 0 and "no element witness" in result.output


# ---- surviving mutants ---------------------------------------------------------------------

def mutant(base: KernelRecord, status: str) -> KernelRecord:
    return dataclasses.replace(base, name=f"{base.name}-mut-{status}", kernel_id=f"{base.kernel_id}-mut-{status}",
                               variant={"mutation": "drop_barrier", "base": base.kernel_id}, build_key="",
                               status=status)


def test_a_surviving_mutant_is_not_a_positive():
    a, b = row(64, "a", "ha", status="passed"), row(64, "b", "hb", status="passed")
    survivor = mutant(a, "passed")
    pairs = make_pairs([a, b, survivor])
    with_survivor = [p for p in pairs if survivor.kernel_id in (p.kernel_a, p.kernel_b)]
    assert with_survivor and all(p.label_source == "survived" and p.equivalent is None for p in with_survivor)
    assert with_survivor[0].kernel_a == a.kernel_id  # paired with its base first
    positives = [p for p in pairs if p.equivalent]
    assert [(p.kernel_a, p.kernel_b) for p in positives] == [(a.kernel_id, b.kernel_id)]
    # shown equivalent for the problem (a status the verifier may give): then a positive
    shown = mutant(a, "passed")
    shown.status = "unexercised"
    assert any(p.equivalent and shown.kernel_id in (p.kernel_a, p.kernel_b) for p in make_pairs([a, b, shown]))


def test_the_card_counts_survivors_apart(tmp_path):
    a, b = row(64, "a", "ha", status="passed"), row(64, "b", "hb", status="passed")
    ShardWriter(tmp_path).write([a, b, mutant(a, "passed"), mutant(b, "wrong_result")])
    publish(tmp_path)
    card = (tmp_path / "README.md").read_text()
    assert "| survived | unknown | mutant |" in card
    assert "| drop_barrier | 1 | 1 | 0 |" in card
    labels = {(p.label_source, p.equivalent) for p in read_pairs(tmp_path)}
    assert ("survived", None) in labels and ("verified", False) in labels
    assert json.loads(json.dumps([p.equivalent for p in read_pairs(tmp_path)]))  # nulls survive Parquet
