"""GPU test of the rewrite engine: rewritten Triton members verify equivalent, and a
mutant with a wrong load address is killed by the verifier. Skipped without a driver."""
import pytest

from builders import load_builder
from builders.base import BuildOptions
from dataset_spec.store.shards import ShardWriter, read_pairs, read_records
from ptxds.pairs import KILLED_STATUSES, write_pairs
from ptxds.pipeline import build_and_finalize
from ptxds.rewrite import rewrite_dataset

pytestmark = pytest.mark.gpu

ITEMS = ("triton/vector_add/float32/n1000003/BLOCK_SIZE256_", "triton/vector_add/float32/n1000003/BLOCK_SIZE1024_num_warps4",
         "triton/softmax/float32/M1823xN781/BLOCK_SIZE1024_num_warps4_num_stages1_",
         "triton/softmax/float32/M1823xN781/BLOCK_SIZE1024_num_warps8_num_stages1_")


def test_rewrites_pass_and_a_wrong_address_mutant_is_killed(tmp_path, monkeypatch):
    pytest.importorskip("triton")
    from verify import verify_dataset
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    builder = load_builder("triton")(BuildOptions(archs=["sm_90a"]))
    items = [i for i in builder.work_items() if any(i.label.startswith(key) for key in ITEMS)]
    rows = [row for item in items for row in build_and_finalize(builder, item, sass=False)]
    assert len(rows) == len(ITEMS)
    ShardWriter(tmp_path / "in").write(rows)
    # Mutant slots take the operators with a site in turn (mutant_plan): vector_add has four
    # (flip_comparison, flip_store_guard, off_by_one, wrong_address_register), so five slots
    # give it a wrong address register.
    summary = rewrite_dataset(tmp_path / "in", rewrites=4, mutants=5, seed=1)
    assert summary.rewrites_written == 8 and not summary.rewrite_failures
    verify_dataset(tmp_path / "in", tmp_path / "out", timing=False, kernel_timeout=10, progress=False)
    out = read_records(tmp_path / "out")
    rewrites = [r for r in out if "rewrites" in r.variant]
    assert rewrites and all(r.status == "passed" for r in rewrites), \
        [(r.variant["rewrites"], r.status, r.status_message) for r in rewrites if r.status != "passed"]
    wrong_address = [r for r in out if r.variant.get("mutation") == "wrong_address_register"
                     and "vector_add" in r.group_id]
    assert wrong_address and all(r.status in KILLED_STATUSES for r in wrong_address), \
        [(r.status, r.provenance["trace"]) for r in wrong_address]
    write_pairs(tmp_path / "out")
    negatives = [p for p in read_pairs(tmp_path / "out") if p.mutation and not p.equivalent]
    assert {p.kernel_b for p in negatives} >= {r.kernel_id for r in wrong_address}
