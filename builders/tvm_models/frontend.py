"""A model block as TVM sees it: ``torch.export`` of the block (the inductor source's model
constructors, builders/inductor/models.py), TVM's Relax frontend over the exported program,
and which FX node of the exported graph each Relax binding came from.

TVM's frontend writes matrix products and convolutions with a float32 result
(``out_dtype="float32"``) whatever the operands; a float16 model then mixes float16 and
float32 operands and the import fails (``addmm``'s bias add) or changes the model. The
importer here casts every converted value back to the dtype of its FX node (what PyTorch
computes: float32 accumulation, a result rounded to the operand dtype) and adds ``addmm``'s
bias in float32 before that rounding, as cuBLAS's epilogue does.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ImportedModel:
    """The Relax module of one block, and per Relax binding name the FX node it came from."""
    module: object                       # tvm.IRModule, function "main"
    origins: dict                        # relax var name -> FX node name
    nodes: dict                          # FX node name -> {"target": aten op, "layer": module path}
    input_roles: dict = field(default_factory=dict)   # relax param name -> role ("weight:<name>", "activation", ...)


def _node_info(node) -> dict:
    stack = node.meta.get("nn_module_stack") or {}
    layer = ""
    if stack:
        last = list(stack.values())[-1]
        layer = last[0] if isinstance(last, tuple) else str(last)
    return {"target": str(node.target), "layer": layer}


def _importer_class():
    from tvm import relax
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    class DtypeFaithfulImporter(ExportedProgramImporter):
        """TVM's importer, with each converted value in its FX node's dtype and every Relax
        binding it emits for a node remembered as that node's."""

        def __init__(self):
            self.emitted, self.origins = [], {}
            super().__init__()
            # ops a kernel's post-grad graph (an Inductor capture's reference) holds beside core ATen
            self.convert_map.setdefault("convert_element_type.default", self._to_copy)
            self.convert_map.setdefault("var_mean.correction", self._var_mean)
            self.convert_map.setdefault("iota.default", self._iota)
            for name, convert in list(self.convert_map.items()):
                self.convert_map[name] = self._faithful(convert)

        def _faithful(self, convert):
            import torch

            def run(node, *rest):
                first = len(self.emitted)
                out = convert(node, *rest)
                value = node.meta.get("val")
                if isinstance(out, relax.Expr) and isinstance(value, torch.Tensor) and value.is_floating_point():
                    want = str(value.dtype).replace("torch.", "")
                    if not isinstance(out, relax.Var):  # a tuple item or call not bound yet has no type
                        out = self.block_builder.emit(out)
                    have = getattr(getattr(out, "ty", None), "dtype", None)
                    if have is not None and str(have) != want:
                        out = self.block_builder.emit(relax.op.astype(out, want))
                for name in self.emitted[first:]:
                    self.origins.setdefault(name, node.name)
                return out
            return run

        @property
        def block_builder(self):
            return self._builder

        @block_builder.setter
        def block_builder(self, builder):
            """Every binding the builder emits is recorded (``emitted``), in order."""
            self._builder = builder
            if builder is None:
                return
            emit, emitted = builder.emit, self.emitted

            def recording(expr, name_hint=""):
                var = emit(expr, name_hint)
                emitted.append(str(var.name))
                return var
            builder.emit = recording

        def _batch_norm_legit_no_training(self, node):
            """Batch norm in inference mode as elementwise ops in the input's dtype (TVM 0.27
            legalizes a float16 ``nn.batch_norm`` to a float32 result its users then reject):
            (x - mean) / sqrt(var + eps) * weight + bias per channel, as TVM's own
            DecomposeOpsForInference writes it."""
            x = self.env[node.args[0]]
            dtype = str(x.ty.dtype.dtype) if hasattr(x.ty.dtype, "dtype") else str(x.ty.dtype)
            rank = len(node.meta["val"][0].shape)
            eps = node.args[6] if len(node.args) > 6 else node.kwargs.get("eps", 1e-05)
            emit = self.block_builder.emit

            def channel(arg):
                value = self.env[arg]
                return emit(relax.op.reshape(value, [1, -1] + [1] * (rank - 2)))

            mean, var = channel(node.args[3]), channel(node.args[4])
            out = emit(relax.op.divide(emit(relax.op.subtract(x, mean)),
                                       emit(relax.op.sqrt(emit(relax.op.add(var, relax.const(eps, dtype)))))))
            if node.args[1] is not None:
                out = emit(relax.op.multiply(out, channel(node.args[1])))
            if node.args[2] is not None:
                out = emit(relax.op.add(out, channel(node.args[2])))
            # a Python tuple: its getitem is the value itself, with no binding between them
            return out, self.env[node.args[3]], self.env[node.args[4]]

        def _var_mean(self, node):
            """``var_mean.correction`` as its variance and its mean (a Python tuple, as
            ``_batch_norm_legit_no_training`` returns)."""
            x = self.env[node.args[0]]
            dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
            mean = self.block_builder.emit(relax.op.mean(x, dim, keepdims=node.kwargs.get("keepdim", False)))
            return self._var_correction(node), mean

        def _iota(self, node):
            """``prims.iota(length, start=, step=, dtype=)`` (``arange`` after decomposition)."""
            length, start, step = node.args[0], node.kwargs.get("start", 0), node.kwargs.get("step", 1)
            dtype = self._convert_data_type(node.kwargs.get("dtype"), self.env)
            return self.block_builder.emit(relax.op.arange(start, start + length * step, step, dtype))

        def _addmm(self, node):
            bias, left, right = (self.env[a] for a in node.args[:3])
            alpha, beta = node.kwargs.get("alpha", 1), node.kwargs.get("beta", 1)
            product = self.block_builder.emit(relax.op.linear_algebra.matmul(left, right, out_dtype="float32"))
            if alpha != 1:
                product = self.block_builder.emit(relax.op.multiply(product, relax.const(alpha, "float32")))
            if beta == 0:
                return product
            bias = self.block_builder.emit(relax.op.astype(bias, "float32"))
            if beta != 1:
                bias = self.block_builder.emit(relax.op.multiply(bias, relax.const(beta, "float32")))
            return self.block_builder.emit(relax.op.add(bias, product))

    return DtypeFaithfulImporter


