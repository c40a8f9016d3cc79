"""Run a sweep's points on worker processes of this machine: `systolic compare --jobs N`.

The workers are started fresh (the forkserver context where the platform has it, else spawn:
never fork, which would copy a parent's threads and locks). The integer graph, the inputs and
the backend are pickled once, in this process, and handed to every worker once, by the pool's
initializer; each point then ships only its configuration and label and returns its
`ConfigResult`. Results reach `on_result` as they finish; `compute_points` puts them back in
sweep order.
"""

import multiprocessing
import pickle
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed

from systolic.compare.point import OnResult, Point, Work
from systolic.compare.result import ConfigResult
from systolic.config import ArrayConfig

__all__ = ["ProcessRunner", "start_method"]

_WORK: Work | None = None
"""A worker's integer graph, inputs and backend, set once by `_start_worker`."""


def start_method() -> str:
    """Return "forkserver" where the platform has it, else "spawn"."""
    methods = multiprocessing.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"


def _start_worker(payload: bytes) -> None:
    global _WORK
    _WORK = pickle.loads(payload)


def _run(index: int, config: ArrayConfig, label: str) -> tuple[int, ConfigResult]:
    assert _WORK is not None, "the worker was started without its model"
    return index, _WORK.run(config, label)


class ProcessRunner:
    """Runs points on `jobs` worker processes (module docstring)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def __call__(self, work: Work, points: Sequence[Point], on_result: OnResult) -> None:
        payload = pickle.dumps(work, pickle.HIGHEST_PROTOCOL)
        context = multiprocessing.get_context(start_method())
        with ProcessPoolExecutor(self.jobs, mp_context=context, initializer=_start_worker,
                                 initargs=(payload,)) as pool:  # fmt: skip
            futures = [pool.submit(_run, index, config, label)
                       for index, (config, label) in enumerate(points)]  # fmt: skip
            _collect(pool, futures, on_result)


def _collect(
    pool: ProcessPoolExecutor,
    futures: list["Future[tuple[int, ConfigResult]]"],
    on_result: OnResult,
) -> None:
    """Hand each result to `on_result` as it finishes; on an error, cancel what has not
    started and raise it."""
    try:
        for future in as_completed(futures):
            on_result(*future.result())
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
