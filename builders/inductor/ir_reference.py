"""The reference of a kernel whose buffers are not all values of the model's FX nodes: Inductor's
own IR of the buffers the kernel writes, evaluated over whole tensors and traced to ATen ops.

Inductor writes buffers that no FX node computes: a split reduction's partial sums (a
LayerNorm over few rows, a weight gradient's sum over many tokens), a Welford reduction's M2
(GroupNorm), the sum before a mean's division. For a kernel that reads or writes one, the
FX subgraph has no cut between its inputs and outputs; the IR does. Each buffer the kernel
computes is a ``ComputedBuffer`` whose store function (``get_store_function``) runs the
loop body Inductor lowered from the graph, calling ``ops.load``/``ops.reduction``/
``ops.store`` and math ops through ``V.ops``. ``IrEvaluator`` is that handler over whole
tensors: index variables are ``arange`` tensors broadcast over the iteration space, a load
gathers from the buffer's flat storage at the index expression (sympy, evaluated with the
same tensors), a reduction reduces the trailing reduction axes, a store scatters into the
output's flat storage. Traced with ``make_fx``, the evaluation is an ATen graph like an FX
reference: it runs in float64 under ``reference_runtime.Float64`` and carries its error bound
under ``ErrorTracker``. Inputs and outputs are flat storages (size [numel], stride [1]).
"""
from __future__ import annotations

import math


class IrUnsupported(ValueError):
    """The kernel's IR uses something the evaluator does not handle; the message names it."""


def _torch():
    import torch
    return torch


# ops that are one torch function of their tensor arguments
def _unary(name):
    torch = _torch()
    table = {
        "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1,
        "log": torch.log, "log1p": torch.log1p, "log2": torch.log2, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
        "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
        "erf": torch.erf, "erfc": torch.erfc, "relu": torch.relu, "floor": torch.floor, "ceil": torch.ceil,
        "trunc": torch.trunc, "round": torch.round, "sign": torch.sign, "signbit": torch.signbit,
        "reciprocal": torch.reciprocal, "isinf": torch.isinf, "isnan": torch.isnan, "logical_not": torch.logical_not,
        "bitwise_not": torch.bitwise_not, "atan": torch.atan, "asin": torch.asin, "acos": torch.acos,
        "sinh": torch.sinh, "cosh": torch.cosh, "lgamma": torch.lgamma, "identity": lambda x: x,
        "square": lambda x: x * x,
    }
    return table.get(name)


def _binary(name):
    torch = _torch()
    table = {
        "add": torch.add, "sub": torch.sub, "mul": torch.mul, "truediv": torch.true_divide, "div": torch.div,
        "floordiv": lambda a, b: torch.div(a, b, rounding_mode="floor"),
        "truncdiv": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        "remainder": torch.remainder, "mod": torch.fmod, "fmod": torch.fmod, "pow": torch.pow,
        "maximum": torch.maximum, "minimum": torch.minimum, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt,
        "le": torch.le, "gt": torch.gt, "ge": torch.ge, "logical_and": torch.logical_and,
        "logical_or": torch.logical_or, "logical_xor": torch.logical_xor, "bitwise_and": torch.bitwise_and,
        "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor, "atan2": torch.atan2,
        "copysign": torch.copysign, "hypot": torch.hypot, "nextafter": torch.nextafter,
    }
    return table.get(name)


def _as_tensor(value, dtype=None):
    import sympy
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, sympy.Basic):  # a constant the loop body computed with sympy
        value = int(value) if value.is_integer else float(value)
    if dtype is None:
        dtype = torch.bool if isinstance(value, bool) else torch.int64 if isinstance(value, int) else torch.float64
    return torch.full((), value, dtype=dtype)


