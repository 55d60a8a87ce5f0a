"""The verifier's sensitivity per op and dtype: the smallest uniform relative error
(out = ref * (1 + eps)) that the per-element error bound catches, on representative
problem sizes, over the normal and uniform trials (the wide and edge trials catch at
least as much). No GPU needed.

Usage: python benchmarks/error_bound.py [--markdown]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_spec.model import Buffer, Problem  # noqa: E402
from verify.runner import prepare_problem  # noqa: E402

DTYPES = ("float32", "float16", "bfloat16")


def problems(dtype: str) -> list:
    """(label, Problem) at the sizes the built-in sources use."""
    def buf(name, shape, role="in"):
        return Buffer(name, dtype, shape, role)
    out = [
        ("vector_add n=2^20", Problem("va", "vector_add", [buf("x", (1 << 20,)), buf("y", (1 << 20,)),
                                                            buf("out", (1 << 20,), "out")])),
        ("softmax 1823x781", Problem("sm", "softmax", [buf("x", (1823, 781)), buf("out", (1823, 781), "out")])),
        ("rmsnorm 1151x8192", Problem("rn", "rmsnorm", [buf("x", (1151, 8192)), buf("w", (8192,)),
                                                         buf("out", (1151, 8192), "out")], params={"eps": 1e-6})),
        ("layernorm 1151x4096", Problem("ln", "layernorm", [buf("x", (1151, 4096)), buf("w", (4096,)), buf("b", (4096,)),
                                                             buf("out", (1151, 4096), "out")])),
        ("gemm 512x768x520", Problem("mm", "gemm", [buf("A", (512, 520)), buf("B", (520, 768)),
                                                     buf("D", (512, 768), "out")], params={"K": 520})),
    ]
    if dtype == "float32":
        out.append(("gemm 512x768x520 tf32", Problem("mmt", "gemm", [buf("A", (512, 520)), buf("B", (520, 768)),
                                                                     buf("D", (512, 768), "out")],
                                                     params={"K": 520, "math_input": "tf32"})))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args()
    rows = []
    for dtype in DTYPES:
        for label, problem in problems(dtype):
            prepared = prepare_problem(problem, "bench", None)
            if prepared.refusal:
                rows.append((label, dtype, "refused: " + prepared.refusal))
                continue
            rows.append((label, dtype, f"{prepared.catches_rel_err:.2e}"))
    if args.markdown:
        print("| problem | dtype | smallest uniform relative error caught |")
        print("|---|---|---|")
        for label, dtype, value in rows:
            print(f"| {label} | {dtype} | {value} |")
    else:
        for label, dtype, value in rows:
            print(f"{label:28s} {dtype:9s} {value}")


if __name__ == "__main__":
    main()
