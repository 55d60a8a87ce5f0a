"""Data model validation, JSON and Arrow round trips, shards, splits, registry, card."""
import json
import os

import sys

import numpy as np
import pytest

from dataset_spec.store.card import write_card
from dataset_spec.model import (Arg, Buffer, Distribution, KernelRecord, Launch, Pair, Patch,
                                Problem, SpecError)
from dataset_spec.problems import get_op
from dataset_spec.store.shards import (ShardWriter, done_keys, part_files, read_pairs, read_records,
                                 split_of)


def vector_add_problem(n=1024):
    return Problem("vadd_f32", "vector_add", [
        Buffer("x", "float32", [n]), Buffer("y", "float32", [n]),
        Buffer("out", "float32", [n], "out")])


def make_record(group="g0", name="k0", arch="sm_80", blob=True):
    args = [Arg.buf("x"), Arg.buf("y"), Arg.buf("out"), Arg.scalar("s32", 1024), Arg.null()]
    if blob:
        args.append(Arg("blob", blob=bytes(range(32)), patches=[Patch(8, "x"), Patch(16, "out", 4)]))
    return KernelRecord(group_id=group, source="test", variant={"BLOCK": 128, "warps": 4},
                        name=name, arch=arch, ptx=".version 8.7", problem=vector_add_problem(),
                        launches=[Launch("k0", (8, 1, 1), 128, args, dynamic_smem=1024)],
                        scratch=[Buffer("ws", "int32", [4], "scratch", Distribution("zeros"))])


@pytest.mark.parametrize("bad, message", [
    (lambda: Buffer("x", "float13", [4]), "dtype must be one of"),
    (lambda: Buffer("x", "float32", [0]), "shape must be positive"),
    (lambda: Buffer("1x", "float32", [4]), "identifier"),
    (lambda: Launch("k", (0, 1), 32, []), "grid must be 1 to 3 positive ints"),
    (lambda: Launch("k", 1, 2048, []), "more than 1024 threads"),
    (lambda: Arg("scalar", dtype="q32", value=1), "dtype must be one of"),
    (lambda: Arg("blob", blob=b"\0" * 8, patches=[Patch(4, "x")]), "outside the 8-byte blob"),
    (lambda: Problem("p", "gemm", [Buffer("A", "float32", [2, 2])]), "role out or inout"),
    (lambda: Distribution("gaussian"), "distribution.kind"),
])
def test_invalid_values_name_the_field(bad, message):
    with pytest.raises(SpecError, match=message):
        bad()


def test_record_json_round_trip_keeps_blob_and_patches():
    record = make_record()
    again = KernelRecord.from_json(record.to_json())
    assert again == record
    assert again.launches[0].args[5].blob == bytes(range(32))
    assert again.launches[0].grid == (8, 1, 1) and again.launches[0].block == (128, 1, 1)


def test_arg_sizes():
    assert Arg.buf("x").size == 8 and Arg.null().size == 8
    assert Arg.scalar("s32", 3).size == 4 and Arg.scalar("f16", 1.0).size == 2
    assert Arg("blob", blob=b"\0" * 368).size == 368


def test_shards_round_trip_and_resume_keys(tmp_path):
    records = [make_record(group=f"g{i % 5}", name=f"k{i}") for i in range(20)]
    written = ShardWriter(tmp_path).write(records)
    assert written == 20
    back = {r.build_key: r for r in read_records(tmp_path)}
    assert set(back) == {r.build_key for r in records}
    for record in records:
        assert back[record.build_key] == record
    assert done_keys(tmp_path) == set(back)
    # every part file is whole: no temp files left behind, each split by group hash
    assert not [p for p in (tmp_path / "kernels").rglob(".*")]
    for path in part_files(tmp_path):
        assert path.parent.name in ("train", "validation", "test")


def test_split_is_a_pure_function_of_group():
    splits = {split_of(f"group{i}") for i in range(200)}
    assert splits == {"train", "validation", "test"}
    assert split_of("cutlass/gemm/x") == split_of("cutlass/gemm/x")


def test_pairs_round_trip(tmp_path):
    pairs = [Pair("a", "b", True, "verified", "g", "g"), Pair("a", "c", False, "constructed", "g", "h")]
    ShardWriter(tmp_path, "pairs").write(pairs)
    assert sorted(read_pairs(tmp_path), key=lambda p: p.kernel_b) == pairs


