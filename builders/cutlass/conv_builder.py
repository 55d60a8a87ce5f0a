"""The ``cutlass-conv`` source: CUTLASS implicit-GEMM convolutions (the profiler
generator's Conv2d / Conv3d fprop, dgrad and wgrad kernels: 2.x for SM80, 3.x TMA
warp-specialized ones for SM90a) -> rows with PTX, a Params blob launch
(``cutlass::Kernel<Op>`` / ``cutlass::device_kernel<Op>``, the latter with tensormap
patches and a cluster shape) and a conv problem (dataset_spec/ops/conv_nhwc.py): channels-last,
or CUTLASS's interleaved nc32hw32 / nc64hw64 storage, with packed int4/uint4 or
complex<float> elements where the kernel has them (dataset_spec/ops/conv_layouts.py).

A family (``conv_catalog.conv_family_key``) is built at the shape set's ``conv2d`` /
``conv3d`` sizes, rounded so its kernels' alignments, channel iterators and group modes
accept them; a kernel that still cannot run a size (CUTLASS's ``can_implement``, or a
unity-stride dgrad at stride > 1) gets a ``not_applicable`` row saying why.
"""
from __future__ import annotations

import math
import shlex
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional

from dataset_spec.model import Arg, Buffer, Distribution, KernelRecord, Launch, Problem, SpecError
from dataset_spec.ops import get_op
from dataset_spec.ops.conv_layouts import interleave_of
from dataset_spec.ops.conv_nhwc import OPERANDS, conv_buffers, conv_shapes
from dataset_spec.ops.unsigned_sums import (is_signed_saturating, is_unsigned_saturating, mid_range_alpha,
                                             sparsify, spread_alpha)
from ptx_tools import split_module
from builders.base import Builder, BuildOptions, WorkItem
from builders.cutlass import conv_catalog
from builders.cutlass.conv_catalog import conv_dtype
from builders.cutlass.compile import (BASE_FLAGS, CutlassCompileError, build_packer, compile_to_ptx, cutlass_version,
                                      nvcc_version)
from builders.cutlass.conv_pack import ConvNotApplicable, ConvSize, pack_conv_launch
from builders.cutlass.conv_source import conv_kernel_source, conv_packer_source
from builders.cutlass.packer import PackError
from builders.cutlass.problem import ROUNDING_MATH, epilogue_misfit, integer_inputs, math_input
from builders.shapes import ShapeSet, load_shape_set

LICENCE = "BSD-3-Clause (CUTLASS)"
DEFAULT_BATCH = 4
# The default shape set's sizes: a 3x3 conv over 14x14 with 64 channels (GEMM M = 392,
# N = 64, K = 576 for fprop), and a 3x3x3 one over 4x8x8 with 32.
DEFAULT_CONV2D = (2, 14, 14, 64, 64, 3, 3, 1, 1)
DEFAULT_CONV3D = (1, 4, 8, 8, 32, 32, 3, 3, 3, 1, 1)
# Families built when the user names none: f16 fprop, dgrad and wgrad (2.x: f16
# accumulation; 3.x: every f16 family, as SM90 has no f16-accumulating wgrad).
DEFAULT_CONV_FAMILIES = ("cutlass_tensorop_h16816fprop_*", "cutlass_tensorop_h16816dgrad_*",
                         "cutlass_tensorop_h16816wgrad_*", "cutlass3x_sm90_tensorop_fprop_f16n*",
                         "cutlass3x_sm90_tensorop_dgrad_f16n*", "cutlass3x_sm90_tensorop_wgrad_f16n*")
CONV_ARCHS = {80: "sm_80", 90: "sm_90a"}
# A SingleGroup kernel needs K / groups to be a multiple of its tile N; a MultipleGroup one
# needs tile N to be a multiple of K / groups. Built-in sizes use this many groups at least.
MIN_GROUPS = 2


