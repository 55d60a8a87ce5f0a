"""The divergence probe and the synchronous-copy form (CPU): the probe shadows the base's
values from the mutated instruction on and compares them where they leave registers
(a guard, an address, stored data), its lines strip back to the mutant, and it assembles,
on hand-written PTX and on every one-instruction mutant of real Triton kernels; the
synchronous-copy form replaces plain ``cp.async`` copies and assembles."""
import random

import pytest

from ptx_tools import assemble
from ptx_tools.rewrite import MUTATIONS, NotApplicable, apply_mutation
from ptx_tools.instrument.divergence import instrument_divergence
from ptx_tools.instrument.probe import PROBE_MARK, ProbeError, strip_probe
from ptx_tools.instrument.sync_copies import SYNC_MARK, synchronous_copies

HEAD = [".version 8.0", ".target sm_80", ".address_size 64", "",
        ".visible .entry k(", "\t.param .u64 k_param_0", ")", "{",
        "\t.reg .pred %p<4>;", "\t.reg .b32 %r<12>;", "\t.reg .f32 %f<9>;", "\t.reg .b64 %rd<6>;",
        "\t.shared .align 16 .b8 smem[1024];", "",
        "\tld.param.u64 %rd1, [k_param_0];", "\tcvta.to.global.u64 %rd2, %rd1;",
        "\tmov.u32 %r1, %tid.x;", "\tshl.b32 %r2, %r1, 2;", "\tmul.wide.u32 %rd3, %r2, 1;",
        "\tadd.s64 %rd3, %rd2, %rd3;"]
TAIL = ["\tret;", "}", ""]
MASKED = ["\tadd.s32 %r5, %r1, 384;", "\tsetp.lt.s32 %p1, %r5, 1000;", "\tsetp.lt.s32 %p2, %r1, 1000;",
          "\t@%p1 ld.global.f32 %f1, [%rd3];", "\t@%p2 st.global.f32 [%rd3+4], %f1;"]
LOOP = ["\tmov.u32 %r6, 0;", "\tmov.f32 %f2, 0f00000000;", "$L_loop:", "\tcvt.rn.f32.u32 %f3, %r6;",
        "\tadd.f32 %f2, %f2, %f3;", "\tadd.s32 %r6, %r6, 1;", "\tsetp.lt.u32 %p3, %r6, 8;", "\t@%p3 bra $L_loop;",
        "\tst.global.f32 [%rd3], %f2;"]


def _ptx(body) -> str:
    return "\n".join(HEAD + list(body) + TAIL)


def _changed(body, old, new):
    return [new if line == old else line for line in body]


def _check(base_body, mutant_body):
    base, mutant = _ptx(base_body), _ptx(mutant_body)
    probe = instrument_divergence(base, mutant)
    assemble(probe.ptx, "sm_80")
    assert strip_probe(probe.ptx, probe.param).replace("\n\n)", "\n)") == mutant.replace("\n\n)", "\n)")
    return [line for line in probe.ptx.split("\n") if PROBE_MARK in line]


def test_a_replaced_store_guard_compares_the_two_guards():
    added = _check(MASKED, _changed(MASKED, MASKED[4], "\t@%p1 st.global.f32 [%rd3+4], %f1;"))
    assert any("xor.pred" in line for line in added)  # runs in one version and not the other
    assert not any("%ptxds_s_" in line for line in added)  # nothing to shadow: no register changed


def test_an_off_by_one_is_shadowed_to_the_guard_it_reaches():
    added = _check(MASKED, _changed(MASKED, MASKED[0], "\tadd.s32 %r5, %r1, 385;"))
    assert any("add.s32 %ptxds_s_r5, %r1, 384;" in line for line in added)  # the base's value beside it
    assert any("setp.lt.s32 %ptxds_s_p1, %ptxds_s_r5, 1000;" in line for line in added)
    assert any("mov.pred %ptxds_h, %ptxds_s_p1;" in line for line in added)  # at the load's guard
    assert any("xor.pred %ptxds_t, %ptxds_g, %ptxds_h;" in line for line in added)


