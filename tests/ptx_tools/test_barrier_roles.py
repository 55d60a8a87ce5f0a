"""Which barriers ``drop_barrier`` may take (CPU): a barrier between a shared-memory write
and a read of it is a site, across loop back edges too; one with reads only on its sides,
one after asynchronous copies nobody waits for, and one whose other side is only the
single warpgroup's wgmma reads are left out with their reason. The adversarial cases (the
same shapes where the barrier IS needed) stay sites. The hand-written PTX assembles."""
import random

import pytest

from ptx_tools import assemble
from ptx_tools.rewrite import Context, NotApplicable, PtxProgram, apply_mutation
from ptx_tools.analysis.barriers import ASYNC_IN_FLIGHT, NO_CONFLICT, WARPGROUP_COLLECTIVE, barrier_roles

HEAD = [".version 8.0", ".target sm_80", ".address_size 64", "",
        ".visible .entry k(", "\t.param .u64 k_param_0", ")", "{",
        "\t.reg .pred %p<3>;", "\t.reg .b32 %r<9>;", "\t.reg .f32 %f<9>;", "\t.reg .b64 %rd<6>;",
        "\t.shared .align 16 .b8 smem[1024];", "",
        "\tld.param.u64 %rd1, [k_param_0];", "\tcvta.to.global.u64 %rd2, %rd1;",
        "\tmov.u32 %r1, %tid.x;", "\tshl.b32 %r2, %r1, 2;", "\tmov.u32 %r3, smem;", "\tadd.s32 %r4, %r3, %r2;",
        "\tmul.wide.u32 %rd3, %r2, 1;", "\tadd.s64 %rd3, %rd2, %rd3;", "\tld.global.nc.f32 %f1, [%rd3];"]
TAIL = ["\tst.global.f32 [%rd3], %f5;", "\tret;", "}", ""]

WRITE_THEN_READ = ["\tst.shared.f32 [%r4], %f1;", "\tbar.sync 0;", "\tld.shared.f32 %f5, [%r4+4];"]
READS_ONLY = ["\tld.shared.f32 %f2, [%r4];", "\tbar.sync 0;", "\tld.shared.f32 %f3, [%r4+4];",
              "\tadd.f32 %f5, %f2, %f3;"]
# the barrier opens the loop: nothing before it in program order, but the previous
# iteration's write reaches it along the back edge
LOOP_HEAD = ["\tmov.u32 %r5, 0;", "$L_loop:", "\tbar.sync 0;", "\tld.shared.f32 %f2, [%r4+4];",
             "\tadd.f32 %f1, %f1, %f2;", "\tst.shared.f32 [%r4], %f1;", "\tadd.s32 %r5, %r5, 1;",
             "\tsetp.lt.u32 %p1, %r5, 4;", "\t@%p1 bra $L_loop;", "\tmov.f32 %f5, %f1;"]
ASYNC_NO_WAIT = ["\tcp.async.ca.shared.global [%r4], [%rd3], 4;", "\tcp.async.commit_group;", "\tbar.sync 0;",
                 "\tcp.async.ca.shared.global [%r4+512], [%rd3], 4;", "\tcp.async.commit_group;",
                 "\tcp.async.wait_group 0;", "\tbar.sync 0;", "\tld.shared.f32 %f5, [%r4+516];"]
ASYNC_WAITED = ["\tcp.async.ca.shared.global [%r4], [%rd3], 4;", "\tcp.async.commit_group;",
                "\tcp.async.wait_group 0;", "\tbar.sync 0;", "\tld.shared.f32 %f5, [%r4+4];"]
GENERIC = ["\tcvta.shared.u64 %rd4, smem;", "\tmul.wide.u32 %rd5, %r2, 1;", "\tadd.s64 %rd4, %rd4, %rd5;",
           "\tst.f32 [%rd4], %f1;", "\tbar.sync 0;", "\tld.f32 %f5, [%rd4+4];"]
NAMED = ["\tst.shared.f32 [%r4], %f1;", "\tbar.sync 1, 64;", "\tld.shared.f32 %f2, [%r4+4];",
         "\tbar.sync 0;", "\tld.shared.f32 %f3, [%r4+8];", "\tadd.f32 %f5, %f2, %f3;"]