@dataclass(frozen=True)
class ConvProblemSize:
    """One conv problem: batch, spatial extents, channels, filter taps, stride, padding, groups."""
    n: int
    spatial: tuple
    c: int
    k: int
    taps: tuple
    stride: int
    pad: int
    groups: int = 1

    @property
    def dims(self) -> int:
        return len(self.spatial)

    def label(self) -> str:
        sp = "x".join(str(v) for v in self.spatial)
        tp = "x".join(str(v) for v in self.taps)
        return f"N{self.n}_{sp}_C{self.c}K{self.k}_f{tp}_s{self.stride}p{self.pad}g{self.groups}"

    def shapes(self) -> dict:
        rank = self.dims
        return conv_shapes(self.n, self.spatial, self.c, self.k, self.taps, (self.stride,) * rank,
                           (self.pad,) * rank, (1,) * rank, self.groups)

    def packer_size(self) -> ConvSize:
        out = self.shapes()["output"][1:-1]
        spatial, taps, out3 = self.spatial, self.taps, out
        if self.dims == 2:
            spatial, taps, out3 = (1, *spatial), (1, *taps), (1, *out)
        return ConvSize(self.n, *spatial, self.c, self.k, *taps, *out3, pad=(self.pad,) * 3,
                        stride=(self.stride,) * 3, dilation=(1, 1, 1), groups=self.groups)


