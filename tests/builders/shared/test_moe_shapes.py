"""Grouped GEMM sizes: seeded uneven MoE splits, labels, built-in sets and shape files."""
import json

import pytest

from builders.moe_shapes import DEFAULT_GROUPED, moe_split
from builders.shapes import (LLM, MAX_GROUP_HOST_BYTES, SWEEP, host_bytes, load_shape_set, shape_label,
                             shape_params)
from dataset_spec.model import SpecError
from dataset_spec.ops.grouped_gemm import make_grouped_problem

F16 = {name: "float16" for name in "ABCD"}


def test_split_is_seeded_uneven_and_padded():
    split = moe_split(8, 1024, seed=8)
    assert split == moe_split(8, 1024, seed=8) and split != moe_split(8, 1024, seed=9)
    assert sum(split) == 1024 and all(m % 8 == 0 and m >= 8 for m in split)
    assert max(split) >= 4 * min(split)  # skewed, not an even split
    assert moe_split(8, 512, seed=4, skew=0.0) == (64,) * 8
    with pytest.raises(ValueError, match="rows >= experts"):
        moe_split(64, 100, seed=1)


def test_builtin_sets_have_8_and_64_expert_layers_within_the_host_budget():
    experts = {len(size) for size in LLM.grouped}
    assert experts == {8, 64}
    for size in LLM.grouped + SWEEP.grouped + DEFAULT_GROUPED:
        problem = make_grouped_problem("p", size, F16, {"a": "row", "b": "col", "c": "row"})
        assert host_bytes(problem.buffers) <= MAX_GROUP_HOST_BYTES, shape_label("grouped", size)
    assert len(DEFAULT_GROUPED[0]) in (3, 4)
    assert shape_label("grouped", LLM.grouped[0]) == "E8xT1024xN1792xK4096"
    assert shape_params("grouped", ((8, 16, 32),)) == {"problems": [[8, 16, 32]]}
    assert LLM.sizes_for("grouped_gemm") == LLM.grouped


def test_shape_file_takes_grouped_sizes(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"grouped": [[[16, 32, 64], {"M": 8, "N": 32, "K": 64}]]}))
    assert load_shape_set(path).grouped == (((16, 32, 64), (8, 32, 64)),)
    path.write_text(json.dumps({"grouped": [[16, 32, 64]]}))
    with pytest.raises(SpecError, match=r"grouped\[0\]\[0\] must be 3 positive int"):
        load_shape_set(path)


def test_grouped_rows_name_their_size_and_share_a_function_across_sizes():
    from builders.shapes import group_shape
    from dataset_spec.store.splits import function_key, size_key
    layouts = {"a": "row", "b": "col", "c": "row"}
    small, large = (make_grouped_problem("p", size, F16, layouts) for size in (DEFAULT_GROUPED[0], LLM.grouped[0]))
    assert group_shape("g", large.to_json()) == "E8xT1024xN1792xK4096"
    assert function_key(small.to_json()) == function_key(large.to_json())
    assert size_key(small.to_json()) != size_key(large.to_json())