def _ptx(body) -> str:
    return "\n".join(HEAD + list(body) + TAIL)


def _roles(body, threads=None) -> list:
    program = PtxProgram(_ptx(body))
    return [role and role[0] for _, role in sorted(barrier_roles(program, 0, threads).items())]


@pytest.mark.parametrize("body", [WRITE_THEN_READ, READS_ONLY, LOOP_HEAD, ASYNC_NO_WAIT, ASYNC_WAITED, GENERIC, NAMED])
def test_the_examples_assemble(body):
    assemble(_ptx(body), "sm_80")


def test_a_barrier_between_a_write_and_a_read_is_a_site():
    assert _roles(WRITE_THEN_READ) == [None]
    assert _roles(GENERIC) == [None]  # generic addresses may be shared memory


def test_reads_on_both_sides_order_nothing():
    assert _roles(READS_ONLY) == [NO_CONFLICT]


def test_a_loop_head_barrier_sees_the_previous_iteration():
    # in program order nothing shared precedes it; along the back edge a write does
    assert _roles(LOOP_HEAD) == [None]


def test_copies_in_flight_are_not_ordered_but_waited_copies_are():
    assert _roles(ASYNC_NO_WAIT) == [ASYNC_IN_FLIGHT, None]
    assert _roles(ASYNC_WAITED) == [None]


def test_partial_barriers_make_the_analysis_give_up():
    assert _roles(NAMED) == [None]


def test_drop_barrier_lists_what_it_left_out_and_gives_up_when_nothing_is_left():
    ptx, edit = apply_mutation(_ptx(ASYNC_NO_WAIT), "drop_barrier", random.Random(0), Context())
    assert edit.excluded and edit.excluded[0]["reason"] == ASYNC_IN_FLIGHT
    assert ptx.count("bar.sync 0;") == 1 and "cp.async.wait_group 0;\n\tld.shared" in ptx  # the needed one went
    with pytest.raises(NotApplicable, match="provably redundant"):
        apply_mutation(_ptx(READS_ONLY), "drop_barrier", random.Random(0), Context())