def parse_size(values, dims: int) -> ConvProblemSize:
    v = [int(x) for x in values]
    if dims == 2:
        n, h, w, c, k, r, s, stride, pad = v
        return ConvProblemSize(n, (h, w), c, k, (r, s), stride, pad)
    n, d, h, w, c, k, t, r, s, stride, pad = v
    return ConvProblemSize(n, (d, h, w), c, k, (t, r, s), stride, pad)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def fit_to_family(specs: list, size: ConvProblemSize) -> ConvProblemSize:
    """``size`` rounded so every kernel of the family can run it: channel counts to the
    operands' alignments; C to the alignment for fixed/few-channel iterators; grouped
    kernels get groups whose K per group fits every member's tile N."""
    knobs = [s.knobs for s in specs]
    # interleaved layouts hold channels in blocks of I: C and K multiples of I
    align = math.lcm(*(int(k[f"alignment_{x}"]) for k in knobs for x in "abc"),
                     *(interleave_of(k["layout"]) or 1 for k in knobs))
    iterator = knobs[0].get("iterator_algorithm", "")
    group_mode = knobs[0].get("group_mode", "NoneGroup")
    c, k = _round_up(size.c, align), _round_up(size.k, align)
    if iterator in ("FixedChannels", "FewChannels"):
        c = int(knobs[0]["alignment_a"])
    groups = 1
    tile_n = [int(kn["threadblock_tile"][1]) for kn in knobs]
    if group_mode == "SingleGroup":
        per_group = math.lcm(align, *tile_n)
        groups = MIN_GROUPS
        k = groups * max(1, -(-size.k // (groups * per_group))) * per_group
    elif group_mode == "MultipleGroup":
        per_group = math.gcd(*tile_n)
        if per_group % align:
            per_group = align
        groups = max(MIN_GROUPS, size.k // per_group)
        k = groups * per_group
    if groups > 1:
        c = groups * _round_up(max(1, -(-c // groups)), align)
    return ConvProblemSize(size.n, size.spatial, c, k, size.taps, size.stride, size.pad, groups)


def function_id(spec, alpha: float, beta: float) -> str:
    """The group id without its size: conv kind and rank, types, math, epilogue (groups
    are part of the size label)."""
    k = spec.knobs
    types = [k["element_a"], k["element_b"], k["element_accumulator"]]
    if beta != 0:
        types.append(f"c{k['element_c']}")
    types.append(k["element_d"])
    name = "_".join(types)
    rounding = ROUNDING_MATH.get(k.get("math_operation", ""))
    if rounding:
        name += f"_{rounding}"
    if k["element_a"] == "f32" and k.get("math_element_a") == "tf32":
        name += "_tf32math"
    if interleave_of(k["layout"]):
        name += f"_{k['layout']}"
    return f"cutlass/conv{spec.dims}d_{spec.kind}/{name}/a{alpha:g}b{beta:g}"


def unsigned_saturating(spec) -> bool:
    """A saturating unsigned output of unsigned operands (u4 x u4 -> u4, u8 x u8 -> u8):
    every product is >= 0, so its problem draws sparse operands (unsigned_sums.py)."""
    k = spec.knobs
    return is_unsigned_saturating(conv_dtype(k["element_a"]), conv_dtype(k["element_b"]), conv_dtype(k["element_d"]))


def signed_saturating(spec) -> bool:
    """A saturating int8/int4 output of integer products through a float epilogue: its
    full-range sums would saturate almost every output (unsigned_sums.spread_alpha)."""
    k = spec.knobs
    if k.get("element_epilogue") in ("s32", "u32") or k["element_a"].startswith("c"):
        return False
    return is_signed_saturating(conv_dtype(k["element_a"]), conv_dtype(k["element_b"]), conv_dtype(k["element_d"]))


def epilogue_alpha(spec, size: ConvProblemSize, alpha: float, alpha_given: bool) -> float:
    """The alpha a row uses: the user's, or 1; but an ``unsigned_saturating`` conv's sparse
    operands still sum to about SPARSE_TERMS products of mean E[x] E[w] (tens to thousands),
    past the output's top, and a ``signed_saturating`` one's full-range sums spread far past
    it. Without --alpha those rows get unsigned_sums.mid_range_alpha or spread_alpha."""
    if alpha_given or not (unsigned_saturating(spec) or signed_saturating(spec)):
        return alpha
    problem = make_conv_problem(spec, size, 1.0, 0.0)
    operands, out = OPERANDS[spec.kind]
    op = get_op(problem.op)
    if unsigned_saturating(spec):
        return mid_range_alpha(problem, operands, out, op.reduction_length(problem))
    ranges = [op.integer_range(problem, problem.buffer(name)) for name in operands]
    return spread_alpha(ranges, op.reduction_length(problem), problem.buffer(out).dtype)


def group_id(spec, size: ConvProblemSize, alpha: float, beta: float) -> str:
    return f"{function_id(spec, alpha, beta)}/{size.label()}"


def make_conv_problem(spec, size: ConvProblemSize, alpha: float, beta: float) -> Problem:
    k = spec.knobs
    use_c = beta != 0 and k["element_c"] != "void"
    layout = k["layout"] if interleave_of(k["layout"]) else "nhwc"
    is_complex = k["element_a"].startswith("c")
    buffers = conv_buffers(spec.kind, size.shapes(), conv_dtype(k["element_a"]), conv_dtype(k["element_b"]),
                           conv_dtype(k["element_d"]), conv_dtype(k["element_c"]) if use_c else "",
                           integer_inputs(k["element_a"], k["element_d"]),
                           integer_inputs(k["element_b"], k["element_d"]), layout=layout, complex_parts=is_complex)
    rank = size.dims
    params = {"conv_kind": spec.kind, "stride": [size.stride] * rank, "padding": [size.pad] * rank,
              "dilation": [1] * rank, "groups": size.groups, "alpha": alpha, "beta": beta,
              "accumulator": conv_dtype(k["element_accumulator"]), "math_input": math_input(spec),
              **({"layout": layout} if layout != "nhwc" else {}),
              **({"complex": {"planar": False}} if is_complex else {}),
              "shape": {"N": size.n, "C": size.c, "K": size.k, "stride": size.stride, "pad": size.pad,
                        "groups": size.groups,
                        **dict(zip(("D", "H", "W")[-rank:], size.spatial)),
                        **dict(zip(("T", "R", "S")[-rank:], size.taps))}}
    problem = Problem(problem_id=group_id(spec, size, alpha, beta), op=f"conv{rank}d_{spec.kind}", buffers=buffers,
                      params=params)
    if unsigned_saturating(spec):
        sparsify(problem, OPERANDS[spec.kind][0], get_op(problem.op).reduction_length(problem))
    return problem


def size_misfit(spec, size: ConvProblemSize) -> str:
    """What CUTLASS's can_implement does not check but the kernel needs, or ''. CUTLASS's
    dgrad problem shape splits a stride-S dgrad into S^rank phase sub-problems along L
    (conv/detail.hpp), but the SM90 mainloop (sm90_implicit_gemm_gmma_ss_warpspecialized.hpp)
    never reads the L coordinate: every phase loads the same tiles, so an SM90 3.x dgrad is
    right only at stride 1 (SM100 has a strided-dgrad mode and requires stride 1 of the others)."""
    if spec.kind == "dgrad" and spec.knobs.get("stride_support") == "Unity" and size.stride != 1:
        return f"{spec.name}: a unity-stride dgrad kernel cannot run stride {size.stride}"
    if spec.kind == "dgrad" and spec.generation == 3 and size.stride != 1:
        return (f"{spec.name}: an SM90 3.x dgrad kernel runs unit stride only, not stride {size.stride} "
                f"(its mainloop ignores the stride-phase coordinate L)")
    if spec.generation == 3 and size.groups != 1:
        return f"{spec.name}: 3.x convolutions take groups = 1 only, not {size.groups}"
    return ""


@dataclass(frozen=True)
class CutlassConvOptions:
    """Which conv kernels (``family`` globs, ``per_family``), their epilogue (``alpha``,
    ``beta``) and the sizes (``shapes``: its conv2d / conv3d lists)."""
    family: Optional[str] = field(default=None, metadata={
        "flag": "--family", "help": "conv kernel name glob (like the profiler's --kernels)"})
    per_family: Optional[int] = field(default=None, metadata={
        "flag": "--per-family", "min": 1,
        "help": "at most N kernels of each conv family (docs/cutlass.md), drawn with --sample-seed"})
    alpha: Optional[float] = field(default=None, metadata={"flag": "--alpha", "help": "epilogue alpha (default 1)"})
    beta: Optional[float] = field(default=None, metadata={
        "flag": "--beta", "help": "epilogue beta (default 0); nonzero gives the problem a C operand"})
    shapes: Optional[str] = None
    batch_size: int = DEFAULT_BATCH


def conv_shape_set(shapes) -> ShapeSet:
    shape_set = load_shape_set(shapes)
    if shape_set.is_default:
        return ShapeSet(name="default", conv2d=(DEFAULT_CONV2D,), conv3d=(DEFAULT_CONV3D,), is_default=True)
    if not (shape_set.conv2d or shape_set.conv3d):
        raise SpecError(f"shape set {shape_set.name!r} names no conv2d or conv3d sizes; cutlass-conv builds convolutions")
    return shape_set


class CutlassConvBuilder(Builder):
    """CUTLASS implicit-GEMM convolutions (2.x SM80, 3.x SM90a) -> rows with PTX, Params blob
    launches and a conv problem."""
    name = "cutlass-conv"
    Options = CutlassConvOptions
    pip_extra = "cutlass"
    takes_shapes = True
    credit = "CUTLASS (NVIDIA, BSD-3-Clause): implicit-GEMM convolutions from the profiler's generator"
    # One SM80 conv kernel's PTX took 2.9 s of nvcc and a batch's packer 6.7 s on an idle
    # core: about 5 s per kernel in batches of 4.
    cpu_seconds_per_row = 5.0
    task_memory_bytes = 2 << 30

    def __init__(self, options: BuildOptions | None = None):
        super().__init__(options)
        s = self.settings
        # the settings arrive typed (builders/options.py); None alpha/beta: not given
        family = s.family
        self.families = (tuple(f.strip() for f in family.split(",") if f.strip()) if isinstance(family, str)
                         else tuple(family) if family else DEFAULT_CONV_FAMILIES)
        self.shape_set = conv_shape_set(s.shapes)
        self.alpha = 1.0 if s.alpha is None else s.alpha
        self.alpha_given = s.alpha is not None
        self.beta = 0.0 if s.beta is None else s.beta
        self.per_family = s.per_family
        self.batch_size = s.batch_size

    def kernels(self) -> list:
        archs = tuple(a for a in self.options.archs if a in CONV_ARCHS.values())
        if not archs:
            raise SpecError(f"cutlass-conv builds the SM80 2.x and SM90a 3.x convolutions, not "
                            f"{', '.join(self.options.archs)}; pass --arch sm_80 and/or --arch sm_90a")
        specs = conv_catalog.enumerate_conv_kernels(self.families, archs)
        if not specs:
            known = sum(len(conv_catalog.load_conv_operations(sm)) for sm, a in CONV_ARCHS.items() if a in archs)
            raise SpecError(f"--family {' '.join(repr(f) for f in self.families)} matches none of the "
                            f"{known} built CUTLASS conv kernels for {', '.join(archs)} "
                            f"(docs/cutlass.md, 'Convolutions', lists the families)")
        specs = conv_catalog.per_conv_family(specs, self.per_family, self.options.sample_seed)
        limit = self.options.limit
        return conv_catalog.sample_kernels(specs, limit, self.options.sample_seed) if limit else specs

    def sizes_for(self, specs: list) -> list:
        dims = specs[0].dims
        raw = [parse_size(v, dims) for v in self.shape_set.sizes_for(f"conv{dims}d")]
        if not self.shape_set.exact:
            raw = [fit_to_family(specs, size) for size in raw]
        return list(dict.fromkeys(raw))

    def work_items(self) -> list[WorkItem]:
        families = defaultdict(list)
        for spec in self.kernels():
            families[conv_catalog.conv_family_key(spec)].append(spec)
        items = []
        for key in sorted(families):
            specs = families[key]
            sizes = self.sizes_for(specs)
            if not sizes:
                continue
            gids = [group_id(specs[0], size, epilogue_alpha(specs[0], size, self.alpha, self.alpha_given), self.beta)
                    for size in sizes]
            for start in range(0, len(specs), self.batch_size):
                chunk = specs[start:start + self.batch_size]
                items.append(WorkItem(
                    key=f"{key}/{'+'.join(s.label() for s in sizes)}/{start // self.batch_size}",
                    group_id=gids[0], label=f"{len(chunk)} CUTLASS conv kernel(s) x {len(sizes)} size(s) of {key}",
                    payload={"names": [s.name for s in chunk], "sizes": [s.__dict__ for s in sizes],
                             "exact": self.shape_set.exact, "shape_set": self.shape_set.name,
                             "alpha": self.alpha, "alpha_given": self.alpha_given, "beta": self.beta,
                             "families": list(self.families),
                             "family": key, "sm": specs[0].sm, "per_family": self.per_family,
                             "limit": self.options.limit,
                             "sample_seed": self.options.sample_seed},
                    rows=len(chunk) * len(sizes)))
        return items

    def build(self, item: WorkItem) -> list[KernelRecord]:
        p = item.payload
        sm = int(p.get("sm", 80))
        ops = conv_catalog.load_conv_operations(sm)
        specs = [conv_catalog.describe_conv(ops[name]) for name in p["names"]]
        ptx_by_name, failures = self._compile(specs)
        packer = None
        built = [s for s in specs if s.name in ptx_by_name]
        if built:
            try:
                packer = build_packer(conv_packer_source(built), CONV_ARCHS[sm])
            except CutlassCompileError as exc:
                for s in built:
                    failures[s.name] = f"packer build failed: {exc}\n{exc.log}"
        sizes = [ConvProblemSize(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
                 for d in p["sizes"]]
        return [self._row(spec, item, size, ptx_by_name, failures, packer) for size in sizes for spec in specs]

    def _compile(self, specs):
        try:
            return self._compile_batch(specs), {}
        except CutlassCompileError as exc:
            if len(specs) == 1:
                return {}, {specs[0].name: f"{exc}\n{exc.log}"}
        found, failures = {}, {}
        for spec in specs:
            try:
                found.update(self._compile_batch([spec]))
            except CutlassCompileError as exc:
                failures[spec.name] = f"{exc}\n{exc.log}"
        return found, failures

    def _compile_batch(self, specs):
        arch = CONV_ARCHS[specs[0].sm]
        modules = split_module(compile_to_ptx(conv_kernel_source(specs), arch).ptx)
        found = {}
        for spec in specs:
            token = f"{len(spec.name)}{spec.name}E"
            entries = [e for e in modules if token in e]
            if len(entries) != 1:
                raise CutlassCompileError(f"expected one entry for {spec.name}, found {entries}")
            ptx = modules[entries[0]]
            if spec.generation == 3 and "wgmma" not in ptx:
                raise CutlassCompileError(f"{spec.name}: no wgmma in {arch} PTX (kernel body compiled out)")
            found[spec.name] = (entries[0], ptx)
        return found

    def _row(self, spec, item, size, ptx_by_name, failures, packer) -> KernelRecord:
        p = item.payload
        alpha = epilogue_alpha(spec, size, p["alpha"], p.get("alpha_given", True))
        if spec.name in failures:
            return self._record(spec, item, size, alpha, "", [], [], "build_failed", failures[spec.name])
        entry, ptx = ptx_by_name[spec.name]
        misfit = size_misfit(spec, size) or epilogue_misfit(spec, alpha, p["beta"])
        if misfit:
            return self._record(spec, item, size, alpha, ptx, [], [], "not_applicable", misfit)
        (first, second), out = OPERANDS[spec.kind]
        use_c = p["beta"] != 0
        try:
            packed = pack_conv_launch(packer, spec.name, size.packer_size(), alpha, p["beta"], use_c,
                                      {"A": first, "B": second, "C": "C", "D": out},
                                      alias_c_to_d=spec.generation == 3)
        except ConvNotApplicable as exc:
            return self._record(spec, item, size, alpha, ptx, [], [], "not_applicable", str(exc))
        except (PackError, ValueError) as exc:
            return self._record(spec, item, size, alpha, ptx, [], [], "build_failed", str(exc))
        blob = bytearray(packed.blob)
        for patch in packed.patches:
            blob[patch.offset:patch.offset + patch.size] = bytes(patch.size)
        scratch = []
        if packed.workspace_bytes:
            scratch.append(Buffer("workspace", "uint8", (packed.workspace_bytes,), "scratch",
                                  init=Distribution("zeros")))
        launch = Launch(entry=entry, grid=packed.grid, block=packed.block, cluster=packed.cluster,
                        dynamic_smem=packed.dynamic_smem, args=[Arg("blob", blob=bytes(blob), patches=packed.patches)])
        return self._record(spec, item, size, alpha, ptx, [launch], scratch, "built", "")

    def _record(self, spec, item, size, alpha, ptx, launches, scratch, status, message) -> KernelRecord:
        p = item.payload
        variant = dict(spec.knobs, generation=spec.generation, fitted_size=size.label())
        arch = CONV_ARCHS[spec.sm]
        provenance = {"generator": f"cutlass_library (GenerateSM{spec.sm}, conv2d/conv3d)",
                      "package": f"nvidia-cutlass=={cutlass_version()}", "cutlass_version": cutlass_version(),
                      "licence": LICENCE, "families": p["families"], "family": p["family"],
                      "per_family": p["per_family"], "limit": p["limit"], "sample_seed": p["sample_seed"],
                      "batch": p["names"], "command": " ".join(shlex.quote(a) for a in sys.argv)}
        if spec.generation == 3 and p["beta"] == 0:
            provenance["c_aliases_d"] = True  # the TMA epilogue encodes C's descriptor; C is never read
        if p.get("shape_set", "default") != "default":
            provenance["shape_set"] = p["shape_set"]
        return KernelRecord(
            group_id=group_id(spec, size, alpha, p["beta"]), source="cutlass", variant=variant, name=spec.name,
            arch=arch, ptx=ptx, launches=launches, problem=make_conv_problem(spec, size, alpha, p["beta"]),
            scratch=scratch,
            toolchain={"nvcc": nvcc_version(), "nvcc_flags": BASE_FLAGS + [f"-arch={arch}", "-ptx"],
                       "cutlass": cutlass_version()},
            provenance=provenance, status=status, status_message=message[-8000:] if message else "")
