"""A real Dask cluster on 127.0.0.1 for the tests: one `dask scheduler` and two `dask worker`
processes (one thread each, no nanny, so a killed worker stays lost), started from this
environment's Python and stopped at the end."""

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

START_TIMEOUT = 60.0
"""Seconds for the scheduler to write its address and both workers to connect."""


@contextmanager
def dask_cluster(
    folder: Path, workers: int = 2
) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """Yield the scheduler's address and the worker processes."""
    pytest.importorskip("distributed")
    from distributed import Client

    scheduler_file = folder / "scheduler.json"
    dask = [sys.executable, "-m", "dask"]
    common = ["--no-dashboard", "--host", "127.0.0.1"]
    log = (folder / "cluster.log").open("wb")
    processes = [subprocess.Popen([*dask, "scheduler", *common, "--port", "0",
                                   "--scheduler-file", str(scheduler_file)],
                                  stdout=log, stderr=log)]  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, "the Dask scheduler did not start"
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        worker = [*dask, "worker", address, *common, "--nthreads", "1", "--no-nanny",
                  "--death-timeout", "60"]  # fmt: skip
        started = [subprocess.Popen(worker, stdout=log, stderr=log) for _ in range(workers)]
        processes += started
        with Client(address, timeout="30s", set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=deadline - time.monotonic())
        yield address, started
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        log.close()
