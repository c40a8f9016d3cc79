"""Compute the points of a sweep on an engine, through the results cache: the loop behind
`sweep_graph`.

An `Engine` says where points run: in this process (`jobs=1`), on `jobs` worker processes
(`systolic.compare.parallel`), or on a Dask cluster (`scheduler`, `systolic.compare.
distributed`); and whether a `ResultCache` (`systolic.compare.cache`) answers the points it
holds. `compute_points` returns the results in the order of the points whatever order the
engine finishes them in, stores every successful new result in the cache, and calls
`progress(label)` as each point finishes (a cached one at once).
"""

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from systolic.compare.cache import ResultCache
from systolic.compare.point import OnResult, Point, Work
from systolic.compare.result import ConfigResult
from systolic.ir import Graph, Model
from systolic.sim.energy.table import EnergyTable

__all__ = ["IN_PROCESS", "Engine", "compute_points", "run_serially"]


@dataclasses.dataclass(frozen=True)
class Engine:
    """Where a sweep's points run (module docstring)."""

    jobs: int = 1
    scheduler: str | None = None
    cache: ResultCache | None = None
    energy_table: EnergyTable | None = None
    """The per-action energies of every point (None: the bundled 45 nm table); a cache
    given with a table must be keyed by it (`ResultCache.energy`)."""


IN_PROCESS = Engine()
"""Every point in this process, no cache: what the library functions do by default."""


def run_serially(work: Work, points: Sequence[Point], on_result: OnResult) -> None:
    """Run every point in this process, in order."""
    for index, (config, label) in enumerate(points):
        on_result(index, work.run(config, label))


def _runner(engine: Engine, count: int) -> Callable[..., None]:
    if engine.scheduler is not None:
        from systolic.compare.distributed import DaskRunner

        return DaskRunner(engine.scheduler)
    if engine.jobs > 1 and count > 1:
        from systolic.compare.parallel import ProcessRunner

        return ProcessRunner(min(engine.jobs, count))
    return run_serially


def compute_points(
    integer: Model | Graph,
    inputs: Mapping[str, np.ndarray] | None,
    points: Sequence[Point],
    *,
    backend: str,
    engine: Engine,
    progress: Callable[[str], None] | None = None,
) -> list[ConfigResult]:
    """Return the result of every point, in order (module docstring)."""
    results: list[ConfigResult | None] = [None] * len(points)
    todo: list[int] = []
    for index, (config, label) in enumerate(points):
        hit = engine.cache.load(config, backend, label) if engine.cache else None
        if hit is None:
            todo.append(index)
            continue
        results[index] = hit
        if progress is not None:
            progress(label)

    def finished(position: int, result: ConfigResult) -> None:
        results[todo[position]] = result
        if engine.cache is not None and not result.failed:
            engine.cache.store(result, backend)
        if progress is not None:
            progress(result.label)

    if todo:
        work = Work(integer, dict(inputs or {}), backend, engine.energy_table)
        _runner(engine, len(todo))(work, [points[i] for i in todo], finished)
    assert all(result is not None for result in results)
    return [result for result in results if result is not None]
