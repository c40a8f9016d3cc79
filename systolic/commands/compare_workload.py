"""The workload and engine options of `systolic compare`: which models (`--model PATH[:W]`,
`--workload FILE.toml`, or the positional MODEL), at which clock (`--clock-mhz`), where the
points run (`--jobs N`, default every core; `--scheduler tcp://HOST:PORT` for a Dask cluster)
and whether the results cache answers (`--no-cache`); `--pareto-plot`; `--energy-table`
(the per-action energies of every point, docs/energy.md); and the sweep of every model."""

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from systolic.errors import ConfigError

if TYPE_CHECKING:
    from systolic.compare.points import Engine
    from systolic.compare.result import ConfigResult
    from systolic.compare.sweep import PreparedModel
    from systolic.compare.workload import WorkloadModel, WorkloadResult
    from systolic.config import ArrayConfig
    from systolic.sim.energy.table import EnergyTable
    from systolic.simulation.outputs import PendingFiles

__all__ = [
    "Progress",
    "add_workload_arguments",
    "check_workload_arguments",
    "stage_pareto_plot",
    "sweep_models",
    "topology_engine",
    "workload_models",
]

DEFAULT_CLOCK_MHZ = 1000.0
PLOT_FORMATS = ("png", "svg", "pdf")


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of the module docstring."""
    group = parser.add_argument_group("workload and engine")
    group.add_argument(
        "--model",
        dest="models",
        action="append",
        metavar="PATH[:WEIGHT]",
        help="a model of the workload and its weight (default 1); repeatable",
    )
    group.add_argument(
        "--workload",
        metavar="FILE.toml",
        help="the workload's models: [[model]] tables with path and weight",
    )
    group.add_argument(
        "--clock-mhz",
        type=float,
        default=DEFAULT_CLOCK_MHZ,
        metavar="MHZ",
        help=f"clock of the reported times (default {DEFAULT_CLOCK_MHZ:g})",
    )
    group.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="worker processes (default: every core; 1 runs in this process)",
    )
    group.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="run the points on this Dask scheduler (pip install 'systolic[cluster]')",
    )
    group.add_argument(
        "--pareto-plot",
        metavar="PATH",
        help="draw the Pareto front: time against PEs and SRAM (.png, .svg or .pdf; matplotlib)",
    )
    group.add_argument(
        "--no-cache",
        action="store_true",
        help="compute every point again, neither reading nor writing the cache",
    )


def workload_models(args: argparse.Namespace) -> list["WorkloadModel"]:
    """Return the workload's models (the bundled example when none is given)."""
    from systolic.compare.workload import WorkloadModel, parse_model_option, read_workload
    from systolic.examples import DEFAULT_EXAMPLE

    if args.workload is not None:
        return read_workload(args.workload)
    if args.models:
        return [parse_model_option(text) for text in args.models]
    return [WorkloadModel(args.model if args.model is not None else f"bundled:{DEFAULT_EXAMPLE}")]


def check_workload_arguments(args: argparse.Namespace) -> None:
    """Refuse conflicting or impossible workload and engine options (one line each)."""
    given = [
        name
        for name, value in (
            ("MODEL", args.model),
            ("--model", args.models),
            ("--workload", args.workload),
            ("--topology", args.topology),
        )
        if value
    ]
    if len(given) > 1:
        raise ConfigError(
            f"give one of MODEL, --model, --workload and --topology, not {' and '.join(given)}"
        )
    if not (args.clock_mhz > 0 and args.clock_mhz < float("inf")):
        raise ConfigError(f"--clock-mhz must be a number above 0, not {args.clock_mhz:g}")
    if args.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, not {args.jobs}")
    if args.scheduler is not None and "://" not in args.scheduler:
        raise ConfigError(
            f"--scheduler {args.scheduler!r} is not an address such as tcp://HOST:8786"
        )
    if args.pareto_plot is not None:
        _check_pareto_plot(args)
    if len(workload_models(args)) > 1:
        for option, value in (
            ("--input", args.input),
            ("--scalesim-topology", args.scalesim_topology),
        ):
            if value is not None:
                raise ConfigError(f"{option} is for one model; this workload has several")


