"""A fused TIR PrimFunc as plain data: the program its float64 reference interprets.

``tir_program(func)`` reads the unscheduled PrimFunc that Relax's FuseTIR makes for one
task (blocks of ``T.sblock`` statements, each with its iteration domain, an optional
reduction ``init`` and one buffer store) and writes it as lists and dicts that JSON can hold:

    {"params": [name, ...],                        # the PrimFunc's buffers, in call order
     "buffers": {name: {"shape": [...], "dtype": "float16"}},   # params and temporaries
     "blocks": [{"name", "vars": [[extent, "S"|"R"], ...], "store": [buffer, [index exprs]],
                 "value": expr, "reduce": None | {"op": "sum"|"max"|"min"|"prod", "init": expr}}]}

An expression is a list whose head names it: ``["const", value, dtype]``, ``["var", i]``
(the block's i-th iteration variable), ``["load", buffer, [index exprs]]``, ``["cast",
dtype, x]``, a binary op ``[op, a, b, dtype]`` (add, sub, mul, div, floordiv, floormod, mod,
min, max, and, or, bitand, bitor, bitxor, shl, shr), a comparison ``[op, a, b]`` (eq, ne, lt,
le, gt, ge), ``["not", x]``, ``["select", cond, a, b, dtype]`` and ``["call", name, [args],
dtype]`` (exp, tanh, erf, sqrt, rsqrt, log, pow, if_then_else, ...).

A block is evaluated over its whole iteration domain: TIR's blocks say which points they
cover (their iteration variables and domains), whatever loops bind them, so the loops are
not needed. What the reference cannot state (a block predicate, a block that stores twice,
a reduction of another shape, a vector or ``let`` expression) raises ``UnsupportedTir``
naming it: such a task is left out with that reason.
"""
from __future__ import annotations


class UnsupportedTir(ValueError):
    """The PrimFunc holds a construct the float64 interpreter does not evaluate."""


BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "FloorDiv": "floordiv",
          "FloorMod": "floormod", "Mod": "mod", "Min": "min", "Max": "max", "And": "and", "Or": "or",
          "BitwiseAnd": "bitand", "BitwiseOr": "bitor", "BitwiseXor": "bitxor", "LShift": "shl", "RShift": "shr"}
COMPARE = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}
REDUCERS = {"add": "sum", "max": "max", "min": "min", "mul": "prod"}


def _dims(shape) -> list:
    return [int(s) for s in shape]


def _dtype(node) -> str:
    """The dtype of a TIR expression (TVM 0.27 keeps it in ``ty``; older TVM in ``dtype``)."""
    ty = getattr(node, "ty", None)
    return str(getattr(ty, "dtype", None) or node.dtype)


def _buffer_entry(buffer) -> dict:
    """{shape, dtype} of a buffer (a Buffer, or TVM 0.27's buffer Var with a BufferType)."""
    ty = getattr(buffer, "ty", None)
    holder = ty if getattr(ty, "shape", None) is not None else buffer
    return {"shape": _dims(holder.shape), "dtype": str(holder.dtype)}


def _int(value) -> int:
    return int(value.value if hasattr(value, "value") else value)


