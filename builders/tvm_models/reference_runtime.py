"""The float64 reference and error scale of one TVM task, shipped as text inside each row's
reference module (params.reference_source; docs/tvm-models.md).

A task's reference module holds ``PROGRAM`` (the task's fused TIR PrimFunc as plain data,
builders/tvm_models/program.py) and then this file's text. It imports torch and numpy only.

``reference`` runs the program block by block over each block's iteration domain with
every value in float64 (a dtype-promoted copy of the PrimFunc: its casts keep the value,
its float16 sums are exact sums). ``reference_error_scale`` runs it again keeping, per
value, E: a first-order bound on the absolute error of the PrimFunc's own evaluation in
its own dtypes (inputs exact): each arithmetic op in dtype D adds u(D) |result| (u: 2^-11
float16, 2^-8 bfloat16, 2^-24 float32), a division or transcendental 4 u(D), a cast to a
narrower float u(target) |value|, an n-term reduction in D acc_D(n) sum |terms|, and errors
carry through every op by its derivative. The custom op's bound with reduction_length 1
multiplies S by the float32 roundoff, so S = E / u(float32).
"""
import json
import math

import numpy as np
import torch

UNIT = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "float64": 0.0}
U32 = 2.0 ** -24
# the largest magnitude a narrow float value may reach in the input-domain search
SAFE_MAGNITUDE = {"float16": 65504.0 / 2, "bfloat16": 3.3895313892515355e38 / 2}
STORAGE = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
MATERIALIZE_LIMIT = 1 << 22   # a reduction's product is summed in place (einsum) above this many points


def _kind(dtype):
    return "float" if dtype.startswith(("float", "bfloat")) else "bool" if dtype == "bool" else "int"


def _torch_dtype(dtype):
    return {"float": torch.float64, "int": torch.int64, "bool": torch.bool}[_kind(dtype)]


def accumulation(n, u):
    """acc(n): the smaller of gamma(n) and 2 sqrt(n) u, for an n-term sum in roundoff u."""
    n = max(1, int(n))
    if u == 0.0:
        return 0.0
    worst = n * u / (1 - n * u) if n * u < 0.5 else math.inf
    return min(worst, 2.0 * math.sqrt(n) * u)


class Value:
    """A tensor of the program in float64 (int64, bool), its error bound E and its TIR dtype."""
    __slots__ = ("v", "e", "dtype")

    def __init__(self, v, e, dtype):
        self.v, self.e, self.dtype = v, e, dtype


ZERO = torch.zeros((), dtype=torch.float64)


