"""CPU tests of the CUTLASS builder: enumeration, knobs, compiled rows, packed launches.

Compiles a handful of kernels (cached under ~/.cache/ptxds/cutlass, or
$PTXDS_CUTLASS_CACHE); skipped when nvidia-cutlass or the CUDA compiler wheels are absent.
"""
from __future__ import annotations

import re
import subprocess

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions  # noqa: E402
from builders.cutlass import catalog  # noqa: E402
from builders.cutlass import CutlassBuilder, entry_params  # noqa: E402
from ptx_tools import find_tool  # noqa: E402
from helpers import needs_nvcc, nvcc_available  # noqa: E402

SEED_FAMILY = "cutlass_tensorop_bf16_s16816gemm_bf16_[0-9]*"


def test_seed_family_enumeration():
    specs = catalog.enumerate_kernels((SEED_FAMILY,), ("sm_80",))
    assert len(specs) >= 200
    assert {s.knobs["library_layouts"] for s in specs} == {"nn", "nt", "tn", "tt"}
    assert {s.knobs["alignment"] for s in specs} == {2, 4, 8}
    assert len({(tuple(s.knobs["threadblock_tile"]), s.knobs["stages"]) for s in specs}) > 10
    names = {s.name for s in specs}
    assert "cutlass_tensorop_bf16_s16816gemm_bf16_128x128_64x3_nt_align2" in names


def test_knobs_of_a_known_kernel():
    ops = catalog.load_manifest_operations(80)
    spec = catalog.describe_operation(ops["cutlass_tensorop_bf16_s16816gemm_bf16_128x128_64x3_nt_align8"])
    k = spec.knobs
    assert k["threadblock_tile"] == [128, 128, 64] and k["stages"] == 3
    assert k["instruction_shape"] == [16, 8, 16] and k["warp_count"] == [2, 2, 1]
    assert k["warp_shape"] == [64, 64, 64]
    assert (k["element_a"], k["element_accumulator"], k["element_d"]) == ("bf16", "f32", "bf16")
    assert (k["layout_a"], k["layout_b"], k["layout_c"]) == ("n", "t", "n")
    assert k["alignment"] == 8 and k["opcode_class"] == "tensorop"
    assert "Swizzle" in k["swizzle"] and k["epilogue"] == "LinearCombination"


def test_sm90_names_parse_cluster_and_schedule():
    name = ("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x128x64_2x1x1_0_tnn_align8"
            "_warpspecialized_cooperative_epi_tma")
    knobs = catalog.parse_name(name)
    assert knobs["cluster_shape"] == [2, 1, 1] and knobs["library_layouts"] == "tnn"
    assert knobs["schedule_suffix"] == "_warpspecialized_cooperative_epi_tma"


def test_sampling_is_deterministic():
    specs = catalog.enumerate_kernels((SEED_FAMILY,), ("sm_80",))
    first = [s.name for s in catalog.sample_kernels(specs, 5, seed=7)]
    again = [s.name for s in catalog.sample_kernels(specs, 5, seed=7)]
    other = [s.name for s in catalog.sample_kernels(specs, 5, seed=8)]
    assert first == again and len(first) == 5 and first != other


@pytest.fixture(scope="module")
def built_rows():
    if not nvcc_available():
        pytest.skip("nvcc from the CUDA wheels is not installed")
    builder = CutlassBuilder(BuildOptions(archs=["sm_80"], limit=2, sample_seed=1,
                                          extra={"family": "cutlass_tensorop_bf16_s16816gemm_bf16_[0-9]*_tn_align*"}))
    rows = []
    for item in builder.work_items():
        rows += builder.build(item)
    return rows


@needs_nvcc
def test_rows_are_built_with_one_blob_param(built_rows):
    assert len(built_rows) == 2
    for row in built_rows:
        assert row.status == "built", row.status_message
        (launch,) = row.launches
        params = entry_params(row.ptx, launch.entry)
        assert len(params) == 1 and params[0].size == len(launch.args[0].blob)
        assert row.name in launch.entry
        assert row.provenance["sample_seed"] == 1 and row.provenance["sm_count"] == 132
        assert row.provenance["licence"] == "BSD-3-Clause (CUTLASS)"
        assert row.group_id == "cutlass/gemm/bf16_bf16_f32_bf16/rcr/a1b0/M512N768K520"


@needs_nvcc
def test_patch_offsets_cover_a_b_d(built_rows):
    for row in built_rows:
        patches = row.launches[0].args[0].patches
        assert {"A", "B", "D"} <= {p.buffer for p in patches}
        assert all(p.offset % 8 == 0 for p in patches)