class IrEvaluator:
    """An ops handler (``V.ops``) that computes a loop body over whole tensors; ``storages``
    maps buffer names to flat tensors, and a store replaces the buffer's entry."""

    def __init__(self, storages: dict):
        self.storages = storages
        self.alias: dict = {}     # a buffer that mutates another (a scatter-add) -> the one it writes
        self.symbols: dict = {}   # sympy symbol -> int64 tensor (an index variable, an indirect index)
        self.ndim = 0
        self.reduction_dims = 0

    # ------------------------------------------------------------------ iteration space
    def bind(self, ranges: list, reduction_ranges: list) -> tuple:
        """Index symbols for one node's loops, each bound to an arange over its own axis."""
        import sympy
        torch = _torch()
        sizes = [int(r) for r in ranges] + [int(r) for r in reduction_ranges]
        self.ndim, self.reduction_dims, self.shape = len(sizes), len(reduction_ranges), sizes
        symbols = [sympy.Symbol(f"v{i}", integer=True, nonnegative=True) for i in range(len(sizes))]
        self.symbols = {}
        for axis, (symbol, size) in enumerate(zip(symbols, sizes)):
            view = [1] * len(sizes)
            view[axis] = size
            self.symbols[symbol] = torch.arange(size, dtype=torch.int64).view(view)
        return symbols[:len(ranges)], symbols[len(ranges):]

    def evaluate(self, expr):
        """A sympy index expression over the bound tensors."""
        import sympy
        from torch.utils._sympy import functions as F
        torch = _torch()
        if isinstance(expr, (int, bool)):
            return int(expr)
        if isinstance(expr, sympy.Integer):
            return int(expr)
        if isinstance(expr, sympy.Symbol):
            if expr not in self.symbols:
                raise IrUnsupported(f"index symbol {expr} is unbound")
            return self.symbols[expr]
        args = [self.evaluate(a) for a in expr.args]
        if isinstance(expr, sympy.Add):
            return sum(args[1:], args[0])
        if isinstance(expr, sympy.Mul):
            return math.prod(args[1:], start=args[0])
        if isinstance(expr, (F.FloorDiv, F.CleanDiv)):
            return _floordiv(args[0], args[1])
        if isinstance(expr, F.ModularIndexing):
            return _remainder(_floordiv(args[0], args[1]), args[2])
        if isinstance(expr, (F.PythonMod, F.Mod, sympy.Mod)):
            return _remainder(args[0], args[1])
        if isinstance(expr, F.Min):
            return _fold(torch.minimum, min, args)
        if isinstance(expr, F.Max):
            return _fold(torch.maximum, max, args)
        if isinstance(expr, (F.PowByNatural, sympy.Pow)) and isinstance(args[1], int) and args[1] >= 0:
            return args[0] ** args[1]
        if isinstance(expr, F.Identity):
            return args[0]
        if isinstance(expr, F.Where):
            return torch.where(_as_tensor(args[0]).bool(), _as_tensor(args[1]), _as_tensor(args[2]))
        raise IrUnsupported(f"index expression {type(expr).__name__} ({expr}) is not evaluated")

    def full(self, value):
        return _as_tensor(value).expand(self.shape)

    # ------------------------------------------------------------------ memory
    def load(self, name, index):
        torch = _torch()
        name = self.alias.get(name, name)
        if name not in self.storages:
            raise IrUnsupported(f"the kernel loads {name}, which it neither reads nor computes")
        storage = self.storages[name]
        offsets = _as_tensor(self.evaluate(index)).clamp(0, storage.numel() - 1)  # masked loads may point out
        return torch.ops.aten.index.Tensor(storage, [offsets])

    def store(self, name, index, value, mode=None):
        torch = _torch()
        if mode not in (None, "atomic_add"):
            raise IrUnsupported(f"store mode {mode}")
        name = self.alias.get(name, name)
        storage = self.storages[name]
        kept = self.shape[:self.ndim - self.reduction_dims]  # a reduction's result has no reduction axes
        offsets = _as_tensor(self.evaluate(index))
        if offsets.dim() == self.ndim:
            offsets = offsets.expand(kept + [1] * self.reduction_dims).reshape(kept)
        offsets = offsets.expand(kept)
        value = _as_tensor(value).to(storage.dtype)
        value = value.reshape(kept) if value.dim() == self.ndim and self.reduction_dims else value.expand(kept)
        self.storages[name] = torch.ops.aten.index_put.default(storage, [offsets.reshape(-1)], value.reshape(-1),
                                                               mode == "atomic_add")
        return None

    def store_reduction(self, name, index, value):
        return self.store(name, index, value)

    def check_bounds(self, expr, size, lower, upper):
        return None

    def indirect_indexing(self, value, size, check=True, wrap_neg=True):
        import sympy
        torch = _torch()
        value = _as_tensor(value).to(torch.int64)
        if wrap_neg:
            value = torch.where(value < 0, value + int(size), value)
        symbol = sympy.Symbol(f"indirect{len(self.symbols)}", integer=True)
        self.symbols[symbol] = value
        return symbol

    # ------------------------------------------------------------------ values
    def constant(self, value, dtype):
        return _as_tensor(value, dtype)

    def index_expr(self, expr, dtype):
        return _as_tensor(self.evaluate(expr)).to(dtype)

    def to_dtype(self, x, dtype, src_dtype=None, use_compute_types=True):
        torch = _torch()
        return torch.ops.prims.convert_element_type.default(_as_tensor(x), dtype)

    def masked(self, mask, body, other):
        torch = _torch()
        value = _as_tensor(body())
        return torch.where(_as_tensor(mask).bool(), value, _as_tensor(other, value.dtype))

    def where(self, condition, a, b):
        torch = _torch()
        a, b = _as_tensor(a), _as_tensor(b)
        return torch.where(_as_tensor(condition).bool(), a, b)

    def fma(self, a, b, c):
        return _as_tensor(a) * _as_tensor(b) + _as_tensor(c)

    def reduction(self, dtype, src_dtype, reduction_type, value):
        torch = _torch()
        dims = list(range(self.ndim - self.reduction_dims, self.ndim))
        if reduction_type == "welford_reduce":
            x = self.full(value)
            count = math.prod(self.shape[d] for d in dims)
            mean = x.mean(dim=dims)
            m2 = ((x - mean.view(mean.shape + (1,) * len(dims))) ** 2).sum(dim=dims)
            return mean, m2, torch.full(mean.shape, float(count), dtype=mean.dtype)
        if reduction_type == "welford_combine":
            mean, m2, weight = (self.full(v) for v in value)
            total = weight.sum(dim=dims)
            combined = (mean * weight).sum(dim=dims) / total
            shift = (mean - combined.view(combined.shape + (1,) * len(dims))) ** 2
            return combined, (m2 + weight * shift).sum(dim=dims), total
        if reduction_type == "online_softmax_reduce":
            x = self.full(value)
            peak = x.amax(dim=dims)
            return peak, torch.exp(x - peak.view(peak.shape + (1,) * len(dims))).sum(dim=dims)
        if isinstance(value, tuple):
            raise IrUnsupported(f"reduction {reduction_type} of several values")
        x = self.full(value)
        if reduction_type == "sum":
            return x.sum(dim=dims)
        if reduction_type in ("max", "min"):
            return x.amax(dim=dims) if reduction_type == "max" else x.amin(dim=dims)
        if reduction_type == "prod":
            return x.flatten(len(self.shape) - len(dims)).prod(dim=-1)
        if reduction_type == "any":
            return x.bool().flatten(len(self.shape) - len(dims)).any(dim=-1)
        if reduction_type in ("argmax", "argmin"):
            flat = x.flatten(len(self.shape) - len(dims))
            return flat.argmax(dim=-1) if reduction_type == "argmax" else flat.argmin(dim=-1)
        raise IrUnsupported(f"reduction {reduction_type}")

    def __getattr__(self, name):
        base = name[len("libdevice_"):] if name.startswith("libdevice_") else name
        unary, binary = _unary(base), _binary(base)
        if unary is not None:
            return lambda x: unary(_as_tensor(x))
        if binary is not None:
            return lambda a, b: binary(_as_tensor(a), _as_tensor(b))
        raise IrUnsupported(f"op {name} is not evaluated")