class Interpreter:
    """Runs PROGRAM on inputs; ``errors``: keep E; ``peak``: the largest ratio of a narrow
    float value's magnitude to SAFE_MAGNITUDE of its dtype (the input-domain search)."""

    def __init__(self, program, errors=False):
        self.program, self.errors, self.peak = program, errors, 0.0

    # ------------------------------------------------------------------ buffers
    def run(self, inputs):
        program = self.program
        self.buffers = {}
        for name, entry in program["buffers"].items():
            shape, dtype = entry["shape"], entry["dtype"]
            if name in inputs:
                value = torch.tensor(np.asarray(inputs[name], dtype=np.float64)).reshape(shape)
                value = value.to(_torch_dtype(dtype)) if _kind(dtype) != "float" else value
            else:
                value = torch.zeros(shape, dtype=_torch_dtype(dtype))
            self.buffers[name] = Value(value, torch.zeros(shape, dtype=torch.float64) if self.errors else ZERO, dtype)
        for block in program["blocks"]:
            self.block(block)
        return {name: self.buffers[name] for name in program["outputs"]}

    def block(self, block):
        extents = [n for n, _ in block["vars"]]
        rank = len(extents)
        reduced = [i for i, (_, kind) in enumerate(block["vars"]) if kind == "R"]
        self.grid = [torch.arange(n).view([n if j == i else 1 for j in range(rank)]) for i, n in enumerate(extents)]
        target, indices = block["store"]
        out_dtype = self.buffers[target].dtype
        spatial_shape = [1 if i in reduced else n for i, n in enumerate(extents)]
        reduce = block["reduce"]
        if reduce is None:
            value = self.expr(block["value"])
        else:
            value = self.reduction(reduce, block["value"], extents, reduced, out_dtype)
        self.store(target, indices, value, spatial_shape)

    def store(self, target, indices, value, shape):
        buffer = self.buffers[target]
        index = tuple(torch.broadcast_to(self.expr(i).v, shape).reshape(-1) for i in indices)
        count = int(np.prod(shape)) if shape else 1
        buffer.v[index] = torch.broadcast_to(value.v, shape).reshape(count).to(buffer.v.dtype)
        if self.errors:
            buffer.e[index] = torch.broadcast_to(value.e, shape).reshape(count)

    # ------------------------------------------------------------------ reductions
    def reduction(self, reduce, operand, extents, reduced, dtype):
        n = int(np.prod([extents[i] for i in reduced])) if reduced else 1
        u = UNIT.get(dtype, 0.0)
        op = reduce["op"]
        if op == "sum" and operand[0] == "mul" and _kind(dtype) == "float" and np.prod(extents) > MATERIALIZE_LIMIT:
            total = self.contracted_sum(operand, extents, reduced, n, u)
        else:
            terms = self.expr(operand)
            full = torch.broadcast_to(terms.v, extents)
            if op == "sum":
                v = full.sum(dim=reduced, keepdim=True) if reduced else full
                e = None
                if self.errors:
                    e = torch.broadcast_to(terms.e, extents).sum(dim=reduced, keepdim=True) if reduced else terms.e
                    e = e + accumulation(n, u) * (full.abs().sum(dim=reduced, keepdim=True) if reduced else full.abs())
            elif op in ("max", "min"):
                pick = torch.amax if op == "max" else torch.amin
                v = pick(full, dim=reduced, keepdim=True) if reduced else full
                e = (torch.broadcast_to(terms.e, extents).amax(dim=reduced, keepdim=True) if reduced else terms.e) \
                    if self.errors else None
            elif op == "prod":
                v = full.prod(dim=reduced, keepdim=True) if reduced else full
                e = None
                if self.errors:
                    relative = torch.broadcast_to(terms.e, extents) / full.abs()
                    e = v.abs() * (relative.sum(dim=reduced, keepdim=True) + n * u)
            else:
                raise ValueError(f"reduction {op}")
            total = Value(v, e if self.errors else ZERO, dtype)
        init = self.expr(reduce["init"])
        combine = {"sum": "add", "max": "max", "min": "min", "prod": "mul"}[op]
        return self.binary(combine, init, total, dtype)

    def contracted_sum(self, operand, extents, reduced, n, u):
        """sum over ``reduced`` of a * b (the operand ``["mul", a, b, dtype]``) without making
        the product over the whole domain: einsum over each factor's own dimensions."""
        a, b = self.expr(operand[1]), self.expr(operand[2])
        u_mul = UNIT.get(operand[3], 0.0)
        v = _contract(a.v, b.v, extents, reduced)
        if not self.errors:
            return Value(v, ZERO, operand[3])
        magnitude = _contract(a.v.abs(), b.v.abs(), extents, reduced)
        e = magnitude * (u_mul + accumulation(n, u))
        if bool((a.e != 0).any()):
            e = e + _contract(a.e, b.v.abs(), extents, reduced)
        if bool((b.e != 0).any()):
            e = e + _contract(a.v.abs(), b.e, extents, reduced)
        return Value(v, e, operand[3])

    # ------------------------------------------------------------------ expressions
    def expr(self, node):
        head = node[0]
        if head == "const":
            value, dtype = node[1], node[2]
            exact = torch.tensor(value, dtype=_torch_dtype(dtype))
            if self.errors and dtype in STORAGE:  # the kernel holds the constant rounded to its dtype
                stored = torch.tensor(value, dtype=STORAGE[dtype]).to(torch.float64)
                return Value(exact, (stored - exact).abs() if torch.isfinite(stored) else ZERO, dtype)
            return Value(exact, ZERO, dtype)
        if head == "var":
            return Value(self.grid[node[1]], ZERO, "int64")
        if head == "load":
            buffer = self.buffers[node[1]]
            shape = buffer.v.shape
            index = tuple(self.expr(i).v.clamp(0, max(0, int(size) - 1)) for i, size in zip(node[2], shape))
            if not index:
                return Value(buffer.v, buffer.e, buffer.dtype)
            e = buffer.e[index] if self.errors else ZERO
            return Value(buffer.v[index], e, buffer.dtype)
        if head == "cast":
            return self.cast(node[1], self.expr(node[2]))
        if head in ("eq", "ne", "lt", "le", "gt", "ge"):
            a, b = self.expr(node[1]), self.expr(node[2])
            compare = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
            return Value(compare[head](a.v, b.v), ZERO, "bool")
        if head == "not":
            a = self.expr(node[1])
            return Value(torch.logical_not(a.v), ZERO, "bool")
        if head == "select":
            return self.select(self.expr(node[1]), self.expr(node[2]), self.expr(node[3]), node[4])
        if head == "call":
            return self.call(node[1], node[2], node[3])
        return self.binary(head, self.expr(node[1]), self.expr(node[2]), node[3])

    def select(self, cond, a, b, dtype):
        v = torch.where(cond.v, a.v, b.v)
        e = torch.where(cond.v, a.e, b.e) if self.errors else ZERO
        return Value(v, e, dtype)

    def rounded(self, v, e, dtype, unit):
        """A float result in ``dtype``: its own rounding (``unit`` times u(dtype)) added to E."""
        if _kind(dtype) == "float" and dtype in SAFE_MAGNITUDE:
            finite = v[torch.isfinite(v)]
            if finite.numel():
                self.peak = max(self.peak, float(finite.abs().max()) / SAFE_MAGNITUDE[dtype])
        if self.errors and _kind(dtype) == "float":
            e = e + unit * UNIT.get(dtype, 0.0) * v.abs()
            e = torch.where(torch.isfinite(v), torch.nan_to_num(e, nan=0.0, posinf=math.inf), 0.0)
        return Value(v, e if self.errors else ZERO, dtype)

    def cast(self, dtype, a):
        kind = _kind(dtype)
        if kind == "float":
            if _kind(a.dtype) != "float":
                return self.rounded(a.v.to(torch.float64), ZERO, dtype, 1.0)
            narrower = UNIT.get(dtype, 0.0) > UNIT.get(a.dtype, 0.0)
            return self.rounded(a.v, a.e, dtype, 1.0 if narrower else 0.0)
        if kind == "bool":
            return Value(a.v != 0, ZERO, dtype)
        v = torch.trunc(a.v).to(torch.int64) if a.v.is_floating_point() else a.v.to(torch.int64)
        return Value(v, ZERO, dtype)

    def binary(self, op, a, b, dtype):
        kind = _kind(dtype)
        if kind != "float":
            return Value(_integer_op(op, a.v, b.v, kind), ZERO, dtype)
        x, y = a.v, b.v
        A, B = x.abs(), y.abs()
        if op in ("add", "sub"):
            v = x + y if op == "add" else x - y
            e = (a.e + b.e) if self.errors else ZERO
            return self.rounded(v, e, dtype, 1.0)
        if op == "mul":
            v = x * y
            e = (A * b.e + a.e * B) if self.errors else ZERO
            return self.rounded(v, e, dtype, 1.0)
        if op == "div":
            v = x / y
            e = (a.e / B + v.abs() / B * b.e) if self.errors else ZERO
            return self.rounded(v, e, dtype, 4.0)
        if op in ("min", "max"):
            v = torch.minimum(x, y) if op == "min" else torch.maximum(x, y)
            e = torch.maximum(torch.broadcast_to(a.e, v.shape), torch.broadcast_to(b.e, v.shape)) if self.errors else ZERO
            return self.rounded(v, e, dtype, 0.0)
        if op == "floordiv":
            return self.rounded(torch.floor(x / y), ZERO, dtype, 0.0)
        if op in ("floormod", "mod"):
            v = torch.remainder(x, y) if op == "floormod" else torch.fmod(x, y)
            return self.rounded(v, (a.e + b.e) if self.errors else ZERO, dtype, 1.0)
        raise ValueError(f"no float rule for {op}")

    def call(self, name, args, dtype):
        if name == "if_then_else":
            return self.select(self.expr(args[0]), self.expr(args[1]), self.expr(args[2]), dtype)
        values = [self.expr(a) for a in args]
        if name == "likely":
            return values[0]
        if name in ("isnan", "isinf", "isfinite"):
            return Value(getattr(torch, name)(values[0].v), ZERO, "bool")
        if _kind(dtype) != "float":
            if name == "bitwise_not":
                return Value(torch.bitwise_not(values[0].v), ZERO, dtype)
            raise ValueError(f"no integer rule for {name}")
        a = values[0]
        x, E = a.v, a.e
        A = x.abs()
        errors = self.errors
        if name in ("exp", "exp2"):
            v = torch.exp(x) if name == "exp" else torch.exp2(x)
            scale = 1.0 if name == "exp" else math.log(2.0)
            e = v.abs() * (E * scale + (A + 4) * UNIT.get(dtype, 0.0)) if errors else ZERO
            return self.rounded(v, e, dtype, 0.0)
        if name in ("log", "log2", "log1p", "log10"):
            v = {"log": torch.log, "log2": torch.log2, "log1p": torch.log1p, "log10": torch.log10}[name](x)
            base = x + 1 if name == "log1p" else x
            return self.rounded(v, (E / base.abs()) if errors else ZERO, dtype, 4.0)
        if name == "sqrt":
            v = torch.sqrt(x)
            e = torch.where(v > 0, 0.5 * E / v, torch.sqrt(E)) if errors else ZERO
            return self.rounded(v, e, dtype, 4.0)
        if name == "rsqrt":
            v = torch.rsqrt(x)
            return self.rounded(v, (0.5 * E * v.abs() / A) if errors else ZERO, dtype, 4.0)
        if name == "tanh":
            v = torch.tanh(x)
            e = ((1 - v * v) * E + 4 * UNIT.get(dtype, 0.0) * A.clamp(max=1)) if errors else ZERO
            return self.rounded(v, e, dtype, 4.0)
        if name == "sigmoid":
            v = torch.sigmoid(x)
            return self.rounded(v, (v * (1 - v) * E) if errors else ZERO, dtype, 4.0)
        if name == "erf":
            v = torch.erf(x)
            return self.rounded(v, (2 / math.sqrt(math.pi) * torch.exp(-x * x) * E) if errors else ZERO, dtype, 4.0)
        if name in ("sin", "cos"):
            v = torch.sin(x) if name == "sin" else torch.cos(x)
            e = (E + 4 * UNIT.get(dtype, 0.0) * A * UNIT.get(dtype, 0.0)) if errors else ZERO
            return self.rounded(v, e, dtype, 4.0)
        if name == "fabs":
            return self.rounded(A, E, dtype, 0.0)
        if name in ("floor", "ceil", "round", "nearbyint", "trunc"):
            op = {"floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "nearbyint": torch.round,
                  "trunc": torch.trunc}[name]
            return self.rounded(op(x), ZERO, dtype, 0.0)
        if name == "pow":
            b = values[1]
            v = torch.pow(x, b.v)
            e = ZERO
            if errors:
                e = v.abs() * (b.v.abs() * E / A + torch.log(A) .abs() * b.e)
                e = torch.where(A > 0, e, 0.0)
            return self.rounded(v, e, dtype, 4.0)
        raise ValueError(f"no rule for TIR call {name}")