def test_gemm_reference_honours_layouts():
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(3, 5)), rng.normal(size=(5, 4)), rng.normal(size=(3, 4))
    for la in ("row", "col"):
        for lb in ("row", "col"):
            problem = Problem("g", "gemm", [
                Buffer("A", "float32", a.shape if la == "row" else a.T.shape),
                Buffer("B", "float32", b.shape if lb == "row" else b.T.shape),
                Buffer("C", "float32", c.shape), Buffer("D", "float32", c.shape, "out")],
                params={"layout_a": la, "layout_b": lb, "alpha": 2.0, "beta": 0.5})
            inputs = {"A": a if la == "row" else a.T.copy(), "B": b if lb == "row" else b.T.copy(), "C": c}
            out = get_op("gemm").reference(inputs, problem)["D"]
            np.testing.assert_allclose(out, 2.0 * a @ b + 0.5 * c)
            assert get_op("gemm").reduction_length(problem) == 5


def test_softmax_and_norm_references():
    x = np.random.default_rng(1).normal(size=(4, 7))
    prob = Problem("s", "softmax", [Buffer("x", "float32", x.shape), Buffer("out", "float32", x.shape, "out")])
    out = get_op("softmax").reference({"x": x}, prob)["out"]
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    w = np.ones(7)
    prob = Problem("r", "rmsnorm", [Buffer("x", "float32", x.shape), Buffer("w", "float32", [7]),
                                    Buffer("out", "float32", x.shape, "out")], params={"eps": 0.0})
    out = get_op("rmsnorm").reference({"x": x, "w": w}, prob)["out"]
    np.testing.assert_allclose((out ** 2).mean(axis=1), 1.0)


def test_bound_grows_with_reduction_and_precision():
    from dataset_spec.numerics import bound_terms
    b16, b32 = bound_terms("bfloat16", 4096), bound_terms("float32", 4096)
    assert b16.u_out > b32.u_out > 0
    assert bound_terms("float32", 4096).scale_coefficient > bound_terms("float32", 16).scale_coefficient
    assert bound_terms("float32", 16, math_input="tf32").scale_coefficient > 2 ** -10
    zero = bound_terms("int32", 100)
    assert zero.bound(np.array([5.0]), np.array([5.0]))[0] == 0.0  # integers match exactly
    problem = vector_add_problem()
    assert get_op("vector_add").tolerance(problem, "float32") is None
    problem.tolerance = {"atol": 1e-3, "rtol": 1e-2}
    assert get_op("vector_add").tolerance(problem, "float32") == (1e-3, 1e-2)
    bounds = get_op("vector_add").bounds({"x": np.ones(4), "y": np.ones(4)}, problem, {"out": np.full(4, 2.0)})
    np.testing.assert_allclose(bounds["out"], 1e-3 + 1e-2 * 2.0)


def test_custom_reference_from_shipped_source():
    source = ("import numpy as np\n"
              "def triple(inputs, problem):\n    return {'out': 3 * inputs['x']}\n"
              "def triple_error_scale(inputs, problem):\n    return {'out': 3 * np.abs(inputs['x']) + 1}\n")
    problem = Problem("c", "custom", [Buffer("x", "float32", [3]), Buffer("out", "float32", [3], "out")],
                      params={"reference": "shipped_ref_mod:triple", "reference_source": source})
    op = get_op("custom")
    out = op.reference({"x": np.arange(3.0)}, problem)["out"]
    np.testing.assert_array_equal(out, [0.0, 3.0, 6.0])
    np.testing.assert_array_equal(op.scales({"x": np.arange(3.0)}, problem, {"out": out})["out"], [1.0, 4.0, 7.0])
    assert "shipped_ref_mod" not in sys.modules


def test_unknown_op_lists_known_ones():
    with pytest.raises(SpecError, match="known ops: .*gemm"):
        get_op("matmul2")


def test_custom_reference_is_imported(tmp_path):
    (tmp_path / "myref.py").write_text("def double(inputs, problem):\n    return {'out': 2 * inputs['x']}\n")
    problem = Problem("c", "custom", [Buffer("x", "float32", [3]), Buffer("out", "float32", [3], "out")],
                      params={"reference": "myref:double", "reference_path": str(tmp_path)})
    out = get_op("custom").reference({"x": np.arange(3.0)}, problem)["out"]
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])


