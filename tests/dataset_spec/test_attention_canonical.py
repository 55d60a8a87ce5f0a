"""Cross-source attention: the canonical function, its float16-safe domain, Triton's groups
stated as it, and Mirage muGraphs moved onto it only when their float64 evaluation is it."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from builders.mirage.builder import default_dir
from dataset_spec import attention
from dataset_spec.canonical import canonical_problem
from dataset_spec.model import Problem

MUGRAPHS = default_dir()
needs_files = pytest.mark.skipif(not (MUGRAPHS / "mqa_bs1.json").is_file(), reason=f"no shared muGraphs at {MUGRAPHS}")


def test_domain_keeps_the_naive_float16_form_finite_and_no_more():
    size = (1, 16, 256, 64)
    hi, std = attention.domain(*size)
    shapes = attention.shapes_of(*size)
    full = [np.full(s, hi) for s in shapes]
    assert attention._naive_largest(full) < 65504 / 2
    assert attention._naive_largest([np.full(s, 2 * hi) for s in shapes]) >= 65504 / 2
    assert 0 < std <= 1.0


def test_triton_attention_group_is_the_canonical_problem_and_other_domains_are_not():
    from builders.triton.builder import attention_group, suite_payload
    group = attention_group(2, 64, 512, 64)
    problem = Problem(**suite_payload(group, group["configs"][0], "sm_90a")["problem"])
    canonical = canonical_problem(problem)
    assert canonical.problem_id == "function/attention/float16/B2xSq64xSkv512xD64"
    assert canonical.digest() == Problem(**dict(suite_payload(group, group["configs"][3], "sm_80")["problem"],
                                                problem_id=canonical.problem_id)).digest()
    wider = copy.deepcopy(problem)
    wider.params["input_range"] = {k: [lo, 2 * hi] for k, (lo, hi) in problem.params["input_range"].items()}
    assert canonical_problem(wider) is None  # another domain states another problem


def test_shape_sets_state_attention_at_mirages_decode_sizes():
    from builders.shapes import CROSSOURCE, LLM, load_shape_set, shape_label
    from builders.triton.builder import suite_groups
    assert LLM.attention == CROSSOURCE.attention and (2, 256, 4096, 64) in LLM.attention
    ids = [g["size"] for g in suite_groups(CROSSOURCE) if g["op"] == "attention"]
    assert ids == [shape_label("attention", s) for s in LLM.attention]
    assert load_shape_set("default").attention == ()


@needs_files
def test_a_mirage_attention_muGraph_joins_and_a_changed_one_does_not():
    from builders.mirage import operators
    graphs = json.loads((MUGRAPHS / "mqa_bs1.json").read_text())
    problem = operators.make_problem(graphs[0], 0, "sha", ("Q", "K", "V"), "O", "mirage/mqa_bs1")
    canonical = canonical_problem(problem)
    assert canonical is not None and canonical.problem_id == "function/attention/float16/B1xSq1024xSkv4096xD64"
    assert canonical.op == "attention"
    # the same shapes computing another function (silu in place of exp) keep their own group
    changed = copy.deepcopy(graphs[0])
    text = json.dumps(changed).replace('"tb_exp_op"', '"tb_silu_op"').replace('"kn_exp_op"', '"kn_silu_op"')
    other = operators.make_problem(json.loads(text), 0, "sha2", ("Q", "K", "V"), "O", "mirage/changed")
    assert canonical_problem(other) is None
