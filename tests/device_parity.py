"""The problems whose trials, references and bounds the device path must make as the host path
does, and that comparison: shared by the CPU tests (torch's CPU as the device) and the GPU
tests (the CUDA device), so both check the same cases."""
import dataclasses

import numpy as np
import pytest

from dataset_spec.model import Buffer, Distribution, Problem
from dataset_spec.ops import get_op
from dataset_spec.trials import trial_count
from verify.judge.outcome import OutputSpec
from verify.trials.inputs import HOST_GENERATOR, make_trial_inputs


def vector_add_problem(dtype: str = "float32", n: int = 4096) -> Problem:
    return Problem(f"va_{dtype}_{n}", "vector_add", [
        Buffer("x", dtype, (n,)), Buffer("y", dtype, (n,)), Buffer("out", dtype, (n,), role="out")])


def gemm_problem(dtype: str = "bfloat16", m: int = 48, n: int = 40, k: int = 96, a_init=None) -> Problem:
    a = Buffer("A", dtype, (m, k)) if a_init is None else Buffer("A", dtype, (m, k), init=a_init)
    return Problem(f"gemm_{dtype}_{m}x{n}x{k}", "gemm", [a, Buffer("B", dtype, (k, n)),
                                                         Buffer("D", dtype, (m, n), role="out")],
                   params={"M": m, "N": n, "K": k})


PARITY_PROBLEMS = [
    vector_add_problem("float32"), vector_add_problem("float16"), gemm_problem("bfloat16"),
                                     gemm_problem("float32", 16, 24, 600),
                                     Problem("sq", "square", [Buffer("x", "float32", (3000,)),
                                                              Buffer("out", "float32", (3000,), role="out")]),
                                     Problem("sm32", "softmax", [Buffer("x", "float32", (48, 300)),
                                                                 Buffer("y", "float32", (48, 300), role="out")]),
                                     Problem("sm16", "softmax", [Buffer("x", "bfloat16", (4, 6, 700)),
                                                                 Buffer("y", "bfloat16", (4, 6, 700), role="out")]),
                                     Problem("rn16", "rmsnorm", [Buffer("x", "bfloat16", (40, 512)),
                                                                 Buffer("w", "bfloat16", (512,)),
                                                                 Buffer("y", "bfloat16", (40, 512), role="out"),
                                                                 Buffer("rstd", "float32", (40, 1), role="out")],
                                             params={"eps": 1e-6, "offset": 1.0}),
                                     Problem("arn", "add_rmsnorm", [Buffer("x", "float16", (24, 768)),
                                                                    Buffer("r", "float16", (24, 768)),
                                                                    Buffer("w", "float16", (768,)),
                                                                    Buffer("y", "float16", (24, 768), role="out"),
                                                                    Buffer("s", "float16", (24, 768), role="out")]),
                                     Problem("rope_bwd", "rope", [Buffer("q", "bfloat16", (2, 16, 4, 64), role="inout"),
                                                                  Buffer("k", "bfloat16", (2, 16, 2, 64), role="inout"),
                                                                  Buffer("cos", "float32", (16, 64)),
                                                                  Buffer("sin", "float32", (16, 64))],
                                             params={"inverse": True, "rotary_dim": 48}),
                                     Problem("attn16", "attention",
                                             [Buffer(n, "float16", shape, "in", Distribution("normal", {"std": 0.5}))
                                              for n, shape in (("Q", (2, 32, 32)), ("K", (2, 32, 96)),
                                                               ("V", (2, 96, 32)))]
                                             + [Buffer("O", "float16", (2, 32, 32), role="out")],
                                             params={"math_input": "float16",
                                                     "input_range": {n: [2.0 ** -12, 2.0] for n in "QKV"}}),
                                     Problem("swiglu16", "swiglu", [Buffer("a", "bfloat16", (8, 700)),
                                                                    Buffer("b", "bfloat16", (8, 700)),
                                                                    Buffer("c", "bfloat16", (8, 700), role="out")],
                                             params={"gate_multiplier": 1.5}),
                                     Problem("geglu16", "geglu", [Buffer("a", "float16", (8, 700)),
                                                                  Buffer("b", "float16", (8, 700)),
                                                                  Buffer("c", "float16", (8, 700), role="out")]),
                                     *[Problem(f"mirage_{op}", op,
                                               [Buffer(n, "float16", shape, "in", Distribution("normal", {"std": 0.3}))
                                                for n, shape in ins]
                                               + [Buffer("Y", "float16", (16, 48), role="out")],
                                               params={"math_input": "float16",
                                                       "input_range": {n: [2.0 ** -10, 1.0] for n, _ in ins}})
                                       for op, ins in (("rmsnorm_matmul", (("X", (16, 64)), ("W", (64, 48)))),
                                                       ("gated_mlp", (("X", (16, 64)), ("W1", (64, 48)),
                                                                      ("W2", (64, 48)))),
                                                       ("lora", (("X", (16, 64)), ("W", (64, 48)), ("A", (64, 16)),
                                                                 ("B", (16, 48)))),
                                                       ("ntrans", (("H", (16, 48)), ("X", (16, 48)),
                                                                   ("alpha", (1, 48)))))],
                                     Problem("ln32", "layernorm", [Buffer("x", "float32", (32, 1000)),
                                                                   Buffer("w", "float32", (1000,)),
                                                                   Buffer("b", "float32", (1000,)),
                                                                   Buffer("y", "float32", (32, 1000), role="out"),
                                                                   Buffer("mean", "float32", (32,), role="out"),
                                                                   Buffer("rstd", "float32", (32,), role="out")]),
]


