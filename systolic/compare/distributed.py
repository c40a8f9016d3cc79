"""Run a sweep's points on a Dask distributed cluster: `systolic compare --scheduler
tcp://HOST:PORT` (needs the `cluster` extra: `pip install 'systolic[cluster]'`).

The integer graph, the inputs and the backend are scattered once to every worker
(`broadcast`); each point is one task that ships its configuration and label and returns its
`ConfigResult`. Tasks are submitted with `retries`, and the scheduler reruns the tasks of a
worker that is lost, so every point comes back while one worker lives; results reach
`on_result` as they finish and `compute_points` puts them back in sweep order. The workers
need the same `systolic` installed as this process.
"""

import uuid
from collections.abc import Sequence
from typing import Any

from systolic.compare.point import OnResult, Point, Work
from systolic.compare.result import ConfigResult
from systolic.config import ArrayConfig
from systolic.errors import ConfigError, SimulationError

__all__ = ["RETRIES", "DaskRunner"]

RETRIES = 3
"""How many times a point whose task raised is submitted again."""
CONNECT_TIMEOUT = "20s"


def _run(work: Work, config: ArrayConfig, label: str) -> ConfigResult:
    return work.run(config, label)


def _client(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError(
            "--scheduler needs dask.distributed: pip install 'systolic[cluster]'"
        ) from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise SimulationError(f"cannot reach the Dask scheduler {address}: {err}") from None


class DaskRunner:
    """Runs points as tasks of the Dask scheduler at `address` (module docstring)."""

    def __init__(self, address: str) -> None:
        self.address = address

    def __call__(self, work: Work, points: Sequence[Point], on_result: OnResult) -> None:
        from distributed import as_completed

        with _client(self.address) as client:
            state = client.scatter(work, broadcast=True)
            run = uuid.uuid4().hex[:12]
            futures = [client.submit(_run, state, config, label, key=f"systolic-{run}-{i}",
                                     retries=RETRIES, pure=False)
                       for i, (config, label) in enumerate(points)]  # fmt: skip
            index = {future.key: i for i, future in enumerate(futures)}
            for future in as_completed(futures, loop=client.loop):
                on_result(index[future.key], future.result())
