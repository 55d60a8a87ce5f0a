"""Buffer names and an operator label for a muGraph file, and the group's Problem.

Mirage files carry no operator name. The inputs' shapes suggest one (attention,
rmsnorm_matmul, ...): it only names the buffers (Q, K, V -> O) and labels ``variant``;
it never decides the reference. The problem's op is ``mugraph``: the reference, error
scale and input domain come from the muGraph itself (dataset_spec/mugraph.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from dataset_spec import mugraph
from dataset_spec.model import Buffer, Distribution, Problem

DOMAIN_BINADES = 12  # wide/edge magnitudes span [hi * 2^-12, hi]


@dataclass(frozen=True)
class Operator:
    op: str
    inputs: tuple
    output: str
    matches: Callable  # (shapes) -> bool


def _normal(std: float, mean: float = 0.0) -> Distribution:
    return Distribution("normal", {"mean": mean, "std": std})

def _attention(s):
    return (len(s) == 3 and all(len(t) == 3 for t in s) and s[0][0] == s[1][0] == s[2][0]
            and s[0][2] == s[1][1] and s[1][2] == s[2][1])


def _rmsnorm(s):
    return len(s) == 2 and len(s[0]) == len(s[1]) == 2 and s[0][1] == s[1][0]


def _gated(s):
    return (len(s) == 3 and all(len(t) == 2 for t in s) and s[0][1] == s[1][0] == s[2][0]
            and s[1] == s[2] and s[0] != s[1])


def _lora(s):
    return (len(s) == 4 and all(len(t) == 2 for t in s) and s[0][1] == s[1][0] == s[2][0]
            and s[2][1] == s[3][0] and s[3][1] == s[1][1])


def _ntrans(s):
    return len(s) == 3 and all(len(t) == 2 for t in s) and s[0] == s[1] == s[2]


OPERATORS = [
    Operator("attention", ("Q", "K", "V"), "O", _attention),
    Operator("rmsnorm_matmul", ("X", "W"), "Y", _rmsnorm),
    Operator("gated_mlp", ("X", "W1", "W2"), "Y", _gated),
    Operator("lora", ("X", "W", "A", "B"), "Y", _lora),
    Operator("ntrans", ("H", "X", "alpha"), "Y", _ntrans),
]


def recognise(shapes: list) -> Optional[Operator]:
    shapes = [tuple(s) for s in shapes]
    found = [op for op in OPERATORS if op.matches(shapes)]
    return found[0] if len(found) == 1 else None


def make_problem(graph: list, index: int, file_sha256: str, input_names: tuple, output_name: str,
                 group: str, domain: Optional[tuple] = None) -> Problem:
    """The group's problem: op ``mugraph`` with the reference muGraph itself in params
    (dataset_spec/mugraph.py evaluates it), the domain and typical spread found on its
    float64 evaluation (``domain``: (hi, std) already found, as analysis.py keeps them)."""
    shapes, out_shape = mugraph.io_tensors(graph)
    if domain is None:
        hi = mugraph.find_domain(graph)
        domain = hi, mugraph.find_typical_std(graph, hi)
    hi, std = domain
    buffers = [Buffer(name, "float16", shape, "in", _normal(std)) for name, shape in zip(input_names, shapes)]
    buffers.append(Buffer(output_name, "float16", out_shape, "out"))
    return Problem(problem_id=group, op="mugraph", buffers=buffers,
                   params={"mugraph": graph, "mugraph_index": index, "file_sha256": file_sha256,
                           "input_range": {name: [hi * 2.0 ** -DOMAIN_BINADES, hi] for name in input_names},
                           "math_input": "float16",
                           "input_choice": (f"largest |x| <= {hi:.4g} keeping every float16 tensor of "
                                            f"muGraph {index} below {mugraph.FP16_SAFE:g} on adversarial "
                                            f"inputs; typical N(0, {std:g}^2)")})
