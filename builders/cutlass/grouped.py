"""Grouped GEMM kernels (2.x ``GemmGrouped``, 3.x ptr-array ``GroupedUniversal3x``) as rows
of the ``grouped_gemm`` problem (dataset_spec/ops/grouped_gemm.py).

A grouped kernel computes G GEMMs of different sizes in one launch. Its Params point at
device arrays (problem shapes, operand pointers, leading dimensions) that the problem
carries as device tables; the packer finds each array's pointer by its sentinel
(``TABLE_NAMES`` are extra slots, ``operand_slots=()``: the Params hold no operand
pointer). Both generations describe the problem in library terms: the 2.x grouped kernel
transposes a column-major-C problem internally (``kTransposed``) and the 3.x one takes
strides as they are, so neither swaps A and B the way 2.x universal instances do.
Sizes are grouped sizes (builders/moe_shapes.py): a work item compiles a batch once and
makes one row per (size, kernel). The grouped blockwise-scaled FP8 kernels build the same
way with scale tables on top (builders/cutlass/grouped_blockwise.py), and so do the 2.x
planar complex array kernels with their own problem and tables
(builders/cutlass/planar_complex_array.py).
"""
from __future__ import annotations

import math
from collections import defaultdict

from dataset_spec.model import DTYPES, Arg, Buffer, Distribution, KernelRecord, Launch, SpecError
from dataset_spec.packed import element_bits, is_packed
from dataset_spec.ops.grouped_gemm import TABLE_NAMES, make_grouped_problem
from builders.base import WorkItem
from builders.cutlass import grouped_blockwise, planar_complex_array
from builders.cutlass.catalog import DTYPE_NAMES
from builders.cutlass.kernel_traits import arch_of, entry_params, uses_tma
from builders.cutlass.packer import PackError, pack_launch
from builders.cutlass.problem import LAYOUT_WORDS, ROUNDING_MATH, accumulator_name, epilogue_misfit, math_input
from builders.moe_shapes import DEFAULT_GROUPED, DEFAULT_GROUPED_BLOCKWISE, grouped_label

KIND = "grouped_gemm"
GROUPED_KINDS = ("Grouped", "GroupedUniversal3x", grouped_blockwise.GEMM_KIND, planar_complex_array.GEMM_KIND)


def is_grouped(spec) -> bool:
    return spec.knobs.get("gemm_kind") in GROUPED_KINDS


def layouts(spec) -> dict:
    k = spec.knobs
    return {"a": LAYOUT_WORDS[k["layout_a"]], "b": LAYOUT_WORDS[k["layout_b"]], "c": LAYOUT_WORDS[k["layout_c"]]}


def family_id(spec, alpha: float, beta: float) -> str:
    if grouped_blockwise.is_grouped_blockwise(spec):
        return grouped_blockwise.family_id(spec, alpha, beta)
    if planar_complex_array.is_planar_array(spec):
        return planar_complex_array.family_id(spec, alpha, beta)
    k = spec.knobs
    types = [k["element_a"], k["element_b"], k["element_accumulator"]]
    types += ([f"c{k['element_c']}"] if beta != 0 else []) + [k["element_d"]]
    label = "_".join(types)
    rounding = ROUNDING_MATH.get(k.get("math_operation", ""))
    if rounding:
        label += f"_{rounding}"
    lay = layouts(spec)
    return f"cutlass/grouped_gemm/{label}/{''.join(lay[x][0] for x in 'abc')}/a{alpha:g}b{beta:g}"


def group_id(spec, size, alpha: float, beta: float) -> str:
    return f"{family_id(spec, alpha, beta)}/{grouped_label(size)}"


TMA_STORE_BYTES = 16  # a TMA tensor's global strides are multiples of 16 bytes


def tma_epilogue(spec) -> bool:
    """A 3.x epilogue that stores D (and loads C) through TMA ('epi_tma'; not 'nosmem')."""
    schedule = spec.knobs.get("epilogue_schedule", "")
    return spec.generation == 3 and "Tma" in schedule and "NoSmem" not in schedule