def _floordiv(a, b):
    torch = _torch()
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return torch.div(a, b, rounding_mode="floor")


def _remainder(a, b):
    torch = _torch()
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    return torch.remainder(a, b)


def _fold(tensor_op, int_op, args):
    result = args[0]
    for a in args[1:]:
        result = int_op(result, a) if isinstance(result, int) and isinstance(a, int) else \
            tensor_op(_as_tensor(result), _as_tensor(a))
    return result


def kernel_graph(graph, nodes: list, reads: dict, writes: dict, inplace: dict):
    """(FX graph of ATen ops ``graph(*reads) -> tuple(writes)``, the storage numel of each
    read and written buffer): the buffers ``nodes`` (the kernel's scheduler nodes, in order)
    compute, from the flat storages of the buffers in ``reads`` (kernel param -> buffer),
    returned in the order of ``writes`` (param -> buffer). ``inplace``: written buffer ->
    the read buffer whose storage it starts from (an in-place buffer, a buffer written in
    part). Raises IrUnsupported naming what it cannot evaluate."""
    import torch
    from torch._inductor import ir
    from torch._inductor.virtualized import V
    from torch.fx.experimental.proxy_tensor import make_fx

    def numel(name):
        layout = graph.get_buffer(name).get_layout()
        size, stride = [int(s) for s in layout.size], [int(s) for s in layout.stride]
        return int(layout.offset) + (1 + sum((s - 1) * t for s, t in zip(size, stride)) if all(size) else 0)

    def dtype(name):
        return graph.get_buffer(name).get_dtype()

    def mutated(buffer):
        """The name of the buffer ``buffer`` mutates (its MutationLayout's target), or None."""
        layout = buffer.get_layout()
        if type(layout).__name__ != "MutationLayoutSHOULDREMOVE":
            return None
        target = layout.target
        while type(target.get_layout()).__name__ == "MutationLayoutSHOULDREMOVE":
            target = target.get_layout().target
        return target.get_name()

    read_names = list(reads.values())
    computed = []
    for name in nodes:
        buffer = graph.get_buffer(name)
        if not isinstance(buffer, ir.ComputedBuffer) or not buffer.has_store_function():
            raise IrUnsupported(f"buffer {name} is a {type(buffer).__name__}, not a computed buffer")
        if isinstance(buffer.data, (ir.Scan, ir.Sort)) or type(buffer.data).__name__ not in (
                "Pointwise", "Scatter", "Reduction", "MultiOutputReduction", "WelfordReduction",
                "OnlineSoftmaxReduction"):
            raise IrUnsupported(f"buffer {name} is computed by {type(buffer.data).__name__}")
        computed.append(buffer)

    def evaluate(*storages):
        evaluator = IrEvaluator(dict(zip(read_names, storages)))
        for buffer in computed:
            name = buffer.get_name()
            target = mutated(buffer)
            if target is not None:  # a scatter-add into a buffer the kernel reads: the store goes there
                if target not in evaluator.storages:
                    raise IrUnsupported(f"buffer {name} adds into {target}, which the kernel does not read")
                evaluator.alias[name] = target
            else:
                start = inplace.get(name)
                evaluator.storages[name] = (evaluator.storages[start].to(dtype(name)) if start is not None
                                            else torch.zeros(numel(name), dtype=dtype(name)))
            data = buffer.data
            reduction = list(data.get_reduction_size()) if isinstance(data, ir.Reduction) else []
            index, rindex = evaluator.bind(list(data.get_size()), reduction)
            with V.set_ops_handler(evaluator):
                store = buffer.get_store_function()
                store(index, rindex) if reduction else store(index)
        return tuple(evaluator.storages[name] for name in writes.values())

    examples = [torch.zeros(numel(name), dtype=dtype(name)) for name in read_names]
    with V.set_graph_handler(graph):
        traced = make_fx(evaluate, tracing_mode="fake")(*examples)
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    for node, name in zip(placeholders, read_names):
        node.name = node.target = name  # the buffers' own names in the reference text
    traced.recompile()
    return traced.graph, {name: numel(name) for name in read_names + list(writes.values())}
