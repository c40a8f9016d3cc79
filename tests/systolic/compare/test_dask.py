"""Sweeps on a real Dask cluster (`systolic.compare.distributed`): the in-process results in
the same order, and every point back when a worker is killed mid-sweep."""

import json
import signal
from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.compare.grid import config_grid
from systolic.compare.points import Engine
from systolic.compare.sweep import PreparedModel, sweep
from systolic.config import ArrayConfig

from .dask_cluster import dask_cluster

GRID = {"arrays": ["4x4", "8x8", "4x8", "8x4"], "dataflows": ["ws", "os"], "bus_bytes": [8, 16]}


def test_a_cluster_gives_the_serial_results_in_order(
    lenet: PreparedModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = config_grid(ArrayConfig(), **GRID)[:6]
    finished: list[str] = []
    cli = ["compare", "--array", "4x4,8x8", "--no-cache", "--json", "-"]
    with dask_cluster(tmp_path) as (address, _):
        remote = sweep(lenet, configs, engine=Engine(scheduler=address), progress=finished.append)
        assert main([*cli, "--scheduler", address]) == 0
        through_cli = capsys.readouterr()
    serial = sweep(lenet, configs)
    assert remote == serial
    assert sorted(finished) == sorted(r.label for r in serial)
    assert main([*cli, "--jobs", "1"]) == 0
    assert json.loads(through_cli.out) == json.loads(capsys.readouterr().out)


def test_a_killed_worker_loses_no_point(lenet: PreparedModel, tmp_path: Path) -> None:
    configs = config_grid(ArrayConfig(), **GRID)
    finished: list[str] = []
    with dask_cluster(tmp_path) as (address, workers):

        def kill_after_the_first(label: str) -> None:
            if not finished:
                workers[0].send_signal(signal.SIGKILL)
                workers[0].wait(timeout=10)
            finished.append(label)

        remote = sweep(lenet, configs, engine=Engine(scheduler=address),
                       progress=kill_after_the_first)  # fmt: skip
        assert workers[0].returncode == -signal.SIGKILL
        assert workers[1].poll() is None
    assert remote == sweep(lenet, configs)
    assert sorted(finished) == sorted(result.label for result in remote)