def _tma_alignment(element: str) -> int:
    """Elements per 16 bytes: the alignment the generator gives a TMA epilogue's C and D
    (cutlass_library get_tma_alignment), whatever the operation's own alignment says."""
    dtype = DTYPE_NAMES[element]
    bits = element_bits(dtype) if is_packed(dtype) else 8 * DTYPES[dtype][0]
    return TMA_STORE_BYTES * 8 // bits


def _contiguous(spec) -> dict:
    """Operand -> (the problem dimension its storage is contiguous along, alignment). A TMA
    epilogue stores D (and loads a non-void C) by TMA, so their columns (rows) must be
    16-byte multiples (a tensor map's strides are, as cuTensorMapEncodeTiled requires): the
    ptr-array kernel writes each group's strides into its map on the device, where nothing
    checks them; 40- and 8-byte FP8 columns (M = 40, 8) left D's tails unwritten."""
    lay, k = layouts(spec), spec.knobs
    c_dim = "N" if lay["c"] == "row" else "M"
    extents = {"A": ("K" if lay["a"] == "row" else "M", k["alignment_a"]),
               "B": ("N" if lay["b"] == "row" else "K", k["alignment_b"]),
               "C": (c_dim, k["alignment_c"])}
    if tma_epilogue(spec):
        extents["D"] = (c_dim, _tma_alignment(k["element_d"]))
        if k["element_c"] != "void":
            extents["C"] = (c_dim, math.lcm(int(k["alignment_c"]), _tma_alignment(k["element_c"])))
    return extents


def misfit(spec, size) -> str:
    """Why the kernel cannot run every problem of ``size``, or ''."""
    if planar_complex_array.is_planar_array(spec):
        return planar_complex_array.misfit(spec, size)
    for i, (m, n, k) in enumerate(size):
        dims = {"M": m, "N": n, "K": k}
        for operand, (dim, align) in _contiguous(spec).items():
            if dims[dim] % align:
                return (f"{spec.name}: problem {i}: {operand}'s contiguous extent {dim}={dims[dim]} is not a "
                        f"multiple of its alignment {align}")
    return ""


