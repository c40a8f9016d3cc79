"""Sweeps on worker processes (`systolic.compare.parallel`) against the in-process sweep, and
a configuration that cannot run the model as one failed result among the others."""

import dataclasses
import pickle
from concurrent.futures import Future
from typing import Any, ClassVar, Self

import pytest

from systolic.compare import parallel
from systolic.compare.grid import config_grid
from systolic.compare.parallel import start_method
from systolic.compare.points import Engine
from systolic.compare.sweep import PreparedModel, sweep
from systolic.compare.tables import render_summary
from systolic.config import ArrayConfig

GRID = {"arrays": ["4x4", "8x8", "4x8"], "dataflows": ["ws", "os"]}


def test_two_workers_give_the_serial_results_in_order(lenet: PreparedModel) -> None:
    configs = config_grid(ArrayConfig(), **GRID)
    finished: list[str] = []
    parallel = sweep(lenet, configs, engine=Engine(jobs=2), progress=finished.append)
    serial = sweep(lenet, configs)
    assert parallel == serial
    assert [r.label for r in parallel] == ["4x4 ws", "4x4 os", "8x8 ws", "8x8 os", "4x8 ws",
                                           "4x8 os"]  # fmt: skip
    assert sorted(finished) == sorted(r.label for r in serial)
    assert all(not r.failed and r.total_cycles > 0 for r in parallel)


def test_a_failing_configuration_is_one_row_with_its_reason(lenet: PreparedModel) -> None:
    good = config_grid(ArrayConfig(), arrays=["4x4", "8x8"], dataflows=["ws"])
    bad = dataclasses.replace(good[0], input_width=16)
    configs = [good[0], bad, good[1]]
    for engine in (Engine(), Engine(jobs=2)):
        results = sweep(lenet, configs, engine=engine)
        assert [r.failed for r in results] == [False, True, False]
        assert results[1].error.startswith("the compiler targets 8-bit operands")
        assert results[1].layers == () and results[1].total_cycles == 0
        assert results[1].to_json()["error"] == results[1].error
        assert results[0].to_json()["error"] is None
        assert [results[0], results[2]] == sweep(lenet, good)


def test_workers_start_without_fork() -> None:
    assert start_method() in ("forkserver", "spawn")


def test_the_summary_names_a_failed_configuration(lenet: PreparedModel) -> None:
    good = config_grid(ArrayConfig(), arrays=["4x4"], dataflows=["ws"])[0]
    bad = dataclasses.replace(good, input_width=16)
    results = sweep(lenet, [good, bad])
    lines = render_summary(results).splitlines()
    assert lines[2].split() == [*results[1].label.split(), "failed", *["-"] * 8]
    assert lines[3] == f"{results[1].label}: {results[1].error}"


class _InlinePool:
    """A stand-in for ProcessPoolExecutor that records what would cross to the workers."""

    made: ClassVar[list["_InlinePool"]] = []

    def __init__(self, jobs: int, *, mp_context: object, initializer: Any,
                 initargs: tuple[bytes]) -> None:  # fmt: skip
        self.initargs, self.submitted = initargs, []
        initializer(*initargs)
        _InlinePool.made.append(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, function: Any, *args: object) -> "Future[Any]":
        self.submitted.append(args)
        future: Future[Any] = Future()
        future.set_result(function(*args))
        return future


def test_the_graph_crosses_once_per_worker_not_per_point(
    lenet: PreparedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", _InlinePool)
    configs = config_grid(ArrayConfig(), **GRID)
    assert sweep(lenet, configs, engine=Engine(jobs=2)) == sweep(lenet, configs)
    [pool] = _InlinePool.made
    assert pickle.loads(pool.initargs[0]).integer == lenet.integer
    labels = [result.label for result in sweep(lenet, configs)]
    submitted = [point for (group,) in pool.submitted for point in group]
    assert submitted == list(zip(range(len(configs)), configs, labels, strict=True))


def test_points_that_differ_only_in_the_bus_width_share_a_worker() -> None:
    configs = config_grid(ArrayConfig(), arrays=["4x4", "8x8"], dataflows=["ws"],
                          bus_bytes=[16, 64])  # fmt: skip
    points = [(config, str(index)) for index, config in enumerate(configs)]
    groups = parallel.bus_groups(points)
    assert [[index for index, _, _ in group] for group in groups] == [[0, 1], [2, 3]]
    assert [point for group in groups for point in group] == [
        (index, config, label) for index, (config, label) in enumerate(points)]  # fmt: skip
