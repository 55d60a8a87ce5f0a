"""Tests of ptx_tools on real PTX from Triton and from the pinned nvcc (CPU only)."""
from __future__ import annotations

import re

import pytest

import ptx_tools
from ptx_tools import (AssemblyError, CompileError, PtxError, ToolchainError, assemble,
                       compile_cuda, feature_tags, find_tool, normalize_ptx, parse_ptx,
                       pin_ptx_version, ptx_hash, split_module, toolchain_versions)

try:
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError:  # the Triton tests skip; the nvcc ones still run
    triton = None

NUM_WARPS = 4

if triton is not None:
    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    @triton.jit
    def matmul_kernel(a, b, c, K, sam, sak, sbk, sbn, scm, scn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * sam + (k + rk)[None, :] * sak)
            y = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))

ADD_SIGNATURE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}
MATMUL_SIGNATURE = {"a": "*fp16", "b": "*fp16", "c": "*fp16", "K": "i32",
                    "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32", "scm": "i32",
                    "scn": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}


def _triton_ptx(fn, signature, constexprs, capability):
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    compiled = triton.compile(source, target=GPUTarget("cuda", capability, 32),
                              options={"num_warps": NUM_WARPS, "ptx_version": 87})
    return compiled.asm["ptx"]


@pytest.fixture(scope="module")
def triton_ptx():
    if triton is None:
        pytest.skip("triton is not installed")
    return {
        "add_sm90": _triton_ptx(add_kernel, ADD_SIGNATURE, {"BLOCK": 1024}, 90),
        "matmul_sm80": _triton_ptx(matmul_kernel, MATMUL_SIGNATURE,
                                   {"BM": 64, "BN": 64, "BK": 32}, 80),
        # 128x128x64 fp16 with 4 warps (one warpgroup) lowers tl.dot to wgmma on sm_90a.
        "matmul_sm90": _triton_ptx(matmul_kernel, MATMUL_SIGNATURE,
                                   {"BM": 128, "BN": 128, "BK": 64}, 90),
    }


CUDA_TEMPLATE = r"""
#include <cstdio>
namespace { __device__ int hits[4]; }
template <typename T, int N>
__global__ void __launch_bounds__(128, 2) axpy(T* y, const T* x, T a, int n) {
  __shared__ T tile[N];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) tile[threadIdx.x % N] = x[i];
  __syncthreads();
  if (i < n) y[i] = a * tile[threadIdx.x % N] + y[i];
  if (i == 0) { printf("n=%d\n", n); atomicAdd(&hits[0], 1); }
}
"""
INSTANTIATIONS = {
    "_Z4axpyIfLi64EEvPT_PKS0_S0_i":
        "template __global__ void axpy<float, 64>(float*, const float*, float, int);\n",
    "_Z4axpyIdLi32EEvPT_PKS0_S0_i":
        "template __global__ void axpy<double, 32>(double*, const double*, double, int);\n",
}


@pytest.fixture(scope="module")
def nvcc_ptx():
    both = "".join(INSTANTIATIONS.values())
    return {
        "batched": compile_cuda(CUDA_TEMPLATE + both, "sm_80", flags=("-lineinfo",)),
        "alone": {name: compile_cuda(CUDA_TEMPLATE + inst, "sm_80")
                  for name, inst in INSTANTIATIONS.items()},
        "sm90a": compile_cuda(CUDA_TEMPLATE + both, "sm_90a"),
    }


# -- parsing ------------------------------------------------------------------------------

def test_parse_triton_entry(triton_ptx):
    module = parse_ptx(triton_ptx["add_sm90"])
    assert module.version == "8.7"
    assert module.target == ["sm_90a"]
    assert module.address_size == 64
    (entry,) = module.entries
    assert entry.name == "add_kernel" and entry.is_entry and entry.visible
    # Kernel args without constexprs, plus Triton's two trailing scratch pointers.
    assert len(entry.params) == 4 + 2
    assert [p.type for p in entry.params] == ["u64", "u64", "u64", "u32", "u64", "u64"]
    assert entry.params[0].is_ptr and entry.params[0].ptr_space == "global"
    assert entry.params[3].size == 4 and not entry.params[3].is_ptr
    assert entry.reqntid == (32 * NUM_WARPS,)
    assert entry.opcode_counts and entry.base_opcode_counts["ld"] >= 1