def _integer_op(op, x, y, kind):
    if kind == "bool" or x.dtype == torch.bool or y.dtype == torch.bool:
        table = {"and": torch.logical_and, "or": torch.logical_or, "bitand": torch.logical_and,
                 "bitor": torch.logical_or, "bitxor": torch.logical_xor}
        if op in table:
            return table[op](x, y)
    table = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "min": torch.minimum, "max": torch.maximum,
             "bitand": torch.bitwise_and, "bitor": torch.bitwise_or, "bitxor": torch.bitwise_xor,
             "shl": torch.bitwise_left_shift, "shr": torch.bitwise_right_shift,
             "and": torch.logical_and, "or": torch.logical_or}
    if op in table:
        return table[op](x, y)
    if op == "div":
        return torch.div(x, y, rounding_mode="trunc")
    if op == "floordiv":
        return torch.div(x, y, rounding_mode="floor")
    if op == "floormod":
        return torch.remainder(x, y)
    if op == "mod":
        return torch.fmod(x, y)
    raise ValueError(f"no integer rule for {op}")


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _contract(x, y, extents, reduced):
    """sum over the ``reduced`` dims of x * y (both broadcastable to ``extents``), keeping
    every dim (reduced ones as size 1), without making the full product."""
    rank = len(extents)
    x, y = x.to(torch.float64), y.to(torch.float64)
    x = x.reshape([1] * (rank - x.dim()) + list(x.shape))
    y = y.reshape([1] * (rank - y.dim()) + list(y.shape))

    def operand(t):
        dims = [i for i in range(rank) if t.shape[i] != 1 or extents[i] == 1]
        return t.reshape([t.shape[i] for i in dims]), "".join(LETTERS[i] for i in dims)

    (tx, lx), (ty, ly) = operand(x), operand(y)
    present = set(lx) | set(ly)
    out = "".join(LETTERS[i] for i in range(rank) if i not in reduced and LETTERS[i] in present)
    result = torch.einsum(f"{lx},{ly}->{out}", tx, ty)
    missing = [i for i in reduced if LETTERS[i] not in present]
    if missing:  # neither factor varies along these: every term appears extent times
        result = result * float(np.prod([extents[i] for i in missing]))
    shape = [extents[i] if (i not in reduced and LETTERS[i] in present) else 1 for i in range(rank)]
    return result.reshape(shape)


