"""The coverage probe of a mutated site on real Triton mutants (CPU): the instrumented copy
assembles with ptxas for every mutation operator, gains only the counter (its parameter,
set-up and increment, under the site's guard), and its launch gains the counter's pointer;
coverage and labels: ``unexercised`` mutants are positives labelled so, survivors are not;
racecheck goes where a change may race."""
import dataclasses
from collections import Counter

import pytest
from click.testing import CliRunner

from dataset_spec.labels import kill_rates, mutant_class
from dataset_spec.model import VERIFY_STATUSES, KernelRecord
from dataset_spec.store.shards import read_records
from ptx_tools import assemble
from ptx_tools.rewrite import MUTATIONS, PtxProgram
from ptx_tools.analysis.sites import mutated_site
from ptx_tools.instrument.probe import PROBE_MARK, ProbeError, instrument_site, strip_probe
from ptxds.cli import cli
from ptxds.pairs import make_pairs
from ptxds.rewrite import rewrite_dataset
from verify.member.args import entry_params, pack_args
from verify.probes.coverage import SiteCoverage, apply_coverage, measure_site, probe_record
from verify.probes.race_focus import racecheck_reason, touches_synchronisation


@pytest.fixture(scope="module")
def mutants(tmp_path_factory):
    """(mutant rows, rows by kernel_id) of a small Triton suite build (sm_90a, --limit 12:
    vector add, square, softmax, GEMMs, layernorm) extended by ``ptxds rewrite``."""
    import os
    root = tmp_path_factory.mktemp("triton")
    os.environ.setdefault("TRITON_CACHE_DIR", str(root / "cache"))
    result = CliRunner().invoke(cli, ["build", "--source", "triton", "--arch", "sm_90a", "--limit", "12",
                                      "--sample-seed", "3", "--jobs", "1", "--out", str(root / "ds")])
    assert result.exit_code == 0, result.output
    rewrite_dataset(root / "ds", rewrites=0, mutants=5, seed=0)
    rows = read_records(root / "ds")
    made = [r for r in rows if r.variant.get("mutation")]
    assert made and all(r.status == "built" for r in rows)
    return made, {r.kernel_id: r for r in rows}


def _instructions(ptx: str) -> list:
    return [line.render().strip() for line in PtxProgram(ptx).lines if line.instr is not None]


def test_every_operators_probe_assembles_and_adds_only_the_counter(mutants):
    made, by_id = mutants
    probed_ops = Counter()
    for row in made:
        probed = probe_record(row, by_id[row.variant["base"]].ptx)
        assemble(probed.record.ptx, row.arch)  # raises AssemblyError with ptxas's log
        probed_ops[row.variant["mutation"]] += 1
        # the counter: last parameter of the site's entry, last arg of its launches, zeroed scratch
        params = entry_params(probed.record.ptx, probed.probe.entry)
        assert params[-1].name == probed.probe.param and params[-1].size == 8
        assert probed.record.scratch[-1].name == probed.counter and probed.record.scratch[-1].dtype == "uint64"
        assert probed.record.scratch[-1].init.kind == "zeros"
        for launch in probed.record.launches:
            if launch.entry == probed.probe.entry:
                assert launch.args[-1].buffer == probed.counter
                addresses = {b.name: 0x1000 * (i + 1) for i, b in enumerate(probed.record.buffers())}
                packed = pack_args(launch, addresses, params)
                assert packed.offsets[-1] % 8 == 0
        # nothing else changed: the same text and instructions once the probe's lines are gone
        assert strip_probe(probed.record.ptx, probed.probe.param) == row.ptx
        added = [i for i in _instructions(probed.record.ptx) if PROBE_MARK in i]
        assert [i for i in _instructions(probed.record.ptx) if PROBE_MARK not in i] == _instructions(row.ptx)
        # set-up (the pointer and a zeroed per-thread count), one increment, and a flush of
        # the count before every exit of the entry, under the exit's guard
        increments = [i for i in added if "add.u64 %ptxds_count, %ptxds_count, 1;" in i]
        flushes = [i for i in added if "red.global.add.u64 [%ptxds_site], %ptxds_count;" in i]
        assert len(increments) == 1 and flushes and len(added) == 3 + len(increments) + len(flushes), added
        _exits_are_flushed(probed.record.ptx, probed.probe.entry)
    assert set(probed_ops) == set(MUTATIONS), probed_ops


