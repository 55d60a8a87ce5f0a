"""The PTX rewrite engine on real Triton PTX: parse + print is byte-identical, every
rewrite assembles and keeps what it must keep, mutants are recorded, ``ptxds rewrite``
only appends, and pairs take verified mutant labels."""
import random
import re
from collections import Counter

import pytest
from click.testing import CliRunner

from builders import load_builder
from builders.base import BuildOptions
from dataset_spec.store.shards import ShardWriter, part_files, read_records
from ptx_tools import assemble
from ptx_tools.rewrite import MUTATIONS, REWRITES, Context, NotApplicable, PtxProgram, apply_mutation, apply_rewrites
from ptx_tools.program import PURE_OPS
from ptxds.cli import cli
from ptxds.pairs import make_pairs
from ptxds.pipeline import build_and_finalize
from ptxds.rewrite import context_for

ITEMS = ("vector_add/float32/n1048576/BLOCK_SIZE1024_num_warps4", "softmax/float32/M1823xN781/BLOCK_SIZE1024_num_warps4_num_stages1",
         "softmax/float32/M1823xN781/BLOCK_SIZE1024_num_warps8_num_stages1",
         "gemm/float16/M512xN512xK512/BLOCK_SIZE_M64_BLOCK_SIZE_N64_BLOCK_SIZE_K64",
         "layernorm/float32/M1151xN1000/BLOCK_SIZE1024_num_warps4")


