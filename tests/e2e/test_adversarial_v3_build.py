"""The v3 adversarial suite (tests/data/adversarial_v3, one manifest per group) builds
through the real pipeline with the pinned nvcc: every member compiles and assembles for
sm_90a with launches that fit its entries, every row carries the exact status the verifier
must give it, and each group mixes correct members with broken ones. The GPU side is
tests/e2e/test_adversarial_v3_gpu.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from builders.base import BuildOptions
from builders.manifest import load_manifest
from dataset_spec.model import VERIFY_STATUSES
from dataset_spec.store.shards import read_records
from ptxds.pipeline import run_build
from helpers import needs_nvcc  # noqa: E402

SUITE = Path(__file__).parents[1] / "data" / "adversarial_v3"
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


# ---- numpy emulations: the correct members are right and the broken ones wrong, for the
# reasons their comments give (float32 numpy arithmetic rounds as the GPU's IEEE ops do).

def _problem(name):
    return load_manifest(SUITE / name).problem


def test_k1_ieee_epilogue_stays_within_its_rounding_model_and_broken_ones_do_not():
    from dataset_spec.problems import get_op
    problem = _problem("gemm_f32_k1_alpha_beta.yaml")
    rng = np.random.default_rng(1)
    a = rng.normal(size=(512, 1)).astype(np.float32)
    b = rng.normal(size=(1, 512)).astype(np.float32)
    c_storage = rng.normal(size=(512, 512)).astype(np.float32)  # [N, M]: column-major C
    values = {"A": a.astype(np.float64), "B": b.astype(np.float64), "C": c_storage.astype(np.float64)}
    ref = get_op("gemm").reference(values, problem)["D"]
    alpha, beta = np.float32(1.3), np.float32(-0.7)
    product = (a.reshape(1, -1) * b.reshape(-1, 1)).astype(np.float32)  # [n, m]
    ieee = alpha * product + beta * c_storage  # float32: each op rounds once
    u = 2.0 ** -24
    terms = abs(1.3) * np.abs(values["A"].reshape(1, -1) * values["B"].reshape(-1, 1)) + 0.7 * np.abs(values["C"])
    err = np.abs(ieee - ref)
    # four roundings and alpha's and beta's own: at most 3u of the product term, 2u of the C
    # term, and u of the result (first order)
    model = u * np.abs(ref) + 3 * u * terms * (1 + 4 * u)
    assert (err <= model).all()
    assert (err > u * np.abs(ref) + u * terms).any()  # needs more than the old two roundings
    assert np.abs(alpha * product + beta * ieee - ref).max() > 1e-2  # beta taken from D (here a poison-free D)
    assert np.abs(ieee.T - ref).max() > 1.0  # stored row-major


def test_int8_accumulators():
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (64, 320))
    b = rng.integers(-128, 128, (64, 320))
    exact = a @ b.T
    products = a[:, None, :] * b[None, :, :]
    as_float = np.cumsum(products.astype(np.float32), axis=-1, dtype=np.float32)[..., -1]
    assert np.abs(np.cumsum(np.abs(products), axis=-1)).max() < 2 ** 24  # every partial sum exact
    assert (as_float == exact).all()
    int16 = np.cumsum(products, axis=-1).astype(np.int16)[..., -1]  # wraps like int16 adds
    assert (int16 != exact).mean() > 0.5  # right only where |sum| < 2^15
    small = rng.integers(-4, 5, (64, 320))
    small_products = small[:, None, :] * small[None, :, :]
    assert (np.cumsum(small_products, axis=-1).astype(np.int16)[..., -1] == small @ small.T).all()


def test_saturating_int8_outputs_hold_minus_one_ties_and_saturation_on_full_range_inputs():
    from dataset_spec.problems import saturate_to_output
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (256, 64))
    b = rng.integers(-128, 128, (256, 64))
    scaled = (a @ b.T) * 2.0 ** -9
    d = saturate_to_output(scaled, "int8")
    assert (d == -1).mean() > 0.002                            # i8s_skips_minus_one leaves these
    assert ((d == 127) | (d == -128)).mean() > 0.05            # i8s_wraps differs there
    away = np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5), -128, 127)
    assert (away != d).sum() > 10                              # i8s_round_half_away differs at ties


def _softmax32(x, exp):
    m = x.max(axis=-1, keepdims=True)
    e = exp((x - m).astype(np.float32)).astype(np.float32)
    return (e / e.sum(axis=-1, keepdims=True, dtype=np.float32)).astype(np.float32)


def test_exp2_with_rounded_log2e_is_far_off_and_expf_is_not():
    rng = np.random.default_rng(4)
    x = (4 * rng.normal(size=(64, 1000))).astype(np.float32)
    ref = np.exp(x - x.max(axis=-1, keepdims=True).astype(np.float64))
    ref /= ref.sum(axis=-1, keepdims=True)
    good = np.abs(_softmax32(x, np.exp) / ref - 1)
    bad = np.abs(_softmax32(x, lambda v: np.exp2(v * np.float32(1.4427))) / ref - 1)
    assert np.median(good) < 1e-6 and np.median(bad) > 2e-5


def test_one_pass_variance_fails_where_two_pass_holds():
    rng = np.random.default_rng(5)
    x = (1000.0 + rng.normal(size=(16, 1000))).astype(np.float32)  # |mean| / std = 1000
    exact = x.astype(np.float64).var(axis=-1)
    mean = x.mean(axis=-1, dtype=np.float32, keepdims=True)
    two_pass = ((x - mean) ** 2).mean(axis=-1, dtype=np.float32)
    one_pass = (x * x).mean(axis=-1, dtype=np.float32) - mean[:, 0] * mean[:, 0]
    assert np.abs(two_pass / exact - 1).max() < 1e-3
    assert np.abs(one_pass / exact - 1).max() > 0.1