def fit(specs, size) -> tuple:
    """Every problem's dimensions rounded up to what every kernel of ``specs`` needs."""
    if any(planar_complex_array.is_planar_array(s) for s in specs):  # a family is of one kind
        return planar_complex_array.fit(specs, size)
    multiple = {"M": 1, "N": 1, "K": 1}
    for spec in specs:
        for dim, align in _contiguous(spec).values():
            multiple[dim] = math.lcm(multiple[dim], int(align))
    return tuple(tuple(-(-v // multiple[d]) * multiple[d] for d, v in zip("MNK", mnk)) for mnk in size)


def sizes_for(shape_set, op: str = KIND) -> list:
    """A shape set's grouped sizes for ``op`` (the default set: DEFAULT_GROUPED, or
    DEFAULT_GROUPED_BLOCKWISE; a per-op list where the set names one; ``--problem`` M N K:
    one problem)."""
    if shape_set.is_default:
        return list(DEFAULT_GROUPED_BLOCKWISE if op == grouped_blockwise.OP else DEFAULT_GROUPED)
    if op in shape_set.per_op:
        return list(shape_set.per_op[op])
    if shape_set.grouped:
        return list(shape_set.grouped)
    if shape_set.name == "problem" and shape_set.gemm:
        return [(tuple(shape_set.gemm[0]),)]
    raise SpecError(f"shape set {shape_set.name!r} names no grouped sizes; grouped GEMM kernels need "
                    f"'grouped:' sizes (lists of [M, N, K] problems, builders/shapes.py)")


def problem_op(spec) -> str:
    if planar_complex_array.is_planar_array(spec):
        return planar_complex_array.OP
    return grouped_blockwise.OP if grouped_blockwise.is_grouped_blockwise(spec) else KIND


def make_problem(spec, size, alpha: float, beta: float):
    if grouped_blockwise.is_grouped_blockwise(spec):
        return grouped_blockwise.make_problem(spec, size, alpha, beta)
    if planar_complex_array.is_planar_array(spec):
        return planar_complex_array.make_problem(spec, size, alpha, beta)
    k = spec.knobs
    element_c = k["element_c"] if beta != 0 else k["element_d"]
    dtypes = {"A": DTYPE_NAMES[k["element_a"]], "B": DTYPE_NAMES[k["element_b"]],
              "C": DTYPE_NAMES[element_c], "D": DTYPE_NAMES[k["element_d"]]}
    return make_grouped_problem(group_id(spec, size, alpha, beta), size, dtypes, layouts(spec), alpha, beta,
                                extra_params={"accumulator": accumulator_name(spec), "math_input": math_input(spec)})


def table_slots(spec) -> tuple:
    """The device tables the kernel's Params point at: a 3.x kernel with a void C has no C."""
    if planar_complex_array.is_planar_array(spec):
        return planar_complex_array.table_slots(spec)
    tables = TABLE_NAMES
    if spec.knobs["element_c"] == "void":
        tables = tuple(t for t in TABLE_NAMES if t not in ("ptr_C", "ld_C"))
    return grouped_blockwise.table_slots(spec, tables) if grouped_blockwise.is_grouped_blockwise(spec) else tables


def threadblock_count(spec, size, sm_count: int) -> int:
    """2.x persistent grid: one block per SM at most, never more than there are tiles."""
    tm, tn, _ = spec.knobs["threadblock_tile"]
    tiles = sum(-(-m // tm) * -(-n // tn) for m, n, _ in size)
    return max(1, min(tiles, sm_count))


def work_items(builder, specs: list) -> list:
    if not specs:
        return []
    families = defaultdict(list)
    for spec in specs:
        families[(family_id(spec, builder.alpha, builder.beta), arch_of(spec))].append(spec)
    items = []
    for (family, arch), members in sorted(families.items()):
        sizes = sizes_for(builder.shape_set, problem_op(members[0]))
        fitted = sizes if builder.shape_set.exact else list(dict.fromkeys(fit(members, s) for s in sizes))
        for size in fitted:  # a size whose operands cannot be laid out is the user's to fix
            make_problem(members[0], size, builder.alpha, builder.beta)
        labels = "+".join(grouped_label(s) for s in fitted)
        for start in range(0, len(members), builder.batch_size):
            chunk = members[start:start + builder.batch_size]
            items.append(WorkItem(
                key=f"{family}/{labels}/{arch}/{start // builder.batch_size}",
                group_id=f"{family}/{grouped_label(fitted[0])}",
                label=f"{len(chunk)} CUTLASS grouped kernel(s) x {len(fitted)} sizes for {family} on {arch}",
                payload={"kind": KIND, "names": [s.name for s in chunk], "sm": chunk[0].sm, "arch": arch,
                         "problems": [[list(p) for p in s] for s in fitted], "exact": builder.shape_set.exact,
                         "shape_set": builder.shape_set.name, "alpha": builder.alpha, "beta": builder.beta,
                         "sm_count": builder.sm_count, "families": list(builder.families),
                         "per_family": builder.per_family, "limit": builder.options.limit,
                         "sample_seed": builder.options.sample_seed},
                rows=len(chunk) * len(fitted)))
    return items


def build(builder, item) -> list:
    """Compile the batch once, then one row per (size, kernel), sizes outermost."""
    p = item.payload
    specs, ptx_by_name, failures, packer = builder.compile_batch(p)
    sizes = [tuple(tuple(mnk) for mnk in size) for size in p["problems"]]
    gids = [group_id(specs[0], size, p["alpha"], p["beta"]) for size in sizes]
    rows = []
    for index, size in enumerate(sizes):
        shared = ({"groups": gids, "sizes": [grouped_label(s) for s in sizes], "reused": index > 0}
                  if len(sizes) > 1 else None)
        for spec in specs:
            rows.append(_row(builder, spec, p, size, ptx_by_name, failures, packer, shared))
    return rows


def _row(builder, spec, p, size, ptx_by_name, failures, packer, shared) -> KernelRecord:
    if spec.name in failures:
        return _record(builder, spec, p, size, "", [], [], "build_failed", failures[spec.name], shared)
    entry, ptx = ptx_by_name[spec.name]
    size_misfit = misfit(spec, size)
    reason = size_misfit or epilogue_misfit(spec, p["alpha"], p["beta"])
    if reason:  # as for GEMM: a user's size, alpha or beta the kernel cannot take
        status = "not_applicable" if p["exact"] or not size_misfit else "build_failed"
        return _record(builder, spec, p, size, ptx, [], [], status, reason, shared)
    try:
        launch, scratch = pack(spec, packer, entry, ptx, p, size)
    except (PackError, ValueError) as exc:
        return _record(builder, spec, p, size, ptx, [], [], "build_failed", str(exc), shared)
    return _record(builder, spec, p, size, ptx, [launch], scratch, "built", "", shared)


def pack(spec, packer, entry, ptx, p, size):
    """The grouped kernel's launch and scratch (the 3.x workspace of per-SM tensor maps)."""
    m, n, k = size[0]
    values = {"problem_count": len(size)}
    if planar_complex_array.is_planar_array(spec):  # the grid covers the largest problem
        values = planar_complex_array.pack_values(spec, size)
        m, n, k = values["max_m"], values["max_n"], values["max_k"]
    elif spec.generation == 2:
        values["threadblock_count"] = threadblock_count(spec, size, p["sm_count"])
    packed = pack_launch(packer, spec.name, m, n, k, p["alpha"], p["beta"], p["sm_count"], False,
                         extra_slots=table_slots(spec), params=values, operand_slots=())
    params = entry_params(ptx, entry)
    if len(params) != 1 or params[0].size != len(packed.blob):
        raise PackError(f"entry params {[(q.name, q.size) for q in params]} do not match the "
                        f"{len(packed.blob)}-byte Params blob")
    tensormaps = [q for q in packed.patches if q.kind == "tensormap"]
    if uses_tma(spec) and not tensormaps:
        raise PackError(f"{spec.name}: a TMA kernel whose Params hold no CUtensorMap")
    if tensormaps and params[0].align < 64:
        raise PackError(f"Params hold CUtensorMaps but the entry param is only .align {params[0].align}")
    blob = bytearray(packed.blob)
    for patch in packed.patches:
        blob[patch.offset:patch.offset + patch.size] = bytes(patch.size)
    scratch = []
    if packed.workspace_bytes:
        scratch.append(Buffer("workspace", "uint8", (packed.workspace_bytes,), "scratch", init=Distribution("zeros")))
    launch = Launch(entry=entry, grid=packed.grid, block=packed.block, cluster=packed.cluster,
                    dynamic_smem=packed.dynamic_smem, args=[Arg("blob", blob=bytes(blob), patches=packed.patches)])
    return launch, scratch


def _record(builder, spec, p, size, ptx, launches, scratch, status, message, shared) -> KernelRecord:
    swapped = planar_complex_array.is_planar_array(spec)  # its 2.x emitter swaps A and B
    lay = planar_complex_array.kernel_layouts(spec) if swapped else layouts(spec)
    variant = dict(spec.knobs)
    variant.update({"generation": spec.generation, "kernel_layouts": [lay["a"], lay["b"], lay["c"]],
                    "problem_transposed": swapped})
    provenance = builder.provenance(spec, p, shared)
    return KernelRecord(
        group_id=group_id(spec, size, p["alpha"], p["beta"]), source="cutlass", variant=variant, name=spec.name,
        arch=p["arch"], ptx=ptx, launches=launches, problem=make_problem(spec, size, p["alpha"], p["beta"]),
        scratch=scratch, toolchain=builder.toolchain(p), provenance=provenance,
        status=status, status_message=message[-8000:] if message else "")
