"""The ordering probe of a dropped barrier (CPU): it instruments exactly the accesses on the
barrier's two sides (under their guards), counts the barrier's executions, assembles with
ptxas, refuses what it cannot follow (asynchronous copies, partial barriers, generic
addresses beside explicit ones), and coverage turns 0 conflicts into ``unexercised`` while
a conflict or an unknown probe leaves a passing mutant as it was."""
import pytest

from dataset_spec.model import KernelRecord
from ptx_tools.instrument.ordering import COUNTER_WORDS, MAX_REGIONS, TABLE_BYTES, instrument_ordering, table_shape
from ptx_tools.instrument.probe import PROBE_MARK, ProbeError
from verify.probes.coverage import SiteCoverage, apply_coverage

HEAD = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0,
\t.param .u32 k_param_1
)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<8>;
\t.shared .align 4 .b8 slot[1024];

\tld.param.u64 %rd1, [k_param_0];
\tld.param.u32 %r1, [k_param_1];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r2, %tid.x;
\tmul.wide.u32 %rd3, %r2, 4;
\tadd.s64 %rd4, %rd2, %rd3;
\tsetp.lt.u32 %p1, %r2, %r1;
"""


def _kernel(body: str) -> str:
    return HEAD + body + "\tret;\n}\n"


HANDOFF = _kernel("""\t@%p1 st.global.u32 [%rd4], %r2;
\tbar.sync 0;
\tld.global.u32 %r3, [%rd4+4];
\tshl.b32 %r4, %r2, 2;
\tmov.u32 %r5, slot;
\tadd.u32 %r5, %r5, %r4;
\tst.shared.u32 [%r5], %r3;
\tst.shared.u32 [slot+4], %r3;
\tst.global.v2.u32 [%rd4], {%r3, %r3};
""")


def _barrier_line(ptx: str, nth: int = 0) -> int:
    return [i for i, line in enumerate(ptx.split("\n")) if line.strip() == "bar.sync 0;"][nth]


def test_every_access_on_either_side_is_instrumented_under_its_guard():
    probe = instrument_ordering(HANDOFF, _barrier_line(HANDOFF), ctas=4)
    lines = probe.ptx.split("\n")
    assert probe.accesses == 5 and probe.barrier == "bar.sync 0;"
    assert probe.words == COUNTER_WORDS + 2 * 4 * table_shape(4)[1]
    # the guarded store is skipped with its guard, and the original lines all remain, in order
    assert any(line.strip().startswith("@!%p1 bra ptxo_skip_") for line in lines)
    kept = [line for line in lines if PROBE_MARK not in line and not line.startswith("ptxo_")]
    assert [line for line in kept if "k_param_0_ptxds" not in line and "_ptxds_site_count" not in line][:5] == \
        HANDOFF.split("\n")[:5]
    # the epoch counts right after the barrier; records on the before side, lookups after
    barrier = next(i for i, line in enumerate(lines) if line.strip() == "bar.sync 0;")
    assert "add.u32 %ptxo_epoch" in lines[barrier + 1]
    before, after = "\n".join(lines[:barrier]), "\n".join(lines[barrier:])
    assert "atom.global.cas.b64" in before and "ptxo_look_" not in before
    assert "ptxo_look_" in after and "atom.global.cas.b64" not in after
    assert "[%ptxo_base+8]" in after and "[%ptxo_base+24]" in before
    # 64-bit counts: a 32-bit sum over every thread and barrier instance can wrap to exactly 0
    assert "red.global.add.u64 [%ptxo_base]" in after and "red.global.add.u32" not in probe.ptx
    # the shared store's symbol address is followed; the vector store covers two granules
    assert "mov.u64 %ptxo_t, slot;" in after and "mov.u64 %ptxo_u, 2;" in after
    assert ".param .u64 k_ptxds_site_count" in probe.ptx.replace("k_param_0", "")


def test_the_probe_assembles():
    from ptx_tools import assemble
    from ptx_tools.errors import ToolchainError
    probe = instrument_ordering(HANDOFF, _barrier_line(HANDOFF), ctas=4096)
    try:
        assemble(probe.ptx, "sm_80")
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


@pytest.mark.parametrize("body, why", [
    ("\tcp.async.ca.shared.global [slot], [%rd4], 4;\n\tbar.sync 0;\n\tld.shared.u32 %r3, [slot];\n", "cp.async"),
    ("\tst.global.u32 [%rd4], %r2;\n\tbar.sync 0;\n\tbar.sync 1, 64;\n\tld.global.u32 %r3, [%rd4];\n", "partial"),
    ("\tst.global.u32 [%rd4], %r2;\n\tbar.sync 0;\n\tld.u32 %r3, [%rd4];\n", "generic"),
    ("\tst.global.u32 [%rd4], %r2;\n\tbar.sync 0;\n\tadd.u32 %r3, %r2, 1;\n", "no access"),
])
def test_what_the_probe_cannot_follow_is_refused(body, why):
    ptx = _kernel(body)
    with pytest.raises(ProbeError, match={"cp.async": "cp.async", "partial": "partial", "generic": "generic",
                                          "no access": "no access"}[why]):
        instrument_ordering(ptx, _barrier_line(ptx), ctas=1)
    with pytest.raises(ProbeError, match="not a CTA-wide barrier"):
        instrument_ordering(ptx, _barrier_line(ptx) - 1, ctas=1)


def test_read_only_and_private_accesses_are_left_out():
    ptx = _kernel("\tld.global.nc.u32 %r3, [%rd4];\n\tld.local.u32 %r5, [%rd4];\n\tbar.sync 0;\n"
                  "\tst.global.u32 [%rd4], %r3;\n\tld.global.u32 %r6, [%rd4];\n\tst.global.u32 [%rd4+8], %r6;\n")
    with pytest.raises(ProbeError, match="no access"):  # the before side reads read-only and local memory only
        instrument_ordering(ptx, _barrier_line(ptx), ctas=1)


def test_the_tables_stay_within_their_budget():
    for ctas in (1, 7, 512, 1024, 100000):
        regions, slots = table_shape(ctas)
        assert regions <= MAX_REGIONS and regions & (regions - 1) == 0 and slots & (slots - 1) == 0
        assert regions * slots * 2 * 8 <= TABLE_BYTES and slots >= 1024
        assert regions >= min(ctas, MAX_REGIONS)


def _passing_mutant() -> KernelRecord:
    from helpers import vector_add_row
    return vector_add_row(HANDOFF, "g", "k", 8, "m", {"mutation": "drop_barrier", "base": "b"})


@pytest.mark.parametrize("ordering, status", [
    ([[0, 40, 0, 50], [0, 40, 0, 50]], "unexercised"),   # ordered nothing on every trial
    ([[0, 40, 0, 50], [3, 40, 0, 50]], "passed"),        # a conflict on one trial
    ([[0, 40, 1, 50], [0, 40, 0, 50]], "passed"),        # a table overflowed: not proven
    ([[0, 0, 0, 50], [0, 0, 0, 50]], "passed"),          # nothing was looked up
    ([[0, 40, 0, 50]], "passed"),                        # a trial missing
    (None, "passed"),                                    # the probe did not run: unknown
])
def test_coverage_calls_a_dropped_barrier_unexercised_only_on_zero_conflicts(ordering, status):
    row = _passing_mutant()
    row.status = "passed"
    coverage = SiteCoverage(True, [64, 64], "bar.sync 0;", 20, ordering=ordering,
                            ordering_reason="" if ordering else "ordering probe not built: x")
    apply_coverage(row, coverage)
    assert row.status == status
    recorded = row.provenance["verify"]["coverage"]
    assert recorded.get("ordering") == ordering
    if status == "unexercised":
        assert "ordered nothing" in row.status_message and "80 lookups" in row.status_message
    if ordering is None:
        assert recorded["ordering_reason"].startswith("ordering probe not built")


def test_a_survivor_whose_change_reached_memory_is_not_said_to_keep_its_predicate():
    from verify.probes.coverage import _trial_reason
    reached = {"counts": [64, 64], "base_counts": [64, 64], "diverged": [32, 32]}
    reason = _trial_reason("flip_store_guard", reached)
    assert reason.reason == "masked_downstream" and "[32, 32]" in reason.detail
    kept = _trial_reason("flip_store_guard", dict(reached, diverged=None))
    assert kept.reason == "same_predicate_outcome"