class _Reader:
    """Converts one PrimFunc; ``buffers`` collects every buffer it meets by name."""

    def __init__(self):
        self.buffers: dict = {}
        self.blocks: list = []
        self.known: list = []   # (buffer object, its name here): TIR lets two temporaries share a name

    def buffer(self, buffer) -> str:
        for known, name in self.known:
            if known.same_as(buffer):
                return name
        name, count = str(buffer.name), 1
        while name in self.buffers:
            name, count = f"{buffer.name}.{count}", count + 1
        self.buffers[name] = _buffer_entry(buffer)
        self.known.append((buffer, name))
        return name

    def expr(self, node, iter_vars: list):
        import tvm
        kind = type(node).__name__
        if kind in ("IntImm", "FloatImm"):
            dtype = _dtype(node)
            value = bool(node.value) if dtype == "bool" else int(node.value) if kind == "IntImm" \
                else float(node.value)
            return ["const", value, dtype]
        if kind == "Var":
            for index, var in enumerate(iter_vars):
                if var.same_as(node):
                    return ["var", index]
            raise UnsupportedTir(f"variable {node.name} is not an iteration variable of its block")
        if kind in ("TensorLoad", "BufferLoad"):
            source = node.source if hasattr(node, "source") else node.buffer
            return ["load", self.buffer(source), [self.expr(i, iter_vars) for i in node.indices]]
        if kind == "Cast":
            return ["cast", _dtype(node), self.expr(node.value, iter_vars)]
        if kind in BINARY:
            return [BINARY[kind], self.expr(node.a, iter_vars), self.expr(node.b, iter_vars), _dtype(node)]
        if kind in COMPARE:
            return [COMPARE[kind], self.expr(node.a, iter_vars), self.expr(node.b, iter_vars)]
        if kind == "Not":
            return ["not", self.expr(node.a, iter_vars)]
        if kind == "BitwiseNot":
            return ["call", "bitwise_not", [self.expr(node.a, iter_vars)], _dtype(node)]
        if kind == "Select":
            return ["select", self.expr(node.condition, iter_vars), self.expr(node.true_value, iter_vars),
                    self.expr(node.false_value, iter_vars), _dtype(node)]
        if kind == "Call" and isinstance(node.op, tvm.ir.Op):
            name = str(node.op.name).split(".", 1)[-1]
            return ["call", name, [self.expr(a, iter_vars) for a in node.args], _dtype(node)]
        raise UnsupportedTir(f"expression {kind} ({str(node)[:80]})")

    def block(self, realize) -> None:
        block = realize.block
        predicate = realize.predicate
        if not (type(predicate).__name__ == "IntImm" and int(predicate.value) == 1):
            raise UnsupportedTir(f"block {block.name_hint} has a predicate")
        if len(block.alloc_buffers) or len(block.match_buffers):
            raise UnsupportedTir(f"block {block.name_hint} allocates or matches buffers")
        iter_vars, domain = [], []
        for iv in block.iter_vars:
            if _int(iv.dom.min) != 0:
                raise UnsupportedTir(f"block {block.name_hint}: iteration variable {iv.var.name} does not start at 0")
            kind = {0: "S", 2: "R"}.get(int(iv.iter_type))
            if kind is None:
                raise UnsupportedTir(f"block {block.name_hint}: iteration variable {iv.var.name} is neither "
                                     "spatial nor a reduction")
            iter_vars.append(iv.var)
            domain.append([_int(iv.dom.extent), kind])
        store = block.body
        if type(store).__name__ not in ("BufferStore", "TensorStore"):
            raise UnsupportedTir(f"block {block.name_hint}'s body is a {type(store).__name__}, not one store")
        target = self.buffer(store.buffer)
        indices = [self.expr(i, iter_vars) for i in store.indices]
        value = self.expr(store.value, iter_vars)
        reduce = None
        if block.init is not None:
            reduce = self._reduction(block, target, indices, value, iter_vars)
            value = reduce.pop("operand")
        elif any(kind == "R" for _, kind in domain):
            raise UnsupportedTir(f"block {block.name_hint} reduces without an init")
        self.blocks.append({"name": str(block.name_hint), "vars": domain, "store": [target, indices],
                            "value": value, "reduce": reduce})

    def _reduction(self, block, target, indices, value, iter_vars) -> dict:
        init = block.init
        if type(init).__name__ not in ("BufferStore", "TensorStore") or self.buffer(init.buffer) != target \
                or [self.expr(i, iter_vars) for i in init.indices] != indices:
            raise UnsupportedTir(f"block {block.name_hint}'s init is not a store to its output")
        own = ["load", target, indices]
        op = REDUCERS.get(value[0])
        if op is None or own not in value[1:3]:
            raise UnsupportedTir(f"block {block.name_hint} updates its output with {value[0]}, not a reduction")
        operand = value[2] if value[1] == own else value[1]
        if own in (operand,) or _reads(operand, target):
            raise UnsupportedTir(f"block {block.name_hint}'s reduction reads its output again")
        return {"op": op, "init": self.expr(init.value, iter_vars), "operand": operand}


def _reads(expr, buffer: str) -> bool:
    if not isinstance(expr, list):
        return False
    if expr[0] == "load" and expr[1] == buffer:
        return True
    return any(_reads(part, buffer) for part in expr[1:] if isinstance(part, list))


def _sblocks(stmt, out: list) -> None:
    """The block realizations under ``stmt`` in program order (loops and sequences walked)."""
    import tvm.s_tir as st
    import tvm.tirx as tx
    if isinstance(stmt, st.SBlockRealize):
        out.append(stmt)
    elif isinstance(stmt, tx.For):
        if _int(stmt.min) != 0:
            raise UnsupportedTir(f"loop {stmt.loop_var.name} does not start at 0")
        _sblocks(stmt.body, out)
    elif isinstance(stmt, tx.SeqStmt):
        for s in stmt.seq:
            _sblocks(s, out)
    else:
        raise UnsupportedTir(f"statement {type(stmt).__name__} between blocks")


def tir_program(func) -> dict:
    """The program of an unscheduled PrimFunc (see module docstring)."""
    import tvm.s_tir as st
    reader = _Reader()
    params = [reader.buffer(p) for p in func.params]
    if params != [str(p.name) for p in func.params]:
        raise UnsupportedTir(f"two parameters share a name: {params}")
    root = func.body
    if not isinstance(root, st.SBlockRealize):
        raise UnsupportedTir(f"the function's body is a {type(root).__name__}, not its root block")
    temporaries = [reader.buffer(b) for b in root.block.alloc_buffers]
    realizations: list = []
    _sblocks(root.block.body, realizations)
    for realize in realizations:
        reader.block(realize)
    written = {block["store"][0] for block in reader.blocks}
    return {"params": params, "outputs": [p for p in params if p in written],
            "temporaries": temporaries, "buffers": reader.buffers, "blocks": reader.blocks}
