"""Tuning candidates of the tvm source (``ptxds tune-tvm propose``): work items of
``TvmBuilder`` whose rows are a workload's next schedules to measure.

With no record of the workload in the database: MetaSchedule's seeded samples, as the
default build draws them. After that: MetaSchedule's ``EvolutionarySearch`` from the
database (the CUDA mutators, the measured records as its initial population, a cost model
fitted on those records). Each row's ``variant`` holds the trace, with its decisions and
MetaSchedule's postprocessing marker, as text and as MetaSchedule's JSON (``trace_json``),
which ``tuning.commit`` turns into a record once ``ptxds verify`` has timed the row.
"""
from __future__ import annotations

from builders.base import WorkItem

from .rows import DRAWS_PER_MEMBER, RowMaker
from .tuning import (FAILED_RUN_SECS, MAX_FAILED_ROWS, PROPOSAL, TuningError, check_target, database_digest,
                     open_database, trace_json, tuning_module, workload_records)

OVERSAMPLE = 2              # evolutionary candidates asked for per wanted row (some underfill or repeat)
SEARCH_POPULATION = 256     # EvolutionarySearch's population per proposal
SEARCH_ITERS = 3            # its genetic iterations


def _fitted_cost_model(context, records):
    """A cost model for EvolutionarySearch fitted on the database's records: ridge regression
    of relative throughput (fastest time / time; 0 for a failed run) on MetaSchedule's
    per-store features (mean and max over a candidate's stores). XGBModel would need xgboost,
    which the tvm extra does not bring."""
    import numpy as np
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms

    @derived_object
    class RidgeCostModel(ms.cost_model.PyCostModel):
        def __init__(self):
            self.features = ms.feature_extractor.PerStoreFeature(extract_workload=True)
            self.weights = None

        def load(self, path: str) -> None:
            pass

        def save(self, path: str) -> None:
            pass

        def _matrix(self, ctx, candidates):
            rows = [f.numpy() for f in self.features.extract_from(ctx, candidates)]
            x = np.stack([np.concatenate([r.mean(0), r.max(0)]) for r in rows])
            return np.hstack([np.log1p(np.abs(x)), np.ones((len(x), 1))])

        def update(self, ctx, candidates, results) -> None:
            secs = np.array([np.mean([float(s) for s in r.run_secs]) for r in results])
            ok = secs < FAILED_RUN_SECS
            y = np.where(ok, secs[ok].min() / np.where(ok, secs, 1.0), 0.0) if ok.any() else np.zeros(len(secs))
            x = self._matrix(ctx, candidates)
            self.weights = np.linalg.solve(x.T @ x + np.eye(x.shape[1]), x.T @ y)

        def predict(self, ctx, candidates):
            x = self._matrix(ctx, candidates)
            return x @ self.weights if self.weights is not None else np.zeros(len(x))

    model = RidgeCostModel()
    if records:
        model.update(context, [r.as_measure_candidate() for r in records],
                     [ms.runner.RunnerResult([float(s) for s in r.run_secs], None) for r in records])
    return model


def evolutionary_schedules(func, target, db, records: list, count: int, rand_state: int) -> list:
    """MetaSchedule's EvolutionarySearch, seeded from the database: up to ``count`` new
    postprocessed schedules (measured traces are not proposed again)."""
    import tvm.s_tir.tensor_intrin  # noqa: F401  (registers the tensor intrinsics rules refer to)
    from tvm.s_tir import meta_schedule as ms
    context = ms.TuneContext(
        mod=func, target=target, num_threads=1, rand_state=rand_state,
        space_generator=ms.space_generator.PostOrderApply(sch_rules="cuda", postprocs="cuda", mutator_probs="cuda"),
        search_strategy=ms.search_strategy.EvolutionarySearch(
            population_size=max(SEARCH_POPULATION, 2 * count), init_min_unmeasured=max(16, count),
            genetic_num_iters=SEARCH_ITERS))
    model = _fitted_cost_model(context, records)
    context.pre_tuning(max_trials=count, num_trials_per_iter=count, design_spaces=context.generate_design_space(),
                       database=db, cost_model=model)
    candidates = context.generate_measure_candidates() or []
    context.post_tuning()
    return [c.sch for c in candidates]


