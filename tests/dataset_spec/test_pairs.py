"""Pairs derived from verified rows: positives within a group, verified and constructed
negatives, nothing from rows that never ran."""
import dataclasses

from dataset_spec.model import Buffer, KernelRecord, Launch, Problem
from dataset_spec.store.shards import ShardWriter, read_pairs
from ptxds.pairs import make_pairs, write_pairs


def gemm_problem(layout_a):
    return Problem(f"gemm_{layout_a}", "gemm", [
        Buffer("A", "float16", [64, 64]), Buffer("B", "float16", [64, 64]),
        Buffer("D", "float16", [64, 64], "out")], params={"layout_a": layout_a})


def record(group, name, status, layout_a="row"):
    return KernelRecord(group_id=group, source="test", variant={}, name=name, arch="sm_90a",
                        ptx=".version 8.7", launches=[Launch(name, 1, 32, [])],
                        problem=gemm_problem(layout_a), status=status, kernel_id=f"id-{name}")


def test_pairs_from_statuses(tmp_path):
    rows = [record("g_tn", "a", "passed"), record("g_tn", "b", "passed"),
            record("g_tn", "c", "wrong_result"), record("g_tn", "d", "crashed"),
            record("g_nt", "e", "passed", "col"),
            dataclasses.replace(record("g_tn", "f", "build_failed"), kernel_id="unbuilt-x")]
    pairs = make_pairs(rows)
    as_tuples = {(p.kernel_a, p.kernel_b, p.equivalent, p.label_source) for p in pairs}
    assert ("id-a", "id-b", True, "verified") in as_tuples
    assert ("id-a", "id-c", False, "verified") in as_tuples and ("id-b", "id-c", False, "verified") in as_tuples
    cross = {t for t in as_tuples if t[3] == "constructed"}
    assert cross and all(not t[2] for t in cross)
    assert {frozenset(t[:2]) for t in cross} == {frozenset(("id-a", "id-e")), frozenset(("id-b", "id-e"))}
    assert not any("id-d" in t[:2] or "unbuilt-x" in t[:2] for t in as_tuples)
    ShardWriter(tmp_path).write(rows)
    assert write_pairs(tmp_path) == len(pairs)
    assert write_pairs(tmp_path) == len(pairs)  # regenerated, not appended
    assert len(read_pairs(tmp_path)) == len(pairs)
