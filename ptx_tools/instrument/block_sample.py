"""A copy of a kernel in which only a sample of its blocks does any work: the others leave
at their first instruction.

A race checker's cost grows with the blocks it watches, so the verifier race-checks a large
launch on a sample of its blocks. Launching fewer blocks would do that too, but the kernel
would see it: ``%nctaid`` (and ``%nclusterid``) would be smaller than in any other run, and
a kernel could race only when its grid is whole. Here the grid stays as launched and every
block first computes its linear index (its cluster's, for a cluster launch, so a cluster
stays whole: its blocks share distributed shared memory and barriers) and exits unless the
index lies in ``[start, start + count)``. ``start`` is the caller's (salted per run), so no
kernel knows which blocks are watched.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..program import PtxProgram
from .probe import ProbeError, _unique, first_statement

SAMPLE_MARK = "// ptxds block sample"


@dataclass(frozen=True)
class BlockSample:
    """The blocks (clusters, when ``clustered``) of ``entry`` that work: linear indices
    ``start`` to ``start + count - 1``, x fastest."""
    entry: str
    start: int
    count: int
    clustered: bool = False


def _prologue(registers: str, predicate: str, sample: BlockSample) -> list:
    index, size = ("%clusterid", "%nclusterid") if sample.clustered else ("%ctaid", "%nctaid")
    r = [f"{registers}{i}" for i in range(7)]
    return [f"\tmov.u32 {r[0]}, {index}.x;", f"\tmov.u32 {r[1]}, {index}.y;", f"\tmov.u32 {r[2]}, {index}.z;",
            f"\tmov.u32 {r[3]}, {size}.x;", f"\tmov.u32 {r[4]}, {size}.y;",
            f"\tmad.lo.u32 {r[5]}, {r[2]}, {r[4]}, {r[1]};",
            f"\tmad.lo.u32 {r[5]}, {r[5]}, {r[3]}, {r[0]};",
            # below start wraps to a large number: one unsigned compare tests both ends
            f"\tsub.u32 {r[6]}, {r[5]}, {int(sample.start)};",
            f"\tsetp.ge.u32 {predicate}, {r[6]}, {int(sample.count)};",
            f"\t@{predicate} exit;"]


def sampled_copy(ptx: str, samples: list) -> str:
    """``ptx`` with each sampled entry's blocks outside its sample leaving at once. Raises
    ProbeError naming an entry the module lacks or a sample that keeps no block."""
    program = PtxProgram(ptx)
    text = program.print()
    registers, predicate = _unique(text, "%ptxds_bs"), _unique(text, "%ptxds_bsp")
    entries = {f.name: i for i, f in enumerate(program.functions) if f.is_entry}
    for sample in samples:
        if sample.entry not in entries:
            raise ProbeError(f"entry {sample.entry} is not in the module (entries: {', '.join(entries) or 'none'})")
        if sample.count < 1 or sample.start < 0:
            raise ProbeError(f"entry {sample.entry}: a sample of {sample.count} blocks from {sample.start} keeps none")
    for sample in sorted(samples, key=lambda s: -entries[s.entry]):  # later functions first: indices stay valid
        function = entries[sample.entry]
        lines = [f"{line} {SAMPLE_MARK}" for line in _prologue(registers, predicate, sample)]
        program.insert(first_statement(program, function), lines, function)
        program.insert(program.functions[function].open_line + 1,
                       [f"\t.reg .b32 {registers}<7>; {SAMPLE_MARK}", f"\t.reg .pred {predicate}; {SAMPLE_MARK}"],
                       function)
    return program.print()