def export_block(spec):
    """(torch.export program of ``spec``'s block in inference mode, decomposed to core ATen;
    {user input name: role}). Inputs are zeros of their shapes and dtypes on the CPU."""
    import torch

    from builders.inductor.models import build_block

    module, inputs = build_block(spec)
    args = tuple(torch.zeros(shape, dtype=dtype) for _, shape, dtype in inputs.values())
    with torch.no_grad():
        program = torch.export.export(module, args)
    program = program.run_decompositions()
    return program, {name: role for name, (role, _, _) in inputs.items()}


def import_block(spec) -> ImportedModel:
    """The Relax module of ``spec``'s block, weights as function parameters."""
    return import_exported(*export_block(spec))


def import_exported(program, roles: dict) -> ImportedModel:
    """The Relax module of an exported program (``roles``: {user input name: role}), its
    parameters and buffers as function parameters."""
    importer = _importer_class()()
    module = importer.from_exported_program(program, True, False, False, None)
    nodes = {n.name: _node_info(n) for n in program.graph.nodes if n.op == "call_function"}
    input_roles = {}
    user_inputs = iter(roles.values())
    for input_spec in program.graph_signature.input_specs:
        kind = str(input_spec.kind).rsplit(".", 1)[-1]
        name = input_spec.arg.name
        if kind in ("PARAMETER", "BUFFER"):
            input_roles[name] = f"weight:{input_spec.target}"
        elif kind == "USER_INPUT":
            input_roles[name] = next(user_inputs, "activation")
        else:
            input_roles[name] = kind.lower()
    return ImportedModel(module, dict(importer.origins), nodes, input_roles)