def test_parse_triton_matmul(triton_ptx):
    module = parse_ptx(triton_ptx["matmul_sm80"])
    (entry,) = module.entries
    assert len(entry.params) == 10 + 2
    assert entry.reqntid == (128,)
    assert any(v.name == "global_smem" and v.state_space == "shared" and v.extern
               and v.size is None for v in module.variables)
    mma = [op for op in entry.opcode_counts if op.startswith("mma.sync")]
    assert mma and entry.base_opcode_counts["mma"] == sum(entry.opcode_counts[op] for op in mma)


def test_parse_nvcc_template(nvcc_ptx):
    module = parse_ptx(nvcc_ptx["batched"])
    assert module.target == ["sm_80"]
    assert [e.name for e in module.entries] == list(INSTANTIATIONS)
    for entry in module.entries:
        assert entry.maxntid == (128, 1, 1) and entry.minnctapersm == 2
        assert [p.type for p in entry.params][:2] == ["u64", "u64"]
    assert module.entries[0].params[2].type == "f32"
    assert module.entries[1].params[2].type == "f64"
    vprintf = module.function("vprintf")
    assert vprintf.extern and vprintf.body is None and len(vprintf.return_params) == 1
    assert any(v.name.startswith("$str") and v.size == 6 for v in module.variables)


def test_parse_params_and_directives():
    ptx = """
    .version 8.7
    .target sm_90a
    .address_size 64
    .extern .shared .align 16 .b8 smem[];
    .global .align 4 .u32 table[2][3] = {1, 2, 3, 4, 5, 6};  /* a comment { */
    .weak .func (.param .b32 ret) helper(.param .b32 x) { mov.b32 ret, x; ret; }
    .visible .entry k(
        .param .align 64 .b8 params[128],   // by-value struct
        .param .u64 .ptr .global .align 16 out,
        .param .f32 alpha
    )
    .reqntid 128, 1, 1
    .reqnctapercluster 2, 1, 1
    .explicitcluster
    .maxnreg 168
    {
        .pragma "nounroll";
        mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%f1,%f2,%f3,%f4};
        @%p1 bra $L__BB0_1;
    $L__BB0_1:
        ret;
    }
    """
    module = parse_ptx(ptx)
    (entry,) = module.entries
    blob, out, alpha = entry.params
    assert (blob.type, blob.size, blob.align, blob.array_len) == ("b8", 128, 64, 128)
    assert (out.is_ptr, out.ptr_space, out.ptr_align, out.size) == (True, "global", 16, 8)
    assert (alpha.type, alpha.size) == ("f32", 4)
    assert entry.param_bytes == 128 + 8 + 4
    assert entry.reqntid == (128, 1, 1) and entry.reqnctapercluster == (2, 1, 1)
    assert entry.explicitcluster and entry.maxnreg == 168
    assert entry.opcode_counts["mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"] == 1
    assert entry.base_opcode_counts == {"mma": 1, "bra": 1, "ret": 1}
    (helper,) = module.funcs
    assert helper.weak and not helper.is_entry and helper.return_params[0].name == "ret"
    table = next(v for v in module.variables if v.name == "table")
    assert (table.state_space, table.size, table.dims, table.initialized) == ("global", 24, (2, 3), True)
    assert feature_tags(ptx) == ["bf16", "cluster", "mma.sync"]