def propose_items(builder, workloads: list, db_dir: str, count: int) -> list:
    """One work item per workload and arch: its next ``count`` candidates."""
    from .schedules import cuda_target, prim_func
    from .workloads import build_te
    if len(builder.options.archs) != 1:
        raise TuningError(f"tuning candidates are built for one arch, the one they are measured on; got "
                          f"{', '.join(builder.options.archs)}: give one --arch (sm_90a for an H100)")
    db = open_database(db_dir, create=True)
    digest = database_digest(db_dir)
    items = []
    for w in workloads:
        func = prim_func(build_te(w), w.symbol)
        for arch in builder.options.archs:
            target = cuda_target(arch)
            _, records = workload_records(db, tuning_module(func, target))
            check_target(records, target, db_dir, w.group_id)
            trials = len(records)
            items.append(WorkItem(
                key=f"{w.group_id}/{arch}/propose/t{trials}/{digest[:16]}/n{count}/s{builder.options.sample_seed}",
                group_id=w.group_id, label=f"{w.name} {w.size} {arch} tuning candidates after {trials} trials",
                payload={"workload": w, "arch": arch, "tuning": "propose", "db": str(db_dir), "count": count,
                         "trials": trials, "digest": digest, "seed": builder.options.sample_seed},
                rows=count))
    return items


def _seeded_schedules(func, target, seed: int):
    """MetaSchedule's seeded samples in the default build's order (design space ``i - 1``
    modulo the spaces, ``rand_state = sample_seed(seed, i)``), postprocessed after MetaSchedule's
    ``enter_postproc`` marker as its own search does: (Schedule, trace or None), endlessly."""
    from .schedules import DesignSpaces, Schedule, sample_seed
    spaces = DesignSpaces(func, target)
    index = 0
    while True:
        index += 1
        space, rand_state = (index - 1) % len(spaces.traces), sample_seed(seed, index)
        variant = {"space": space, "rand_state": rand_state}
        key = f"ms/{space}/{rand_state}"
        try:
            sch = spaces.sample(space, rand_state)
            sch.enter_postproc()
            rejected = next((type(p).__name__ for p in spaces.postprocs if not p.apply(sch)), None)
        except Exception as exc:  # TVM raises its own error types
            yield Schedule("metaschedule", key, variant, error=f"{type(exc).__name__}: {exc}"[:4000]), None
            continue
        if rejected:
            yield Schedule("metaschedule", key, variant, error=f"postprocessor {rejected} rejected the sample"), None
        else:
            yield Schedule("metaschedule", key, variant, sch.mod), sch.trace


def _proposals(func, target, payload: dict):
    """A propose item's candidates, in order: (Schedule, search kind, trace or None)."""
    from .schedules import Schedule
    if payload["trials"] == 0:
        for sch, trace in _seeded_schedules(func, target, payload["seed"]):
            yield sch, "seeded", trace
        return
    db = open_database(payload["db"])
    _, records = workload_records(db, tuning_module(func, target))
    rand_state = int(payload["digest"][:8], 16) ^ (payload["seed"] & 0x7FFFFFFF)
    measured = {trace_json(r.trace) for r in records}
    for i, sch in enumerate(evolutionary_schedules(func, target, db, records, OVERSAMPLE * payload["count"],
                                                   rand_state)):
        if trace_json(sch.trace) in measured:   # the search's own check lets a few through
            continue
        yield Schedule("metaschedule", f"evo/{i}", {}, sch.mod), "evolutionary", sch.trace


def build_propose_item(builder, item: WorkItem) -> list:
    from .schedules import cuda_target, prim_func
    from .workloads import build_te
    p = item.payload
    w, arch = p["workload"], p["arch"]
    func, target = prim_func(build_te(w), w.symbol), cuda_target(arch)
    rows = RowMaker(builder, w, arch, max_failed=MAX_FAILED_ROWS)
    for n, (sch, search, trace) in enumerate(_proposals(func, target, p)):
        if rows.built >= p["count"] or n >= p["count"] * DRAWS_PER_MEMBER:
            break
        if sch.error.startswith("postprocessor"):
            rows.reject()
            continue
        sch.variant = {"generator": PROPOSAL, "search": search, "after_trials": p["trials"], **sch.variant}
        if trace is not None:
            sch.variant.update(trace=str(trace), trace_json=trace_json(trace))
        sch.key = f"tune/t{p['trials']}/{search}/{n}"
        rows.add(sch, {"tuning": {"db_digest": p["digest"], "trials": p["trials"], "search": search}})
    return rows.finish()