def test_a_loop_carried_change_is_shadowed_around_the_loop():
    added = _check(LOOP, _changed(LOOP, "\tadd.s32 %r6, %r6, 1;", "\tadd.s32 %r6, %r6, 2;"))
    assert any("mov.u32 %ptxds_s_r6, 0;" in line for line in added)  # the initial value too
    assert any("add.s32 %ptxds_s_r6, %ptxds_s_r6, 1;" in line for line in added)
    assert any("setp.ne.or.b32" in line and "%ptxds_s_f2" in line for line in added)  # the stored sum


def test_a_deleted_line_is_not_probed():
    with pytest.raises(ProbeError, match="delete"):
        instrument_divergence(_ptx(LOOP), _ptx([line for line in LOOP if "cvt" not in line]))


COPIES = ["\tmov.u32 %r3, smem;", "\tadd.s32 %r4, %r3, %r2;", "\tsetp.lt.u32 %p1, %r1, 64;",
          "\tselp.b32 %r7, 16, 0, %p1;", "\tcp.async.cg.shared.global [%r4], [%rd3], 16, %r7;",
          "\t@%p1 cp.async.ca.shared.global.L2::128B [%r4+1024], [%rd3], 4;", "\tcp.async.commit_group;",
          "\tcp.async.wait_group 0;", "\tbar.sync 0;", "\tld.shared.f32 %f1, [%r4+4];",
          "\tst.global.f32 [%rd3], %f1;"]


def test_synchronous_copies_replace_plain_copies_and_assemble():
    HEAD[12] = "\t.shared .align 16 .b8 smem[2048];"
    try:
        ptx, replaced = synchronous_copies(_ptx(COPIES))
    finally:
        HEAD[12] = "\t.shared .align 16 .b8 smem[1024];"
    assert replaced == 2 and "cp.async.cg" not in ptx and "cp.async.ca" not in ptx
    assemble(ptx, "sm_80")
    copied = [line for line in ptx.split("\n") if SYNC_MARK in line]
    assert any("st.shared.v4.b32 [%r4]" in line for line in copied)
    assert any("@%p1 st.shared.b32 [%r4+1024]" in line for line in copied)  # the copy's guard kept
    assert any("setp.ne.u32 %ptxds_l, %ptxds_c0, 0;" in line for line in copied)  # source size 0: zeros
    assert "cp.async.wait_group 0;" in ptx


