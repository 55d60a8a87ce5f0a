"""The v3 adversarial suite (tests/data/adversarial_v3, one manifest per group) builds
through the real pipeline with the pinned nvcc: every member compiles and assembles for
sm_90a with launches that fit its entries, every row carries the exact status the verifier
must give it, and each group mixes correct members with broken ones. The GPU side is
tests/test_adversarial_v3_gpu.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from builders.base import BuildOptions
from builders.manifest import load_manifest
from dataset_spec.model import VERIFY_STATUSES
from dataset_spec.shards import read_records
from ptxds.pipeline import run_build
from conftest import needs_nvcc  # noqa: E402

SUITE = Path(__file__).parent / "data" / "adversarial_v3"
MANIFESTS = sorted(SUITE.glob("*.yaml"))
# The seven ops of the held-out set, each covered by at least one group.
OPS = {"vector_add", "softmax", "rmsnorm", "layernorm", "gemm"}


def test_suite_covers_every_op_and_problem_once():
    problems = [load_manifest(m).problem for m in MANIFESTS]
    assert {p.op for p in problems} == OPS
    ids = [p.problem_id for p in problems]
    assert len(ids) == len(set(ids)), ids  # one manifest per group
    gemms = {(p.params["K"], str(p.buffer("A").dtype), p.params.get("beta", 0.0) != 0.0)
             for p in problems if p.op == "gemm"}
    assert (520, "float32", False) in gemms  # K tail
    assert (1, "float32", True) in gemms     # K = 1 with alpha and beta
    assert any(dtype == "int8" for _, dtype, _ in gemms)


def test_every_member_has_an_exact_expectation_and_groups_mix_kinds():
    for manifest in MANIFESTS:
        members = load_manifest(manifest).members
        expects = [m.variant.get("expect") for m in members]
        assert all(e in VERIFY_STATUSES for e in expects), (manifest.name, expects)
        assert "passed" in expects, manifest.name
        assert any(e != "passed" for e in expects), manifest.name


@pytest.fixture(scope="module")
def built_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("adversarial_v3")
    for manifest in MANIFESTS:
        run_build("ptx", out, BuildOptions(archs=["sm_90a"], extra={"manifest": str(manifest)}),
                  jobs=2, progress=False)
    return read_records(out)


@needs_nvcc
def test_every_member_builds(built_rows):
    members = sum(len(load_manifest(m).members) for m in MANIFESTS)
    assert len(built_rows) == members
    failed = [(r.name, r.status_message) for r in built_rows if r.status == "build_failed"]
    assert not failed, failed
    for row in built_rows:
        assert row.variant.get("expect") in VERIFY_STATUSES, row.name
        assert row.launches and row.ptx, row.name