def _program():
    return json.loads(PROGRAM)  # noqa: F821 (defined by the module)


def _run(inputs, errors):
    interpreter = Interpreter(_program(), errors)
    with torch.no_grad():
        outputs = interpreter.run(inputs)
    return outputs, interpreter


def reference(inputs, problem):
    outputs, _ = _run(inputs, errors=False)
    return {name: value.v.to(torch.float64).numpy().reshape(problem.buffer(name).shape)
            for name, value in outputs.items()}


def reference_error_scale(inputs, problem):
    outputs, _ = _run(inputs, errors=True)
    return {name: (torch.broadcast_to(value.e, value.v.shape) / U32).numpy().reshape(problem.buffer(name).shape)
            for name, value in outputs.items()}


def narrow_peak(inputs):
    """The largest ratio of a narrow float value's magnitude to its dtype's safe magnitude
    (the input-domain search, builders/tvm_models/problem.py)."""
    outputs, interpreter = _run(inputs, errors=False)
    peak = interpreter.peak
    for name, value in outputs.items():
        if value.dtype in SAFE_MAGNITUDE:
            finite = value.v[torch.isfinite(value.v)]
            if finite.numel():
                peak = max(peak, float(finite.abs().max()) / SAFE_MAGNITUDE[value.dtype])
    return peak
