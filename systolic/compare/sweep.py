"""Run one model over a grid of configurations: the work of `systolic compare MODEL`.

`prepare_model` (`systolic.simulation.prepare`, the first step of `systolic simulate` too)
loads the model and its inputs and runs the mapper passes once. `sweep` then compiles the
integer graph for every configuration and runs it on the backend (`layer_cycles`): the
per-layer cycles, stalls and utilization of each configuration (`ConfigResult`), in the
per-layer rows of `systolic simulate` (`systolic.simulation.layer_rows`).
"""

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from systolic.compare.grid import config_label
from systolic.compare.layer_cycles import check_backend
from systolic.compare.point import run_config
from systolic.compare.points import IN_PROCESS, Engine, compute_points
from systolic.compare.result import ConfigResult
from systolic.config import ArrayConfig
from systolic.ir import Graph, Model
from systolic.simulation.prepare import PreparedModel, prepare_model

__all__ = [
    "Engine", "PreparedModel", "prepare_model", "run_config", "sweep", "sweep_graph",
    "varying_fields",
]  # fmt: skip

_FIELDS = (("array", ("rows", "cols")), ("dataflow", ("dataflow",)),
           ("spad_kib", ("spad_kib",)), ("acc_kib", ("acc_kib",)),
           ("bus_bytes", ("bus_bytes",)))  # fmt: skip


def varying_fields(configs: Sequence[ArrayConfig]) -> list[str]:
    """Return the `config_label` fields whose value differs between `configs` (array size and
    dataflow when none does)."""
    varying = [
        name
        for name, attrs in _FIELDS
        if len({tuple(getattr(c, a) for a in attrs) for c in configs}) > 1
    ]
    return varying or ["array", "dataflow"]


def sweep_graph(
    integer: Model | Graph,
    inputs: Mapping[str, np.ndarray] | None,
    configs: Sequence[ArrayConfig],
    *,
    backend: str = "model",
    progress: Callable[[str], None] | None = None,
    engine: Engine = IN_PROCESS,
) -> list[ConfigResult]:
    """Return the results of compiling and running `integer` for every configuration, in
    order, on `engine` (in this process by default; `systolic.compare.points`);
    `progress(label)` is called as each finishes. A configuration that cannot run the model
    gives a result with its reason in `error`."""
    check_backend(backend)
    varying = varying_fields(configs)
    points = [(config, config_label(config, varying)) for config in configs]
    return compute_points(integer, inputs, points, backend=backend, engine=engine,
                          progress=progress)  # fmt: skip


def sweep(
    prepared: PreparedModel,
    configs: Sequence[ArrayConfig],
    *,
    backend: str = "model",
    progress: Callable[[str], None] | None = None,
    engine: Engine = IN_PROCESS,
) -> list[ConfigResult]:
    """Return the results of every configuration for a prepared model (`sweep_graph`)."""
    return sweep_graph(prepared.integer, prepared.inputs, configs, backend=backend,
                       progress=progress, engine=engine)  # fmt: skip