def _exits_are_flushed(ptx: str, entry: str) -> None:
    """Every ret/exit of ``entry`` follows a flush of the count under the same guard."""
    program = PtxProgram(ptx)
    function = next(i for i, f in enumerate(program.functions) if f.name == entry)
    listed = list(program.instructions(function, top_level=False))
    for k, (_, instr) in enumerate(listed):
        if instr.base in ("ret", "exit"):
            flush = listed[k - 1][1]
            assert flush.opcode == "red.global.add.u64" and flush.guard == instr.guard, (flush, instr)


def test_the_counter_sits_right_before_the_site_under_its_guard(mutants):
    made, by_id = mutants
    guarded = 0
    for row in made:
        base = by_id[row.variant["base"]]
        site = mutated_site(base.ptx, row.ptx)
        probe = instrument_site(row.ptx, site)
        lines = probe.ptx.split("\n")
        increment = lines[probe.line - 1].strip()
        assert increment.endswith(PROBE_MARK) and "add.u64 %ptxds_count, %ptxds_count, 1;" in increment
        assert lines[probe.line] == row.ptx.split("\n")[site.line]  # the site follows its counter
        assert increment.startswith(f"@{site.guard} ") == bool(site.guard)
        guarded += bool(site.guard)
        if row.variant["mutation"] == "drop_barrier":  # counted where the barrier stood
            assert site.kind == "delete" and "bar.sync" in site.before
            base_lines = base.ptx.split("\n")
            assert base_lines[site.line] == site.before and lines[probe.line] == base_lines[site.line + 1]
        else:
            assert site.kind == "replace" and lines[probe.line].strip() == site.after.strip()
    assert guarded, "no mutant of a predicated instruction: the guard rule went untested"


FUNC_PTX = """.version 8.0
.target sm_80
.address_size 64

.func helper(
\t.param .b32 helper_a
)
{
\t.reg .b32 %r<3>;
\tld.param.b32 %r1, [helper_a];
\tadd.s32 %r2, %r1, 1;
\tret;
}

.visible .entry main(
\t.param .u64 main_out
)
{
\t.reg .b32 %r<2>;
\tmov.u32 %r1, 1;
\tret;
}
"""


def test_the_probe_refuses_what_it_cannot_count():
    with pytest.raises(ProbeError, match="equals its base"):
        mutated_site(FUNC_PTX, FUNC_PTX)
    in_func = FUNC_PTX.replace("add.s32 %r2, %r1, 1;", "add.s32 %r2, %r1, 2;")
    with pytest.raises(ProbeError, match=r"\.func helper"):
        instrument_site(in_func, mutated_site(FUNC_PTX, in_func))
    in_entry = FUNC_PTX.replace("mov.u32 %r1, 1;", "mov.u32 %r1, 2;")
    probe = instrument_site(in_entry, mutated_site(FUNC_PTX, in_entry))
    assert probe.entry == "main" and entry_params(probe.ptx, "main")[-1].name == probe.param
    assemble(probe.ptx, "sm_80")


def _passed(row: KernelRecord, **changes) -> KernelRecord:
    return dataclasses.replace(row, status="passed", provenance=dict(row.provenance), **changes)


def test_coverage_sets_unexercised_and_unknown_counts_neither_way(mutants):
    made, by_id = mutants
    row = made[0]
    unknown = measure_site(object(), _passed(row), by_id[row.variant["base"]], row.group_id, [], 10.0)
    assert unknown.exercised is None and "cannot run a coverage probe" in unknown.reason
    no_base = measure_site(object(), _passed(row), None, row.group_id, [], 10.0)
    assert no_base.exercised is None and "not in the group" in no_base.reason
    kept = _passed(row)
    apply_coverage(kept, unknown)
    assert kept.status == "passed" and kept.provenance["verify"]["coverage"]["exercised"] is None
    ran = _passed(row)
    apply_coverage(ran, SiteCoverage(True, [3, 0], "add.s32 %r1, %r2, 1;", 12))
    assert ran.status == "passed" and ran.provenance["verify"]["coverage"]["counts"] == [3, 0]
    never = _passed(row)
    apply_coverage(never, SiteCoverage(False, [0, 0], "add.s32 %r1, %r2, 1;", 12))
    assert never.status == "unexercised" and "never ran in 2 trial(s)" in never.status_message
    assert "unexercised" in VERIFY_STATUSES
    KernelRecord.from_json(never.to_json())  # a valid status


