"""Run a sweep's points on worker processes of this machine: `systolic compare --jobs N`.

The workers are started fresh (the forkserver context where the platform has it, else spawn:
never fork, which would copy a parent's threads and locks). The integer graph, the inputs and
the backend are pickled once, in this process, and handed to every worker once, by the pool's
initializer; each point then ships only its configuration and label and returns its
`ConfigResult`. Results reach `on_result` as they finish; `compute_points` puts them back in
sweep order.

Points whose configurations differ only in their bus width go to one worker together, run one
after the other: the bus width is read by the mapper's plans only, so the second point takes
from the first the code of every layer whose plan the bus does not change
(`systolic.mapper.lowering.layer_templates`), which a worker of its own would schedule again.
"""

import dataclasses
import multiprocessing
import pickle
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed

from systolic.compare.point import OnResult, Point, Work
from systolic.compare.result import ConfigResult
from systolic.config import ArrayConfig

__all__ = ["ProcessRunner", "bus_groups", "start_method"]

_ANY_BUS = ArrayConfig().bus_bytes
"""The bus width of every `bus_groups` key."""

_WORK: Work | None = None
"""A worker's integer graph, inputs and backend, set once by `_start_worker`."""


def start_method() -> str:
    """Return "forkserver" where the platform has it, else "spawn"."""
    methods = multiprocessing.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"


def _start_worker(payload: bytes) -> None:
    global _WORK
    _WORK = pickle.loads(payload)


_Indexed = tuple[int, ArrayConfig, str]
"""A point and its index in the runner's list."""


def _run(group: Sequence[_Indexed]) -> list[tuple[int, ConfigResult]]:
    """Run a group of points (`bus_groups`) one after the other; return (index, result) of
    each."""
    assert _WORK is not None, "the worker was started without its model"
    return [(index, _WORK.run(config, label)) for index, config, label in group]


def bus_groups(points: Sequence[Point]) -> list[list[_Indexed]]:
    """Return the points with their indices, grouped by configuration but for the bus width,
    each group in the points' order and the groups in the order of their first point."""
    groups: dict[ArrayConfig, list[_Indexed]] = {}
    for index, (config, label) in enumerate(points):
        key = dataclasses.replace(config, bus_bytes=_ANY_BUS)
        groups.setdefault(key, []).append((index, config, label))
    return list(groups.values())


class ProcessRunner:
    """Runs points on `jobs` worker processes (module docstring)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def __call__(self, work: Work, points: Sequence[Point], on_result: OnResult) -> None:
        payload = pickle.dumps(work, pickle.HIGHEST_PROTOCOL)
        context = multiprocessing.get_context(start_method())
        with ProcessPoolExecutor(self.jobs, mp_context=context, initializer=_start_worker,
                                 initargs=(payload,)) as pool:  # fmt: skip
            futures = [pool.submit(_run, group) for group in bus_groups(points)]
            _collect(pool, futures, on_result)


def _collect(
    pool: ProcessPoolExecutor,
    futures: list["Future[list[tuple[int, ConfigResult]]]"],
    on_result: OnResult,
) -> None:
    """Hand each result to `on_result` as its group finishes; on an error, cancel what has
    not started and raise it."""
    try:
        for future in as_completed(futures):
            for index, result in future.result():
                on_result(index, result)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