@needs_nvcc
def test_launch_shape_matches_cutlass_device_values(built_rows):
    for row in built_rows:
        launch = row.launches[0]
        k = row.variant
        tm, tn, tk = k["threadblock_tile"]
        assert launch.block == (32 * k["warp_count"][0] * k["warp_count"][1] * k["warp_count"][2], 1, 1)
        # GemmIdentityThreadblockSwizzle<8>: grid x = tiles_m << log_tile, y = tiles_n >> log_tile
        tiles_m, tiles_n = -(-512 // tm), -(-768 // tn)
        log_tile = 3 if tiles_n >= 6 else 2 if tiles_n >= 3 else 1 if tiles_n >= 2 else 0
        assert launch.grid == (tiles_m << log_tile, -(-tiles_n // (1 << log_tile)), 1)
        stage_bytes = (tm * tk + tk * tn) * 2
        assert launch.dynamic_smem >= k["stages"] * stage_bytes


@needs_nvcc
def test_rows_assemble_with_ptxas(built_rows, tmp_path):
    ptxas = find_tool("ptxas")
    for i, row in enumerate(built_rows):
        path = tmp_path / f"k{i}.ptx"
        path.write_text(row.ptx)
        proc = subprocess.run([str(ptxas), "-arch=sm_80", str(path), "-o", str(tmp_path / f"k{i}.cubin")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert re.search(r"mma\.sync\.aligned\.m16n8k16", row.ptx)


@needs_nvcc
def test_sm90a_rows_contain_wgmma_and_workspace_scratch():
    family = "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x128x64_1x1x1_0_tnn_align4_*"
    builder = CutlassBuilder(BuildOptions(archs=["sm_90a"], extra={"family": family}))
    rows = [row for item in builder.work_items() for row in builder.build(item)]
    assert len(rows) == 3
    for row in rows:
        assert row.status == "built", row.status_message
        assert row.arch == "sm_90a" and "wgmma.mma_async" in row.ptx
        (launch,) = row.launches
        assert launch.block == (384, 1, 1)
        assert {"A", "B", "D"} <= {p.buffer for p in launch.args[0].patches}
    stream_k = [r for r in rows if "stream_k" in r.name]
    assert stream_k and stream_k[0].scratch[0].init.kind == "zeros"
    assert stream_k[0].launches[0].grid == (132, 1, 1)  # persistent grid sized by --sm-count


def _marked_params(run: int) -> tuple[bytes, list]:
    """Params as the packer prints them: a CUtensorMap marker at 128 (recorded index 0,
    encoding A's sentinel) and D's pointer at 8; plus the packer's encode records."""
    from builders.cutlass.packer import TENSORMAP_MAGIC, sentinel
    blob = bytearray(384)
    blob[8:16] = (sentinel(3, run) + 64).to_bytes(8, "little")
    blob[128:136] = TENSORMAP_MAGIC
    record = {"data_type": 1, "rank": 3, "global_address": f"{sentinel(0, run):x}",
              "global_dim": [520, 512, 1], "global_strides": [1040, 0], "box_dim": [64, 128, 1],
              "element_strides": [1, 1, 1], "interleave": 0, "swizzle": 3, "l2_promotion": 2, "oob_fill": 0}
    return bytes(blob), [record]


def test_tensormap_markers_become_tensormap_patches():
    from builders.cutlass.packer import (BUFFER_SLOTS, PackError, find_patches, find_tensormap_patches,
                                         sentinel)
    pointer_sets = [{name: sentinel(BUFFER_SLOTS.index(name), run) for name in ("A", "B", "D")}
                    for run in range(3)]
    blobs, records = zip(*(_marked_params(run) for run in range(3)))
    (tma,) = find_tensormap_patches(list(blobs), list(records), pointer_sets)
    assert (tma.kind, tma.offset, tma.buffer, tma.addend, tma.size) == ("tensormap", 128, "A", 0, 128)
    assert tma.tensormap["box_dim"] == [64, 128, 1] and "global_address" not in tma.tensormap
    (ptr,) = find_patches(list(blobs), pointer_sets)
    assert (ptr.kind, ptr.offset, ptr.buffer, ptr.addend) == ("address", 8, "D", 64)
    moved = [dict(records[1][0], box_dim=[64, 64, 1])]
    with pytest.raises(PackError, match="depend on the pointers"):
        find_tensormap_patches(list(blobs), [records[0], moved, records[2]], pointer_sets)


TMA_KERNEL = ("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x128x64_2x1x1_0_tnn_align8"
              "_warpspecialized_cooperative_epi_tma")


@needs_nvcc
def test_sm90a_tma_row_carries_tensormap_patches_and_cluster():
    builder = CutlassBuilder(BuildOptions(archs=["sm_90a"], extra={"family": TMA_KERNEL}))
    (row,) = [row for item in builder.work_items() for row in builder.build(item)]
    assert row.status == "built", row.status_message
    assert "wgmma.mma_async" in row.ptx and "cp.async.bulk.tensor" in row.ptx
    (launch,) = row.launches
    (param,) = entry_params(row.ptx, launch.entry)
    assert param.align >= 64 and param.size == len(launch.args[0].blob)  # .align 128 here
    assert launch.cluster == (2, 1, 1) and launch.block == (384, 1, 1)
    assert launch.grid == (24, 1, 1)  # 4 x 6 tiles of 128x128, fewer than 132 SMs
    tensormaps = [p for p in launch.args[0].patches if p.kind == "tensormap"]
    assert {p.buffer for p in tensormaps} == {"A", "B", "D"}  # C aliases D when beta = 0
    assert all(p.offset % 64 == 0 and p.addend == 0 for p in tensormaps)
    a = next(p for p in tensormaps if p.buffer == "A")
    assert a.tensormap["global_dim"][:2] == [520, 512] and a.tensormap["box_dim"][:2] == [64, 128]
    for p in tensormaps:  # descriptors are left blank: the verifier encodes them
        assert launch.args[0].blob[p.offset:p.offset + 128] == bytes(128)


@needs_nvcc
def test_entry_ptx_hash_is_the_same_batched_and_alone(built_rows):
    from ptx_tools import ptx_hash
    from builders.cutlass import CutlassBuilder as Builder
    builder = Builder(BuildOptions(archs=["sm_80"]))
    for row in built_rows:
        spec = catalog.describe_operation(catalog.load_manifest_operations(80)[row.name])
        ((_, alone),) = builder._compile_batch([spec], "sm_80").values()
        assert ptx_hash(alone) == ptx_hash(row.ptx)


def test_extra_slots_get_their_own_sentinels_and_request_tokens():
    """A kind's further buffers (scales, metadata, problem arrays) are found in the Params by
    their own sentinels, and reach the packer as @SLOT=HEX beside NAME=VALUE problem values."""
    from builders.cutlass.packer import BUFFER_SLOTS, _request, find_patches, sentinel, slot_names
    names = slot_names(("SFA", "SFB"))
    assert names == BUFFER_SLOTS + ("SFA", "SFB")
    addresses = {sentinel(i, run) for i in range(len(names)) for run in range(3)}
    assert len(addresses) == 3 * len(names)
    pointer_sets = [{n: sentinel(names.index(n), run) for n in ("A", "B", "D", "SFB")} for run in range(3)]
    blobs = []
    for ps in pointer_sets:
        blob = bytearray(64)
        blob[0:8] = ps["A"].to_bytes(8, "little")
        blob[24:32] = (ps["SFB"] + 256).to_bytes(8, "little")
        blob[40:48] = ps["D"].to_bytes(8, "little")
        blob[48:56] = ps["B"].to_bytes(8, "little")
        blobs.append(bytes(blob))
    found = {(p.offset, p.buffer, p.addend) for p in find_patches(blobs, pointer_sets)}
    assert found == {(0, "A", 0), (24, "SFB", 256), (40, "D", 0), (48, "B", 0)}
    line = _request("k", 1, 2, 3, 1.0, 0.0, 132, pointer_sets[0], ("SFA", "SFB"), {"group_size": 128})
    assert line.split()[12:] == ["@SFA=0", f"@SFB={pointer_sets[0]['SFB']:x}", "group_size=128"]
    with pytest.raises(ValueError, match="slot name"):
        slot_names(("A",))
    with pytest.raises(ValueError, match="extra buffer slots"):
        slot_names(tuple(f"X{i}" for i in range(12)))


ECHO_PACKER = r'''
#include "cutlass/cutlass.h"
#include "cutlass/layout/matrix.h"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/default_gemm_universal.h"
#include "packer.h"
// Writes back what the request carried: a further slot's pointer and a problem value.
template <int Unused>
void pack_echo(PackRequest const &req, PackResult &out) {
  static unsigned long long words[3];
  words[0] = reinterpret_cast<unsigned long long>(req.ptr("SFA"));
  words[1] = static_cast<unsigned long long>(static_cast<long long>(req.param("group_size", -1)));
  words[2] = reinterpret_cast<unsigned long long>(req.ptr("absent"));
  out.bytes = reinterpret_cast<const unsigned char *>(words);
  out.size = sizeof(words);
}
static const PackEntry kPackers[] = {{"echo", &pack_echo<0>}};
int main(int argc, char **argv) { return packer_main(kPackers, 1, argc, argv); }
'''


@needs_nvcc
def test_host_packer_reads_extra_slots_and_values():
    """host/packer.h parses the @SLOT=HEX and NAME=VALUE tokens a kind's request adds."""
    from builders.cutlass.compile import build_packer
    from builders.cutlass.packer import run_packer
    packer = build_packer(ECHO_PACKER, "sm_80")
    (plain, extra) = run_packer(packer, ["echo 1 2 3 1.0 0.0 132 0 0 0 0 0",
                                         "echo 1 2 3 1.0 0.0 132 0 0 0 0 0 @SFA=7a1000 group_size=128"])
    words = lambda r: [int.from_bytes(bytes.fromhex(r["params_hex"])[i:i + 8], "little") for i in (0, 8, 16)]
    assert words(plain) == [0, (1 << 64) - 1, 0]
    assert words(extra) == [0x7A1000, 128, 0]
    import subprocess
    proc = subprocess.run([str(packer)], input="echo 1 2 3 1.0 0.0 132 0 0 0 0 0 novalue\n",
                          capture_output=True, text=True, timeout=60)
    assert "bad request line" in proc.stdout