def _check_pareto_plot(args: argparse.Namespace) -> None:
    from systolic.commands.output_paths import check_output_file

    path = args.pareto_plot
    if Path(path).suffix.lstrip(".").lower() not in PLOT_FORMATS:
        raise ConfigError(f"--pareto-plot {path!r} must name a .png, .svg or .pdf file")
    others = (args.csv, args.json, args.plot, args.scalesim_topology, args.model, args.input,
              args.workload, *(args.models or ()))  # fmt: skip
    if any(o is not None and Path(o).resolve() == Path(path).resolve() for o in others):
        raise ConfigError(f"--pareto-plot {path!r} names another input or output file")
    check_output_file("--pareto-plot", path)


def stage_pareto_plot(
    files: "PendingFiles", path: str, workload: Sequence["WorkloadResult"]
) -> None:
    """Stage the Pareto chart (`systolic.compare.pareto_plot`) at `path`."""
    from systolic.compare.pareto_plot import pareto_plot_bytes

    files.stage(path, pareto_plot_bytes(workload, Path(path).suffix.lstrip(".").lower()))


def model_file(model: "WorkloadModel") -> Path:
    """Return the file of a workload model (the bundled example for "bundled:NAME")."""
    from systolic.examples import example_path

    return example_path() if model.path.startswith("bundled:") else Path(model.path)


def topology_engine(args: argparse.Namespace) -> "Engine":
    """Return where a --topology's points run (they are not cached)."""
    from systolic.compare.points import Engine

    return Engine(jobs=args.jobs, scheduler=args.scheduler, energy_table=_energy_table(args))


def _energy_table(args: argparse.Namespace) -> "EnergyTable | None":
    """Return the --energy-table (None: the bundled table)."""
    from systolic.sim.energy.table import EnergyTable

    path = getattr(args, "energy_table", None)
    return None if path is None else EnergyTable.load(path)


def _engine(args: argparse.Namespace, model: "WorkloadModel") -> "Engine":
    from systolic.compare.cache import ResultCache, energy_key, model_key
    from systolic.compare.points import Engine

    table = _energy_table(args)
    cache = None
    if not args.no_cache:
        cache = ResultCache(model_key(model_file(model), args.input, args.seed),
                            energy=energy_key(table))  # fmt: skip
    return Engine(jobs=args.jobs, scheduler=args.scheduler, cache=cache, energy_table=table)


def sweep_models(
    args: argparse.Namespace,
    models: Sequence["WorkloadModel"],
    configs: Sequence["ArrayConfig"],
    progress: Callable[[str], None],
    prepared_hook: Callable[["PreparedModel"], None],
) -> tuple[list[list["ConfigResult"]], str]:
    """Prepare and sweep every model; return each model's results and the input source.
    `prepared_hook` sees each model after the passes."""
    from systolic.compare.sweep import prepare_model, sweep

    per_model, source = [], ""
    for model in models:
        # cycles do not depend on values: a weight-less model runs on placeholder weights
        prepared = prepare_model(
            model_file(model), input_path=args.input, seed=args.seed, weightless=True
        )
        prepared_hook(prepared)
        source = prepared.input_source
        per_model.append(
            sweep(
                prepared,
                configs,
                backend=args.backend,
                progress=progress,
                engine=_engine(args, model),
            )
        )
    return per_model, source


class Progress:
    """Counts finished points on standard error: "compare: 3/16 16x16 ws"."""

    def __init__(self, total: int, chatty: bool) -> None:
        self.total, self.chatty, self.done = total, chatty, 0

    def __call__(self, label: str) -> None:
        self.done += 1
        if self.chatty:
            print(f"compare: {self.done}/{self.total} {label}", file=sys.stderr, flush=True)
