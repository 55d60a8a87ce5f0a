"""Seconds the verifier spends preparing groups whose reference is a user's function (op
custom): their inputs, float64 references, error scales and bounds, as ``ptxds verify``'s
prepare stage makes them, with the reference on the host (numpy), the function on the GPU
(torch or CuPy, float64; bounds on the host), the whole preparation but the draws on the GPU
(the route found, then kept), and read back from the reference cache (the same groups and
seed again).

    python benchmarks/custom_reference_speed.py [--groups 8] [--size 4096] [--trials N]

Needs a CUDA GPU and torch for the GPU rows (the host row runs anywhere). The reference
cache goes to a fresh folder; nothing else is written.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dataset_spec.model import Buffer, Distribution, Problem  # noqa: E402

# Functions a user writes for numpy: a GEMM with its |A| @ |B| error scale, a gated product,
# a row-normalised product; all three also run unchanged on torch tensors.
SOURCE = '''
import numpy as np

def gemm(inputs, problem):
    return {"out": inputs["A"] @ inputs["B"].T}

def gemm_error_scale(inputs, problem):
    return {"out": abs(inputs["A"]) @ abs(inputs["B"]).T}

def gated(inputs, problem):
    a, b = inputs["A"], inputs["B"]
    return {"out": (a @ b.T) * (a.sum(1, keepdims=True) > 0)}

def normed(inputs, problem):
    a, b = inputs["A"], inputs["B"]
    scale = (a * a).mean(1, keepdims=True) ** 0.5 + 1e-6
    return {"out": (a / scale) @ b.T}

def softmax_rows(inputs, problem):
    a = inputs["A"]
    e = np.exp(a - np.max(a, axis=1, keepdims=True))
    weight = 1.0 + (np.arange(a.shape[1]) % 2)
    return {"out": e / np.sum(e, axis=1, keepdims=True) * weight + 0.0 * inputs["B"]}
'''
# the first three run on torch tensors as written; softmax_rows (np.max, np.arange) needs CuPy
FUNCTIONS = ("gemm", "gated", "normed", "softmax_rows")


def problems(count: int, size: int) -> list:
    out = []
    for i in range(count):
        name = FUNCTIONS[i % len(FUNCTIONS)]
        init = Distribution("normal", {"mean": 0.0, "std": 1.0})
        out.append(Problem(f"custom/{name}/{i}", "custom",
                           [Buffer("A", "float16", (size, size), "in", init),
                            Buffer("B", "float16", (size, size), "in", init),
                            Buffer("out", "float32", (size, size), "out")],
                           params={"reference": f"user_reference:{name}", "reference_source": SOURCE,
                                   "reduction_length": size}))
    return out


def prepare_all(groups: list, reference: str, trials, lock, on_device: bool = False) -> float:
    from verify.runner import prepare_device, prepare_problem
    start = time.perf_counter()
    for problem in groups:
        device = prepare_device(problem, reference) if on_device else None
        prepared = prepare_problem(problem, problem.problem_id, trials, reference, device, lock, salt="bench")
        if prepared.refusal:
            raise SystemExit(f"{problem.problem_id}: refused: {prepared.refusal}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--trials", type=int, default=None, help="trials a group (default: one per trial kind)")
    args = parser.parse_args()
    os.environ["PTXDS_REFERENCES_CACHE"] = tempfile.mkdtemp(prefix="ptxds-refcache-")
    groups = problems(args.groups, args.size)
    lock = threading.Lock()
    from verify.trials.reference import torch_for
    on_gpu = torch_for("auto") is not None
    print(f"{args.groups} custom groups, A, B {args.size}x{args.size}; GPU: {'yes' if on_gpu else 'no'}")
    print(f"{'reference':<28}{'seconds':>10}{'s/group':>10}")
    runs = [("host (numpy), cold cache", "numpy", False)]
    if on_gpu:
        os.environ["PTXDS_REFERENCES_CACHE_BYTES"] = "0"  # the GPU rows compute every reference
        runs += [("GPU function (torch, CuPy)", "auto", False),
                 ("GPU prepared (bounds too)", "auto", True),
                 ("the same, routes kept", "auto", True)]
    runs += [("cache (same groups, seed)", "auto", False)]
    for i, (label, backend, on_device) in enumerate(runs):
        if label.startswith("cache"):
            os.environ.pop("PTXDS_REFERENCES_CACHE_BYTES", None)
        seconds = prepare_all(groups, backend, args.trials, lock, on_device)
        print(f"{label:<28}{seconds:>10.1f}{seconds / len(groups):>10.2f}", flush=True)


if __name__ == "__main__":
    main()