def host_copy(trial):
    """The device-made trial as numpy arrays, for the host path."""
    return dataclasses.replace(trial, storage=trial.host_storage(),
                               values={k: v.cpu().numpy() for k, v in trial.values.items()},
                               generator=HOST_GENERATOR)


def assert_prepared_on_the_device_as_on_the_host(problem: Problem, device) -> None:
    """Every trial's references, bounds, agreement bounds, refusal and smallest caught error,
    made on DEVICE, equal the host path's on the same inputs."""
    from verify.runner import _trial_reference
    from verify.trials.device_prepare import make_trial_inputs_device, trial_on
    op = get_op(problem.op)
    specs = [OutputSpec(b.name, b.dtype) for b in problem.buffers if b.role in ("out", "inout")]
    terms = {s.name: op.bound_terms(problem, s.dtype) for s in specs}
    exact = problem.op in ("vector_add", "square")  # elementwise float64 is the same everywhere; sums may not be
    for trial in range(trial_count(problem)):
        device_trial = make_trial_inputs_device(problem, "g", trial, device)
        if device_trial is None:  # stress rows the host draws (softmax's): judged on the device all the same
            device_trial = trial_on(make_trial_inputs(problem, "g", trial), device)
        d_ref, d_spec, d_refusal = _trial_reference(op, problem, device_trial, specs, terms, "numpy", device)
        h_ref, h_spec, h_refusal = _trial_reference(op, problem, host_copy(device_trial), specs, terms, "numpy")
        assert d_refusal == h_refusal == "", (trial, d_refusal, h_refusal)
        for spec in specs:
            d_bound, d_agree, d_reason, d_caught = d_spec[spec.name]
            h_bound, h_agree, h_reason, h_caught = h_spec[spec.name]
            assert d_reason == h_reason, (trial, spec.name)
            pairs = [(d_ref[spec.name], h_ref[spec.name]), (d_bound, h_bound), (d_agree, h_agree)]
            for device_array, host_array in pairs:
                device_array = np.broadcast_to(device_array.cpu().numpy(), np.shape(host_array))
                if exact:
                    assert np.array_equal(device_array, host_array, equal_nan=True), (trial, spec.name)
                else:  # float64 sums in another order; a centred value (layernorm) carries its row's roundoff
                    finite = np.abs(host_array[np.isfinite(host_array)])
                    row_roundoff = 1e-13 * (finite.max() if finite.size else 0.0)
                    np.testing.assert_allclose(device_array, host_array, rtol=1e-12, atol=row_roundoff,
                                               err_msg=f"trial {trial}, {spec.name}")
            assert (d_caught is None) == (h_caught is None), (trial, spec.name)
            if d_caught is not None:
                assert d_caught == pytest.approx(h_caught, rel=1e-12), (trial, spec.name)