MALFORMED = {
    "no version": (".target sm_80\n.address_size 64\n", 1),
    "unbalanced braces": (".version 8.7\n.target sm_80\n.address_size 64\n"
                          ".visible .entry k()\n{\n  ret;\n", 5),
    "stray brace": (".version 8.7\n.target sm_80\n.address_size 64\n}\n", 4),
    "broken params": (".version 8.7\n.target sm_80\n.address_size 64\n.visible .entry k(\n"
                      "  .param .u64 a\n  .param .u32 b\n)\n{\n ret;\n}\n", 6),
    "param without type": (".version 8.7\n.target sm_80\n.address_size 64\n"
                           ".visible .entry k(\n .param a\n)\n{\n ret;\n}\n", 5),
    "unknown directive": (".version 8.7\n.target sm_80\n.address_size 64\n.bogus 3\n", 4),
    "unclosed comment": (".version 8.7\n.target sm_80\n/* never closed\n", 3),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_ptx_names_the_line(case):
    text, line = MALFORMED[case]
    with pytest.raises(PtxError) as info:
        parse_ptx(text)
    assert info.value.line == line
    assert str(info.value).startswith(f"line {line}: ")
    assert isinstance(info.value, ValueError)


def test_truncated_real_ptx(triton_ptx):
    text = triton_ptx["add_sm90"]
    cut = text[: text.index("ret;")]
    with pytest.raises(PtxError, match="never closed") as info:
        parse_ptx(cut)
    brace_line = text[: text.index("\n{")].count("\n") + 2
    assert info.value.line == brace_line


# -- normalisation ------------------------------------------------------------------------

def test_normalize_drops_debug_info(triton_ptx):
    raw = triton_ptx["add_sm90"]
    assert ".loc" in raw and ".file" in raw and ".section" in raw
    norm = normalize_ptx(raw)
    for gone in (".loc", ".file", ".section", "//", "/tmp", "$L__func_begin", "$L__tmp"):
        assert gone not in norm
    assert normalize_ptx(norm) == norm
    assert ptx_hash(raw) == ptx_hash(norm) and re.fullmatch(r"[0-9a-f]{64}", ptx_hash(raw))
    assert parse_ptx(norm).entries[0].params == parse_ptx(raw).entries[0].params


def test_normalize_renumbers_labels_per_function():
    template = """.version 8.7
.target sm_80
.address_size 64
.visible .entry {name}(.param .u32 n)
{{
    .reg .pred %p<2>; .reg .b32 %r<2>;
    .local .align 8 .b8 __local_depot{idx}[8];
    ld.param.u32 %r1, [n];
    setp.eq.s32 %p1, %r1, 0;
    @%p1 bra $L__BB{idx}_7;
    $L__BB{idx}_3:
    add.s32 %r1, %r1, -1;
    setp.ne.s32 %p1, %r1, 0;
    @%p1 bra $L__BB{idx}_3;
$L__BB{idx}_7:  // exit
    ret;
}}
"""
    first = normalize_ptx(template.format(name="k", idx=0))
    second = normalize_ptx(template.format(name="k", idx=1).replace("\n", "\n\n").replace("    ", "\t"))
    assert first == second
    assert "$L__BB0:" in first and "$L__BB1:" in first and "__local_depot0" in first


def test_batched_and_alone_hash_equal(nvcc_ptx):
    batched = split_module(nvcc_ptx["batched"])
    assert list(batched) == list(INSTANTIATIONS)
    for name, alone_ptx in nvcc_ptx["alone"].items():
        (alone_name, alone_split), = split_module(alone_ptx).items()
        assert alone_name == name
        assert ptx_hash(alone_split) == ptx_hash(batched[name])
        norm = normalize_ptx(batched[name])
        assert "_INTERNAL_0" in norm and "$str$0" in norm
        assert normalize_ptx(norm) == norm  # finalize hashes normalised text as it is
        assert len(parse_ptx(batched[name]).entries) == 1
    first, second = batched.values()
    assert ptx_hash(first) != ptx_hash(second)


def test_split_and_normalized_ptx_assemble(nvcc_ptx, triton_ptx):
    for text, arch in [(nvcc_ptx["batched"], "sm_80"), (nvcc_ptx["sm90a"], "sm_90a"),
                       (triton_ptx["matmul_sm80"], "sm_80"), (triton_ptx["add_sm90"], "sm_90a")]:
        for name, part in split_module(text).items():
            result = assemble(normalize_ptx(part), arch)
            assert [r.entry for r in result.resources] == [name]
            assert result.resources[0].registers > 0 and result.cubin[:4] == b"\x7fELF"


# -- assembly and toolchain ---------------------------------------------------------------

def test_assemble_resources_and_sass(nvcc_ptx):
    result = assemble(nvcc_ptx["sm90a"], "sm_90a", sass=True)
    names = [r.entry for r in result.resources]
    assert names == list(INSTANTIATIONS)
    float_kernel, double_kernel = result.resources
    assert float_kernel.registers > 0 and float_kernel.shared_static == 64 * 4
    assert double_kernel.shared_static == 32 * 8
    assert float_kernel.stack > 0  # printf's argument buffer
    assert "Compiling entry function" in result.log
    assert re.search(r"\bLDG\b|\bLDG\.", result.sass) and names[0] in result.sass


def test_assemble_error_and_pin_version(triton_ptx):
    bad = pin_ptx_version(triton_ptx["add_sm90"], "8.7").replace("add.f32", "add.f99", 1)
    with pytest.raises(AssemblyError) as info:
        assemble(bad, "sm_90a")
    assert "ptxas" in str(info.value) and "error" in info.value.log
    pinned = pin_ptx_version(triton_ptx["add_sm90"], "8.4")
    assert parse_ptx(pinned).version == "8.4"
    assert assemble(pinned, "sm_90a").resources[0].registers > 0
    with pytest.raises(PtxError):
        pin_ptx_version(".target sm_80\n")


def test_compile_error_carries_log():
    with pytest.raises(CompileError) as info:
        compile_cuda("__global__ void k() { undefined_name(); }", "sm_80")
    assert "undefined_name" in info.value.log and "undefined_name" in str(info.value)


def test_toolchain_versions_and_tools():
    versions = toolchain_versions()
    assert versions["nvcc"].startswith("13.0") and versions["ptxas"] == versions["nvcc"]
    assert find_tool("ptxas").name == "ptxas"


def test_missing_toolchain(tmp_path, monkeypatch):
    with pytest.raises(ToolchainError, match="pip install"):
        find_tool("ptxas", cuda_home=tmp_path)
    with pytest.raises(ToolchainError, match="pip install"):
        assemble(".version 8.7\n.target sm_80\n.address_size 64\n", "sm_80", cuda_home=tmp_path)
    monkeypatch.setenv("PTXDS_CUDA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(ToolchainError, match="pip install"):
        compile_cuda("__global__ void k() {}", "sm_80")


# -- features -----------------------------------------------------------------------------

def test_feature_tags(triton_ptx, nvcc_ptx):
    sm80 = feature_tags(triton_ptx["matmul_sm80"])
    assert {"mma.sync", "fp16", "ldmatrix", "bar.sync"} <= set(sm80) and "wgmma" not in sm80
    sm90 = feature_tags(triton_ptx["matmul_sm90"])
    assert {"wgmma", "fp16", "fence.proxy.async"} <= set(sm90) and "mma.sync" not in sm90
    assert sm90 == sorted(set(sm90))
    assert {"atom", "bar.sync", "fp64"} <= set(feature_tags(nvcc_ptx["batched"]))
    hopper = """
        cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];
        mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], %r5;
        cp.async.cg.shared.global [%r1], [%rd2], 16;
        elect.sync %r6|%p2, -1;
        setmaxnreg.inc.sync.aligned.u32 240;
        mov.u32 %r7, %cluster_ctarank;
        tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r8], 32;
        cvt.rn.satfinite.e4m3x2.f32 %rs1, %f1, %f2;
        redux.sync.add.s32 %r9, %r10, -1;
        shfl.sync.bfly.b32 %r11, %r12, 1, 31, -1;
        red.global.add.f32 [%rd3], %f3;
        stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r13], {%r1, %r2, %r3, %r4};
        tensormap.replace.tile.global_address.global.b1024.b64 [%rd4], %rd5;
        mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%f1,%f2,%f3,%f4};
    """
    assert feature_tags(hopper) == sorted([
        "cluster", "cp.async", "cp.async.bulk.tensor", "elect.sync", "fp8",
        "mbarrier", "mma.sync", "red", "redux.sync", "setmaxnreg", "shfl.sync", "stmatrix",
        "tcgen05", "tensormap", "tf32"])


def test_public_names():
    for name in ["parse_ptx", "normalize_ptx", "ptx_hash", "split_module", "feature_tags",
                 "assemble", "pin_ptx_version", "compile_cuda", "find_tool",
                 "toolchain_versions", "PtxError", "ToolchainError", "AssemblyError",
                 "CompileError", "PtxModule", "PtxFunction", "PtxParam", "Assembly"]:
        assert hasattr(ptx_tools, name), name