@pytest.fixture(scope="module")
def triton_rows(tmp_path_factory):
    """Built sm_90a rows of a few Triton suite kernels (real compiler output)."""
    import os
    os.environ.setdefault("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("triton-cache")))
    builder = load_builder("triton")(BuildOptions(archs=["sm_90a"]))
    items = [item for item in builder.work_items() if any(key in item.label for key in ITEMS)]
    chosen = {}
    for item in items:  # the first item matching each key
        key = next(k for k in ITEMS if k in item.label)
        chosen.setdefault(key, item)
    rows = [row for item in chosen.values() for row in build_and_finalize(builder, item, sass=False)]
    assert len(rows) == len(ITEMS) and all(r.status == "built" for r in rows)
    return rows


def test_parse_print_is_byte_identical(triton_rows):
    for row in triton_rows:
        program = PtxProgram(row.ptx)
        assert program.print() == row.ptx
        assert program.functions and program.functions[0].name == row.launches[0].entry
        kinds = {line.kind for line in program.lines}
        assert {"instr", "decl", "open", "close"} <= kinds
        assert any(line.instr.guard for line in program.lines if line.instr)  # @%p predicates parsed


def test_every_rewrite_applies_somewhere_and_assembles(triton_rows):
    applied = {name: 0 for name in REWRITES}
    for row in triton_rows:
        for name in REWRITES:
            ptx, edits = apply_rewrites(row.ptx, [name], random.Random(7), context_for(row))
            if not edits:
                continue
            assert ptx != row.ptx and edits[0].op == name and edits[0].lines
            assemble(ptx, row.arch)  # raises AssemblyError with ptxas's log
            applied[name] += 1
    assert all(applied.values()), applied


def test_mutants_change_one_thing_and_mostly_assemble(triton_rows):
    row = next(r for r in triton_rows if "softmax" in r.group_id)
    assembled = 0
    for name in MUTATIONS:
        ptx, edit = apply_mutation(row.ptx, name, random.Random(3), context_for(row))
        assert edit.op == name and ptx != row.ptx
        changed = [a for a, b in zip(row.ptx.splitlines(), ptx.splitlines()) if a != b]
        assert changed, name
        assemble(ptx, row.arch)
        assembled += 1
    assert assembled == len(MUTATIONS)


def test_global_load_nc_only_for_buffers_never_written(triton_rows):
    row = next(r for r in triton_rows if "vector_add" in r.group_id)
    ctx = context_for(row)
    entry = row.launches[0].entry
    written = {p for arg, p in zip(row.launches[0].args, [f"{entry}_param_{i}" for i in range(9)])
               if arg.kind == "buffer" and row.problem.buffer(arg.buffer).role != "in"}
    assert written and ctx.readonly_params[entry] and not written & ctx.readonly_params[entry]
    ptx, (edit,) = apply_rewrites(row.ptx, ["global_load_nc"], random.Random(0), ctx)
    assert ptx.count("ld.global.nc") == len(edit.lines) == row.ptx.count("ld.global")  # x and y, both read-only
    # Without the launch's knowledge nothing is read-only, and nothing changes.
    assert apply_rewrites(row.ptx, ["global_load_nc"], random.Random(0), Context())[1] == []


def _non_pure(ptx):
    return [line.render().strip() for line in PtxProgram(ptx).lines
            if line.kind != "instr" or line.instr.base not in PURE_OPS]


def test_reorder_keeps_memory_barriers_and_labels_in_place(triton_rows):
    for row in triton_rows:
        ptx, edits = apply_rewrites(row.ptx, ["reorder_independent"], random.Random(1), Context())
        if edits:
            assert _non_pure(ptx) == _non_pure(row.ptx)
            assert sorted(ptx.splitlines()) == sorted(row.ptx.splitlines())


def test_branch_swap_negates_the_guard_and_moves_the_block(triton_rows):
    row = next(r for r in triton_rows if "softmax" in r.group_id)
    ptx, (edit,) = apply_rewrites(row.ptx, ["branch_swap"], random.Random(0), Context())
    line = PtxProgram(ptx).lines[edit.lines[0]].instr
    original = PtxProgram(row.ptx).lines[edit.lines[0]].instr
    assert line.base == "bra" and line.guard.lstrip("!") == original.guard.lstrip("!") and line.guard != original.guard
    assert re.search(r"^\$RW_swap:$", ptx, re.M)
    assemble(ptx, row.arch)


def test_mul_shift_exact_forms(triton_rows):
    program = PtxProgram("\n".join([".version 8.7", ".target sm_90a", ".address_size 64", "",
                                    ".visible .entry k(", "\t.param .u64 k_param_0", ")", "{",
                                    "\t.reg .b32 %r<4>;", "\tmul.lo.s32 %r2, %r1, 16;", "\tret;", "}", ""]))
    from ptx_tools.rewrite.operators import mul_shift
    mul_shift(program, random.Random(0), Context())
    assert "\tshl.b32 %r2, %r1, 4;" in program.print()


def test_rewrite_command_appends_and_pairs_label_mutants(triton_rows, tmp_path):
    rows = [r for r in triton_rows if "softmax" in r.group_id]
    ShardWriter(tmp_path).write(rows)
    before = {p: p.read_bytes() for p in part_files(tmp_path)}
    result = CliRunner().invoke(cli, ["rewrite", str(tmp_path), "--rewrites", "2", "--mutants", "3", "--seed", "5"])
    assert result.exit_code == 0, result.output
    assert "2 rewritten members and 3 mutants added to 1 groups" in result.output
    assert all(p.read_bytes() == data for p, data in before.items())  # nothing already there changed
    records = read_records(tmp_path)
    new = [r for r in records if r.source == "rewrite"]
    assert len(new) == 5 and all(r.status == "built" and r.group_id == rows[0].group_id for r in new)
    assert len({r.kernel_id for r in records}) == len(records)
    mutants = [r for r in new if "mutation" in r.variant]
    assert {r.variant["base"] for r in new} <= {r.kernel_id for r in rows}
    assert all(r.provenance["trace"] and r.provenance["diff"].startswith("--- base.ptx") for r in new)
    again = CliRunner().invoke(cli, ["rewrite", str(tmp_path), "--rewrites", "2", "--mutants", "3", "--seed", "5"])
    assert "0 rewritten members and 0 mutants" in again.output and len(read_records(tmp_path)) == len(records)
    # Labels as the verifier would give them: bases and rewrites pass, one mutant survives.
    for r in records:
        r.status = "passed"
    mutants[0].status, mutants[1].status = "wrong_result", "crashed"
    pairs = make_pairs(records)
    negatives = [p for p in pairs if p.equivalent is False]
    assert {p.mutation for p in negatives} == {mutants[0].variant["mutation"], mutants[1].variant["mutation"]}
    assert all(p.label_source == "verified" for p in negatives)
    # a surviving mutant is no positive: its pairs are "survived", with no label
    surviving = [p for p in pairs if mutants[2].kernel_id in (p.kernel_a, p.kernel_b)]
    assert surviving and all(p.mutation == mutants[2].variant["mutation"] for p in surviving)
    assert all(p.label_source == "survived" and p.equivalent is None for p in surviving)
    positives = sum(p.equivalent is True for p in pairs)
    partners = len(records) - len(mutants)  # bases and rewrites
    assert len(negatives) == min(positives, 2 * partners)  # balanced, as far as partners allow


def test_rewrite_rejects_an_empty_dataset(tmp_path):
    result = CliRunner().invoke(cli, ["rewrite", str(tmp_path)])
    assert result.exit_code == 1 and result.output.startswith("Error: ") and "ptxds build" in result.output


def test_rewrite_help_has_an_example():
    result = CliRunner().invoke(cli, ["rewrite", "--help"])
    assert result.exit_code == 0 and "Example:" in result.output and "--mutants" in result.output


def test_load_dataset_opens_pairs_with_mutation_labels(triton_rows, tmp_path):
    from datasets import load_dataset
    from dataset_spec.store.card import write_card
    from ptxds.pairs import write_pairs
    from ptxds.rewrite import rewrite_dataset
    rows = [r for r in triton_rows if "softmax" in r.group_id]
    ShardWriter(tmp_path / "built").write(rows)
    rewrite_dataset(tmp_path / "built", rewrites=1, mutants=2, seed=2)
    records = read_records(tmp_path / "built")
    for r in records:  # as ptxds verify would leave them: every mutant killed
        r.status = "wrong_result" if "mutation" in r.variant else "passed"
    ShardWriter(tmp_path / "verified").write(records)
    written = write_pairs(tmp_path / "verified")
    card = write_card(tmp_path / "verified").read_text()
    assert "## Labels" in card and "| verified | different | mutant |" in card
    assert "Mutants by operator" in card
    pairs = load_dataset(str(tmp_path / "verified"), "pairs")
    loaded = [row for split in pairs.values() for row in split]
    assert len(loaded) == written
    assert sum(1 for row in loaded if row["mutation"] and not row["equivalent"]) >= 2
    assert {row["label_source"] for row in loaded} == {"verified"}


def test_a_racy_surviving_mutant_is_a_negative(triton_rows):
    import dataclasses
    import json
    rows = [r for r in triton_rows if "softmax" in r.group_id]
    clean = json.dumps({"racecheck": {"errors": 0, "warnings": 0}})
    base = dataclasses.replace(rows[0], status="passed", sanitizer=clean)
    other = dataclasses.replace(rows[1], status="passed", sanitizer=clean)
    racy = dataclasses.replace(rows[0], kernel_id="mutant-racy", status="passed",
                               variant={"base": base.kernel_id, "mutation": "drop_barrier"},
                               sanitizer=json.dumps({"racecheck": {"errors": 4, "warnings": 0}}))
    quiet = dataclasses.replace(racy, kernel_id="mutant-quiet", sanitizer=clean)
    pairs = make_pairs([base, other, racy, quiet])
    labels = {(p.kernel_a, p.kernel_b): p.equivalent for p in pairs}
    assert labels[(base.kernel_id, "mutant-racy")] is False  # its own base first
    assert not any("mutant-racy" in key and eq for key, eq in labels.items())
    # survives without hazards: no label, not a positive
    quiet_pairs = [p for p in pairs if "mutant-quiet" in (p.kernel_a, p.kernel_b)]
    assert quiet_pairs and all(p.label_source == "survived" and p.equivalent is None for p in quiet_pairs)


def test_new_operators_assemble_on_every_kernel_with_a_site(triton_rows):
    """A shared-memory access moved to the neighbouring element and a changed guard on a
    global store: each applies where the kernel has the site, changes that one line, and
    ptxas accepts the result."""
    applied = Counter()
    for row in triton_rows:
        for name in ("wrong_shared_offset", "flip_store_guard"):
            for seed in range(3):
                try:
                    ptx, edit = apply_mutation(row.ptx, name, random.Random(seed), context_for(row))
                except NotApplicable:
                    continue
                changed = [(a, b) for a, b in zip(row.ptx.splitlines(), ptx.splitlines()) if a != b]
                assert len(changed) == 1 and edit.op == name, (name, changed)
                before, after = changed[0]
                if name == "wrong_shared_offset":
                    assert ".shared" in after and re.search(r"\+\d+\]", after)
                    assert before.split("[")[0] == after.split("[")[0]
                else:
                    assert "st.global" in after or "red.global" in after or "atom.global" in after
                    guard = after.split("@")[1].split()[0]
                    assert re.match(r"\s*@!?%p", after) and guard != before.split("@")[1].split()[0]
                assemble(ptx, row.arch)  # raises AssemblyError with ptxas's log
                applied[name] += 1
    assert applied["wrong_shared_offset"] >= 3 and applied["flip_store_guard"] >= 3, applied


def test_mutation_sites_prefer_loop_bodies():
    ptx = "\n".join([".version 8.7", ".target sm_90a", ".address_size 64", "",
                     ".visible .entry k(", "\t.param .u64 k_param_0", ")", "{",
                     "\t.reg .b32 %r<9>;", "\t.reg .pred %p<3>;",
                     "\tsetp.lt.s32 %p1, %r1, 7;",          # prologue: weight 1
                     "$L_loop:",
                     "\tsetp.lt.s32 %p2, %r2, 9;",          # loop body: weight 4
                     "\t@%p2 bra $L_loop;",
                     "\tsetp.lt.s32 %p1, %r3, 5;",          # epilogue: weight 2
                     "\tret;", "}", ""])
    program = PtxProgram(ptx)
    assert program.loops(0) and len(program.loops(0)) == 1
    picks = Counter()
    for seed in range(700):
        _, edit = apply_mutation(ptx, "flip_comparison", random.Random(seed), Context())
        picks[edit.lines[0]] += 1
    prologue, body, epilogue = 10, 12, 14
    assert picks[body] > picks[epilogue] > picks[prologue] > 0, picks


def test_every_group_gets_every_applicable_operator(triton_rows, tmp_path):
    from ptxds.rewrite import applicable_mutations, rewrite_dataset
    rows = [r for r in triton_rows if "gemm" in r.group_id or "softmax" in r.group_id]
    ShardWriter(tmp_path).write(rows)
    rewrite_dataset(tmp_path, rewrites=0, mutants=len(MUTATIONS), seed=3)
    records = read_records(tmp_path)
    for group in {r.group_id for r in rows}:
        bases = [r for r in rows if r.group_id == group]
        applicable = set(applicable_mutations(bases, {b.kernel_id: context_for(b) for b in bases}))
        assert {"drop_barrier", "wrong_shared_offset", "flip_store_guard"} <= applicable, (group, applicable)
        made = {r.variant["mutation"] for r in records if r.group_id == group and "mutation" in r.variant}
        assert made == applicable, (group, made, applicable)