def test_card_and_load_dataset_round_trip(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    records = [make_record(group=f"group{i}", name=f"k{i}") for i in range(30)]
    ShardWriter(tmp_path / "ds").write(records)
    card = write_card(tmp_path / "ds").read_text()
    assert "config_name: kernels" in card and "path: kernels/train/*.parquet" in card
    # cache_dir: HF_HOME is read when datasets is imported, and a stale cache of an older
    # schema would otherwise answer instead of the files just written.
    loaded = datasets.load_dataset(str(tmp_path / "ds"), "kernels", cache_dir=str(tmp_path / "hf"))
    total = sum(len(loaded[s]) for s in loaded)
    assert total == 30
    row = loaded["train"][0]
    assert row["launches"][0]["args"][5]["blob"] == bytes(range(32))
    assert row["launches"][0]["args"][5]["patches"][1] == {"offset": 16, "buffer": "out", "addend": 4,
                                                                 "kind": "address", "tensormap": None}
    assert row["launches"][0]["args"][3] == {"kind": "scalar", "buffer": None, "dtype": "s32",
                                             "value": "1024", "blob": None, "patches": []}
    assert json.loads(row["variant"]) == {"BLOCK": 128, "warps": 4}
    groups_by_split = {s: set(loaded[s]["group_id"]) for s in loaded}
    names = list(groups_by_split)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not groups_by_split[a] & groups_by_split[b]


TENSORMAP = {"data_type": 9, "rank": 3, "global_dim": [520, 512, 1], "global_strides": [1040, 532480],
             "box_dim": [64, 64, 1], "element_strides": [1, 1, 1], "interleave": 0, "swizzle": 3,
             "l2_promotion": 2, "oob_fill": 0}


def tensormap_record():
    blob = bytes(range(256)) * 2  # 512 bytes: descriptors at 64 and 192, a pointer at 8
    patches = [Patch(8, "x"), Patch(64, "x", kind="tensormap", tensormap=TENSORMAP),
               Patch(192, "out", 16, kind="tensormap", tensormap=dict(TENSORMAP, swizzle=2))]
    return KernelRecord(group_id="g", source="test", variant={}, name="tma", arch="sm_90a",
                        ptx=".version 8.7", problem=vector_add_problem(),
                        launches=[Launch("k0", (8, 1, 1), 384, [Arg("blob", blob=blob, patches=patches)],
                                         cluster=(2, 1, 1))])


def test_tensormap_patches_round_trip_json_and_arrow(tmp_path):
    record = tensormap_record()
    assert KernelRecord.from_json(record.to_json()) == record
    ShardWriter(tmp_path).write([record])
    (back,) = read_records(tmp_path)
    assert back == record
    patches = back.launches[0].args[0].patches
    assert [p.kind for p in patches] == ["address", "tensormap", "tensormap"]
    assert patches[2].tensormap["swizzle"] == 2 and patches[2].addend == 16 and patches[2].size == 128


@pytest.mark.parametrize("make, message", [
    (lambda: Patch(96, "x", kind="tensormap", tensormap=TENSORMAP), "not 64-byte aligned"),
    (lambda: Patch(64, "x", kind="tensormap"), "needs patch.tensormap"),
    (lambda: Patch(64, "x", kind="tensormap", tensormap=dict(TENSORMAP, box_dim=[64])), "box_dim"),
    (lambda: Patch(0, "x", kind="descriptor"), "patch.kind"),
    (lambda: Arg("blob", blob=bytes(160), patches=[Patch(64, "x", kind="tensormap", tensormap=TENSORMAP)]),
     "outside the 160-byte blob"),
])
def test_tensormap_patch_validation(make, message):
    with pytest.raises(SpecError, match=message):
        make()


def test_shards_of_an_older_schema_read_with_null_new_columns(tmp_path):
    """A part written before the verifier's v2 columns existed still loads."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from dataset_spec.schema import KERNELS_SCHEMA, record_to_row
    from dataset_spec.store.shards import read_records
    row = record_to_row(make_record(group="old", name="k_old"))
    old_fields = [f for f in KERNELS_SCHEMA if f.name not in ("max_err_ratio", "output_hash", "time_method")]
    old_schema = pa.schema(old_fields)
    folder = tmp_path / "kernels" / "train"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{k: row[k] for k in old_schema.names}], schema=old_schema),
                   folder / "part-old.parquet")
    (back,) = read_records(tmp_path)
    assert back.name == "k_old" and back.max_err_ratio is None and back.time_method is None


def test_card_of_a_verified_dataset_states_the_error_model(tmp_path):
    """After verify, the card lists per op and dtype the error scale S and the smallest
    relative error the bound catches, and how rows were timed."""
    from dataset_spec.store.card import write_card
    from dataset_spec.store.shards import ShardWriter
    rows = []
    for i, catches in enumerate((1.8e-7, 3.0e-7)):
        row = make_record(group=f"g{i}", name=f"k{i}")
        row.status, row.catches_rel_err, row.time_method, row.time_us_median = "passed", catches, "cupti", 5.0 + i
        rows.append(row)
    ShardWriter(tmp_path).write(rows)
    text = write_card(tmp_path).read_text()
    assert "| vector_add | float32 | 0 (exactly rounded) | 3.00e-07 |" in text  # the weakest group
    assert "Timing methods: cupti: 2 rows." in text