def test_unexercised_mutants_are_positives_and_survivors_are_not(mutants):
    made, by_id = mutants
    group = next(g for g in sorted({r.group_id for r in made}) if sum(r.group_id == g for r in made) >= 2)
    bases = [_passed(r) for r in by_id.values() if r.group_id == group and not r.variant.get("mutation")]
    mine = [r for r in made if r.group_id == group][:2]
    assert len(mine) == 2
    unexercised, survivor = (dataclasses.replace(mine[0], status="unexercised"), _passed(mine[1]))
    assert mutant_class("unexercised", None, None) == "equivalent"
    assert mutant_class("passed", None, None) == "survived"
    pairs = make_pairs(bases + [unexercised, survivor])
    with_unexercised = [p for p in pairs if unexercised.kernel_id in (p.kernel_a, p.kernel_b)]
    assert with_unexercised and all(p.equivalent is True and p.label_source == "unexercised"
                                    and p.mutation == unexercised.variant["mutation"] for p in with_unexercised)
    with_survivor = [p for p in pairs if survivor.kernel_id in (p.kernel_a, p.kernel_b)]
    assert with_survivor and all(p.equivalent is None and p.label_source == "survived" for p in with_survivor)
    assert all(p.label_source == "verified" for p in pairs
               if p.equivalent and unexercised.kernel_id not in (p.kernel_a, p.kernel_b))
    assert kill_rates(8, 1, 3) == (8 / 12, 8 / 9)
    assert kill_rates(0, 0, 2) == (0.0, None)


def test_racecheck_goes_to_dropped_barriers_and_changes_near_shared_memory(mutants):
    made, by_id = mutants
    chosen = Counter()
    for row in made:
        base = by_id[row.variant["base"]]
        reason = racecheck_reason(_passed(row), base)
        if row.variant["mutation"] == "drop_barrier":
            assert reason == "a drop_barrier mutant" and touches_synchronisation(base.ptx, row.ptx)
        elif not any(r.shared_static for r in row.resources) and not any(l.dynamic_smem for l in row.launches):
            assert reason == ""  # no shared memory: racecheck has nothing to check
        assert racecheck_reason(row, base) == ""  # only passing members
        chosen[bool(reason)] += 1
    assert chosen[True] and chosen[False]
    # a rewrite that only renames registers orders nothing differently; a reordering is checked
    gemm = next(r for r in made if r.variant["mutation"] == "drop_barrier")
    base = by_id[gemm.variant["base"]]
    renamed = _passed(gemm, variant={"rewrites": ["rename_registers"], "base": base.kernel_id})
    assert racecheck_reason(renamed, base) == ""
    reordered = _passed(gemm, variant={"rewrites": ["rename_registers", "reorder_independent"],
                                       "base": base.kernel_id})
    assert racecheck_reason(reordered, base).startswith("its PTX differs from its base's near a barrier")
    # a change far from any barrier, fence or shared access is not a reason
    vector_add = next(r for r in made if "vector_add" in r.group_id and r.variant["mutation"] != "drop_barrier")
    assert not touches_synchronisation(by_id[vector_add.variant["base"]].ptx, vector_add.ptx)


def test_the_card_gives_both_kill_rates_and_what_racecheck_ran(mutants, tmp_path):
    import json
    from dataset_spec.store.shards import ShardWriter
    from ptxds.pairs import publish
    made, by_id = mutants
    group = next(g for g in sorted({r.group_id for r in made}) if sum(r.group_id == g for r in made) >= 3)
    bases = [_passed(r) for r in by_id.values() if r.group_id == group and not r.variant.get("mutation")]
    mine = [r for r in made if r.group_id == group][:3]
    operators = {r.variant["mutation"] for r in mine}
    clean = json.dumps({"racecheck": {"errors": 0, "warnings": 0}})
    rows = bases + [dataclasses.replace(mine[0], status="wrong_result"),
                    dataclasses.replace(mine[1], status="unexercised"), _passed(mine[2], sanitizer=clean)]
    ShardWriter(tmp_path).write(rows)
    publish(tmp_path)
    card = (tmp_path / "README.md").read_text()
    header = "| operator | killed | survived | unexercised | kill rate (all) | kill rate (exercised) | racecheck |"
    assert header in card
    assert "| all | 1 | 1 | 1 | 33.3% | 50.0% | 1 |" in card, (operators, card[card.index("## Labels"):])
    assert "| unexercised | equivalent | mutant |" in card