@pytest.fixture(scope="module")
def triton_rows(tmp_path_factory):
    import os
    from builders import load_builder
    from builders.base import BuildOptions
    from ptxds.pipeline import build_and_finalize
    os.environ.setdefault("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("triton-cache")))
    builder = load_builder("triton")(BuildOptions(archs=["sm_90a"]))
    wanted = ("layernorm/float32", "square/float32", "gemm/float16")
    rows = {}
    for item in builder.work_items():
        key = next((k for k in wanted if k in item.label), None)
        if key and key not in rows:
            rows[key] = build_and_finalize(builder, item, sass=False)[0]
    return list(rows.values())


def test_every_one_instruction_mutant_of_real_kernels_gets_a_probe_that_assembles(triton_rows):
    from ptxds.rewrite import context_for
    probed = 0
    for row in triton_rows:
        for name in sorted(MUTATIONS):
            for draw in range(3):
                try:
                    mutant, _ = apply_mutation(row.ptx, name, random.Random(draw), context_for(row))
                except NotApplicable:
                    continue
                if name == "drop_barrier":
                    continue
                probe = instrument_divergence(row.ptx, mutant)
                assemble(probe.ptx, row.arch)
                probed += 1
    assert probed >= 30


def test_a_shadow_never_sits_between_a_carry_and_its_reader():
    wide = ["\tadd.cc.u32 %r5, %r1, 384;", "\taddc.u32 %r6, %r2, 0;", "\tst.global.u32 [%rd3], %r5;",
            "\tst.global.u32 [%rd3+4], %r6;"]
    with pytest.raises(ProbeError, match="carry"):
        instrument_divergence(_ptx(wide), _ptx(_changed(wide, wide[0], "\tadd.cc.u32 %r5, %r1, 385;")))


def test_a_changed_value_read_where_the_probe_cannot_follow_gets_no_probe():
    unparsed = MASKED[:4] + ["\t{ .reg .b32 %t; add.s32 %t, %r5, 1; st.global.u32 [%rd3+8], %t; }", MASKED[4]]
    with pytest.raises(ProbeError, match="not one parsed instruction"):
        instrument_divergence(_ptx(unparsed), _ptx(_changed(unparsed, MASKED[0], "\tadd.s32 %r5, %r1, 385;")))
    nested = MASKED[:4] + ["\t{", "\t.reg .b32 %r<12>;", "\tmov.u32 %r5, 7;", "\t}", MASKED[4]]
    assemble(_ptx(nested), "sm_80")
    with pytest.raises(ProbeError, match="nested block"):
        instrument_divergence(_ptx(nested), _ptx(_changed(nested, MASKED[0], "\tadd.s32 %r5, %r1, 385;")))


def test_a_dropped_barrier_over_copies_gets_its_synchronous_form_beside_its_base():
    from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
    from verify.probes.race_focus import synchronous_copy_pair, synchronous_copy_verdict
    HEAD[12] = "\t.shared .align 16 .b8 smem[2048];"
    try:
        base_ptx = _ptx(COPIES)
    finally:
        HEAD[12] = "\t.shared .align 16 .b8 smem[1024];"
    problem = Problem("test/copies", "x", [Buffer("x", "float32", (256,), role="inout")])

    def row(ptx, key, variant):
        launch = Launch("k", (1,), (64,), [Arg.buf("x")])
        return KernelRecord("test/copies", "test", variant, key, "sm_80", ptx, [launch], problem,
                            kernel_id=key, build_key=key, status="passed")
    base = row(base_ptx, "base", {"entry": "k"})
    dropped = row(base_ptx.replace("\tbar.sync 0;\n", ""), "m", {"mutation": "drop_barrier", "base": "base"})
    other = row(base_ptx.replace("[%r4+4]", "[%r4+8]"), "o", {"mutation": "wrong_shared_offset", "base": "base"})
    mutant_form, base_form = synchronous_copy_pair(dropped, base)
    assert (mutant_form.build_key, base_form.build_key) == ("m:sync-copies", "base:sync-copies")
    assert "cp.async.cg" not in mutant_form.ptx and "bar.sync" not in mutant_form.ptx and "bar.sync" in base_form.ptx
    assert synchronous_copy_pair(other, base) is None  # only dropped barriers
    assert synchronous_copy_verdict(3, 0).startswith("racecheck with cp.async made synchronous: 3")
    assert synchronous_copy_verdict(3, 2) is None      # the base's form races too: nothing to hold against it
    assert synchronous_copy_verdict(3, None) is None   # racecheck failed on the base: unknown
    assert synchronous_copy_verdict(0, 0) is None


def test_ldmatrix_rows_are_read_explicitly_in_the_racecheck_form():
    body = ["\tmov.u32 %r3, smem;", "\tadd.s32 %r4, %r3, %r2;", "\tst.shared.f32 [%r4], %f1;", "\tbar.sync 0;",
            "\tldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r6, %r7}, [%r4];", "\tmov.b32 %f5, %r6;",
            "\tst.global.f32 [%rd3], %f5;"]
    ptx, handled = synchronous_copies(_ptx(body))
    assert handled == 1 and "ldmatrix.sync.aligned.m8n8.x2.trans" in ptx
    added = [line for line in ptx.split("\n") if SYNC_MARK in line]
    assert any("setp.lt.u32 %ptxds_q, %ptxds_m4, 16;" in line for line in added)  # lanes 0-15 address rows
    assert any("@%ptxds_q ld.volatile.shared.v4.b32" in line and "[%r4]" in line for line in added)
    assemble(ptx, "sm_80")


def test_a_load_nothing_reads_is_not_compared_but_a_read_one_is():
    unread = MASKED[:3] + ["\t@%p1 ld.global.f32 %f2, [%rd3+8];"] + MASKED[3:]
    moved = _changed(unread, unread[3], "\t@%p1 ld.global.f32 %f2, [%rd3+12];")
    counting = "add.u64 %ptxds_count, %ptxds_count, 1;"  # counts a divergence (the flush at exit adds it up)
    assert not [line for line in _check(unread, moved) if counting in line]  # nothing to count
    used = _changed(MASKED, MASKED[3], "\t@%p1 ld.global.f32 %f1, [%rd3+8];")  # %f1 is stored
    assert [line for line in _check(MASKED, used) if counting in line]