@pytest.fixture(scope="module")
def gemm_rows(tmp_path_factory):
    """Triton's fp16 GEMMs for sm_90a (wgmma, cp.async pipelines), 4 and 8 warps."""
    import os
    from builders import load_builder
    from builders.base import BuildOptions
    from ptxds.pipeline import build_and_finalize
    os.environ.setdefault("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("triton-cache")))
    builder = load_builder("triton")(BuildOptions(archs=["sm_90a"]))
    rows = {}
    for item in builder.work_items():
        if "gemm/float16/M512xN512xK512" not in item.label:
            continue
        for row in build_and_finalize(builder, item, sass=False):
            if row.status == "built" and "wgmma" in row.ptx:
                rows.setdefault(row.variant["num_warps"], row)
        if {4, 8} <= set(rows):
            return rows
    pytest.skip("the Triton suite has no fp16 wgmma GEMM with 4 and 8 warps")


def test_one_warpgroup_wgmma_barriers_are_left_out_and_two_warpgroups_keep_them(gemm_rows):
    from ptxds.rewrite import context_for
    one, two = gemm_rows[4], gemm_rows[8]
    assert context_for(one).block_threads == {one.launches[0].entry: 128}
    program = PtxProgram(one.ptx)
    roles = barrier_roles(program, 0, 128)
    kinds = [role and role[0] for _, role in sorted(roles.items())]
    assert WARPGROUP_COLLECTIVE in kinds and None in kinds  # the epilogue's st.shared -> ldmatrix stays
    # adversarial: the same PTX run by two warpgroups needs those barriers
    wide = barrier_roles(program, 0, 256)
    assert all(wide[line] is None for line, role in roles.items() if role and role[0] == WARPGROUP_COLLECTIVE)
    # adversarial: without the warpgroup's wgmma.fence nothing orders the copies before the
    # wgmma reads but the barrier: the barrier before the reads becomes a site again
    unfenced = PtxProgram("\n".join(line for line in one.ptx.split("\n") if "wgmma.fence" not in line))
    unfenced_kinds = [role and role[0] for role in barrier_roles(unfenced, 0, 128).values()]
    assert unfenced_kinds.count(WARPGROUP_COLLECTIVE) < kinds.count(WARPGROUP_COLLECTIVE)
    two_roles = barrier_roles(PtxProgram(two.ptx), 0, 256)
    assert WARPGROUP_COLLECTIVE not in [role and role[0] for role in two_roles.values()]
    assert sum(role is None for role in two_roles.values()) >= 3  # the main loop's and the epilogue's


LDMATRIX = ["\tst.shared.f32 [%r4], %f1;", "\tbar.sync 0;", "\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r6}, [%r4];",
            "\tmov.b32 %f5, %r6;"]
MBARRIER = ["\tmbarrier.init.shared.b64 [%r4], 32;", "\tbar.sync 0;", "\tld.shared.f32 %f5, [%r4+8];"]


def test_racecheck_sees_plain_copied_and_ldmatrix_accesses_but_not_an_mbarrier():
    from ptx_tools.instrument.sync_copies import racecheck_blind_spot
    assemble(_ptx(LDMATRIX), "sm_80")
    line = lambda body: next(i for i, text in enumerate(_ptx(body).split("\n")) if "bar.sync 0" in text)  # noqa: E731
    assert racecheck_blind_spot(PtxProgram(_ptx(WRITE_THEN_READ)), line(WRITE_THEN_READ)) == ""
    fenced = ASYNC_WAITED + ["\tbar.sync 0;"]  # the output store after a second barrier: no global pair
    assert racecheck_blind_spot(PtxProgram(_ptx(fenced)), line(fenced)) == ""  # the copy is converted
    assert racecheck_blind_spot(PtxProgram(_ptx(LDMATRIX)), line(LDMATRIX)) == ""  # its rows are read explicitly
    assemble(_ptx(MBARRIER), "sm_80")
    assert racecheck_blind_spot(PtxProgram(_ptx(MBARRIER)), line(MBARRIER)).startswith("mbarrier")
    assert "partial barriers" in racecheck_blind_spot(PtxProgram(_ptx(NAMED)), line(NAMED))


def test_a_dropped_barrier_is_unexercised_only_with_clean_racecheck_and_no_blind_spot():
    from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
    from verify.probes.race_focus import barrier_never_ordered
    problem = Problem("test/barrier", "x", [Buffer("x", "float32", (256,), role="inout")])

    def row(body, key, variant, drop=False):
        ptx = _ptx([line for line in body if not (drop and "bar.sync" in line)])
        return KernelRecord("test/barrier", "test", variant, key, "sm_80", ptx,
                            [Launch("k", (1,), (64,), [Arg.buf("x")])], problem, kernel_id=key, status="passed")
    for body, blind in ((WRITE_THEN_READ, False), (LDMATRIX, False), (MBARRIER, True)):
        base = row(body, "base", {"entry": "k"})
        dropped = row(body, "m", {"mutation": "drop_barrier", "base": "base"}, drop=True)
        note = barrier_never_ordered(dropped, base, 0, 0)
        assert (note is None) == blind, body
        assert barrier_never_ordered(dropped, base, 2, 0) is None     # a hazard: race_detected's business
        assert barrier_never_ordered(dropped, base, 0, None) is None  # the base's racecheck failed: unknown
        assert barrier_never_ordered(dropped, base, 0, 1) is None     # the base races already: nothing shown
    other = row(WRITE_THEN_READ, "o", {"mutation": "off_by_one", "base": "base"})
    assert barrier_never_ordered(other, row(WRITE_THEN_READ, "base", {"entry": "k"}), 0, 0) is None


GLOBAL = ["\tst.global.f32 [%rd3], %f1;", "\tbar.sync 0;", "\tld.global.f32 %f5, [%rd3+4];"]


def test_a_barrier_that_orders_global_memory_between_threads_stays_a_site():
    from ptx_tools.instrument.sync_copies import racecheck_blind_spot
    assemble(_ptx(GLOBAL), "sm_80")
    assert _roles(GLOBAL) == [None]  # no shared memory at all, yet the neighbour's global write is ordered
    line = next(i for i, text in enumerate(_ptx(GLOBAL).split("\n")) if "bar.sync 0" in text)
    assert racecheck_blind_spot(PtxProgram(_ptx(GLOBAL)), line).startswith("global memory")  # racecheck cannot tell
