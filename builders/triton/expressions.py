"""The Triton problem spec file: its entries checked key by key, and its grid and argument
expressions evaluated without ``eval``.

An expression is parsed with ``ast`` and walked over a fixed set of nodes: numbers, names
of the scope (``vars``, numeric problem params, ``num_warps``, ``ranges``, ...), the
arithmetic, bitwise and comparison operators, ``a if c else b``, indexing a list
(``ranges[0]``) and calls of the functions in ``FUNCTIONS``. Anything else (attributes,
lambdas, comprehensions, strings, keyword arguments) is refused, and every failure,
division by zero included, is one ``SpecError`` naming the expression."""
from __future__ import annotations

import ast
import dataclasses
import operator
from typing import Any, Callable

from dataset_spec.model import Problem, SpecError


def cdiv(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def next_pow2(n: int) -> int:
    return 1 << (int(n) - 1).bit_length()


FUNCTIONS: dict[str, Callable] = {"cdiv": cdiv, "next_pow2": next_pow2, "min": min, "max": max, "abs": abs}
BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
          ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
          ast.BitOr: operator.or_, ast.BitXor: operator.xor}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}
COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
MAX_CHARS = 500
MAX_MAGNITUDE = 1 << 64  # grids and scalars are at most 64-bit; bigger is a typo, not a size

# The keys of one problem spec entry, and the type each value must have.
ENTRY_KEYS = {"kernel": (str, list), "signature": str, "problem": (dict, str), "vars": dict, "args": list,
              "grid": list, "grid_by_hash": dict, "fits": (str, list)}
REQUIRED_KEYS = ("kernel", "problem")


class _Evaluator:
    def __init__(self, text: str, scope: dict):
        self.text, self.scope = text, scope

    def fail(self, why: str) -> SpecError:
        return SpecError(f"expression {self.text!r}: {why}")

    def value(self, node: ast.AST) -> Any:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise self.fail(f"{type(node).__name__} is not allowed; use numbers, names, arithmetic "
                            f"and {', '.join(sorted(FUNCTIONS))}")
        result = method(node)
        if isinstance(result, (int, float)) and not isinstance(result, bool) and abs(result) > MAX_MAGNITUDE:
            raise self.fail(f"a value beyond 2**64 ({ast.unparse(node)})")
        return result

    def _Expression(self, node):
        return self.value(node.body)

    def _Constant(self, node):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise self.fail(f"{node.value!r} is not a number")
        return node.value

    def _Name(self, node):
        if node.id in self.scope:
            return self.scope[node.id]
        if node.id in FUNCTIONS:
            raise self.fail(f"{node.id} is a function; call it")
        raise self.fail(f"unknown name {node.id!r}; known: {', '.join(sorted(self.scope))}")

    def number(self, node) -> Any:
        value = self.value(node)
        if not isinstance(value, (int, float)):
            raise self.fail(f"{ast.unparse(node)} is a {type(value).__name__}, not a number")
        return value

    def _BinOp(self, node):
        if type(node.op) not in BINARY:
            raise self.fail(f"the operator {type(node.op).__name__} is not allowed")
        left, right = self.number(node.left), self.number(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise self.fail("an exponent beyond 64")
        if isinstance(node.op, ast.LShift) and right > 64:
            raise self.fail("a shift beyond 64 bits")
        return self.arithmetic(BINARY[type(node.op)], left, right)

    def _UnaryOp(self, node):
        return self.arithmetic(UNARY[type(node.op)], self.number(node.operand))

    def _Compare(self, node):
        left = self.value(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            if type(op) not in COMPARE:
                raise self.fail(f"{type(op).__name__} is not allowed")
            right = self.value(right_node)
            if not COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _BoolOp(self, node):
        values = (self.value(v) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)

    def _IfExp(self, node):
        return self.value(node.body) if self.value(node.test) else self.value(node.orelse)

    def _Subscript(self, node):
        sequence, index = self.value(node.value), self.value(node.slice)
        if not isinstance(sequence, (list, tuple)) or not isinstance(index, int):
            raise self.fail("only a list indexed by an integer (ranges[0]) is allowed")
        try:
            return sequence[index]
        except IndexError:
            raise self.fail(f"index {index} is out of range for a list of {len(sequence)}") from None

    def _Call(self, node):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS or node.keywords:
            raise self.fail(f"only calls of {', '.join(sorted(FUNCTIONS))} with plain arguments are allowed")
        return self.arithmetic(FUNCTIONS[name], *[self.value(a) for a in node.args])

    def arithmetic(self, function: Callable, *args):
        try:
            return function(*args)
        except ZeroDivisionError:
            raise self.fail("division by zero") from None
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise self.fail(str(exc)) from None


def evaluate(expr, scope: dict):
    """The value of one grid or argument expression (a number passes through)."""
    if isinstance(expr, bool) or not isinstance(expr, (int, float, str)):
        raise SpecError(f"expression {expr!r}: give a number or an expression string")
    if not isinstance(expr, str):
        return expr
    text = expr.strip()
    if len(text) > MAX_CHARS:
        raise SpecError(f"expression {text[:40]!r}...: longer than {MAX_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"expression {text!r}: not an expression ({exc.msg})") from None
    return _Evaluator(text, scope).value(tree)


def check_spec_entries(specs: list, path) -> None:
    """Every entry of a problem spec file: known keys only, each of its type, ``kernel`` and
    ``problem`` present, ``problem`` of Problem's fields. Raises SpecError naming the entry
    and the key."""
    problem_fields = {f.name for f in dataclasses.fields(Problem)}
    for index, entry in enumerate(specs):
        where = f"{path}: entry {index + 1}"
        if not isinstance(entry, dict):
            raise SpecError(f"{where} is a {type(entry).__name__}; each entry is a mapping with the keys "
                            f"{', '.join(ENTRY_KEYS)}")
        if isinstance(entry.get("kernel"), (str, list)):
            where += f" ({entry['kernel'] if isinstance(entry['kernel'], str) else ', '.join(map(str, entry['kernel']))})"
        for key, value in entry.items():
            if key not in ENTRY_KEYS:
                raise SpecError(f"{where}: unknown key {key!r}; the keys are {', '.join(ENTRY_KEYS)}")
            kinds = ENTRY_KEYS[key] if isinstance(ENTRY_KEYS[key], tuple) else (ENTRY_KEYS[key],)
            if not isinstance(value, kinds):
                raise SpecError(f"{where}: {key} is a {type(value).__name__}, it should be a "
                                f"{' or a '.join(k.__name__ for k in kinds)}")
        if isinstance(entry.get("kernel"), list) and not all(isinstance(k, str) for k in entry["kernel"]):
            raise SpecError(f"{where}: kernel lists kernel names, got {entry['kernel']!r}")
        missing = [key for key in REQUIRED_KEYS if key not in entry]
        if missing:
            raise SpecError(f"{where}: no {' and no '.join(missing)}; every entry names its kernel and problem")
        unknown = sorted(set(entry["problem"]) - problem_fields) if isinstance(entry["problem"], dict) else []
        if unknown:
            raise SpecError(f"{where}: problem has unknown field {unknown[0]!r}; its fields are "
                            f"{', '.join(sorted(problem_fields))}")
        for name, number in entry.get("vars", {}).items():
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                raise SpecError(f"{where}: vars.{name} is {number!r}, it should be a number")
