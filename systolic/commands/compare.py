"""`systolic compare [MODEL]`: cycles, stalls, utilization, energy and estimated area of one
model on many configurations.

Runs the mapper passes once, then compiles and runs the model for every combination of the
listed array sizes, dataflows, scratchpad, accumulator and bus sizes (default backend: the
analytic cycle model, which equals the RTL cycle for cycle), and prints a summary and a
per-layer table with the configurations side by side. `--csv`, `--json` and `--plot` write
the results. The workload table's area (mm²) comes from the analytic area model fitted to
synthesized configurations (systolic.compare.area_model; its assumptions and held-out error in
bench/area_model.md), no synthesis per point; `--scalesim-topology` writes the model's conv and GEMM layers as a SCALE-Sim
topology CSV, and `--topology` reports our cycles for a SCALE-Sim topology instead of a model.
Without MODEL it runs the bundled example (a quantized LeNet). Any error is one line (exit 2)
and then nothing is written: the output paths are checked before the work (a folder, a path
below a file, an unwritable folder or the model, --topology or --input file itself is refused).
"""

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from systolic.commands.compare_workload import (
    Progress,
    add_workload_arguments,
    check_workload_arguments,
    stage_pareto_plot,
    sweep_models,
    topology_engine,
    workload_models,
)
from systolic.commands.config_args import add_without_argument
from systolic.commands.energy_args import add_energy_arguments, table_from_args
from systolic.commands.model_loading import add_model_arguments
from systolic.commands.output_paths import check_output_file
from systolic.config import ArrayConfig
from systolic.config_units import parse_units
from systolic.errors import ConfigError

if TYPE_CHECKING:
    from systolic.compare.sweep import PreparedModel
    from systolic.compare.workload import WorkloadResult

__all__ = ["register", "run"]

_DEFAULT = ArrayConfig()
PLOT_FORMATS = ("png", "svg", "pdf")


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the `compare` subcommand."""
    parser = subparsers.add_parser(
        "compare",
        help="compare cycles, stalls and utilization of a model across configurations",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    add_model_arguments(
        parser,
        input_help=".npy/.npz input: calibrates float models and feeds the simulating backends "
        "(default: a seeded random input)",
        seed_help="seed of the random input or topology weights (default 0)",
    )
    parser.add_argument(
        "--topology", metavar="IN.csv",
        help="report our cycles for the layers of a SCALE-Sim topology CSV instead of a model "
        "(seeded random weights)",
    )  # fmt: skip
    parser.add_argument(
        "--scalesim-topology", metavar="OUT.csv",
        help="also write the model's conv and GEMM layers as a SCALE-Sim topology CSV",
    )  # fmt: skip
    grid = parser.add_argument_group("configurations (comma-separated lists; every combination)")
    grid.add_argument("--array", metavar="RxC,...", default=_DEFAULT.shape_text,
                      help=f"array sizes (default {_DEFAULT.shape_text})")  # fmt: skip
    grid.add_argument("--dataflow", metavar="ws,os,both", default="ws,os",
                      help="dataflows (default ws,os; both: an array that runs either, "
                           "chosen per layer)")  # fmt: skip
    for name, help_text in (
        ("spad_kib", "scratchpad sizes in KiB"),
        ("acc_kib", "accumulator memory sizes in KiB"),
        ("bus_bytes", "external bus widths in bytes"),
    ):
        default = getattr(_DEFAULT, name)
        grid.add_argument("--" + name.replace("_", "-"), metavar="N,...", default=str(default),
                          help=f"{help_text} (default {default})")  # fmt: skip
    grid.add_argument(
        "--mem-latency", metavar="N", type=int, default=_DEFAULT.mem_latency,
        help=f"external memory read latency in cycles, one value (default {_DEFAULT.mem_latency})",
    )  # fmt: skip
    add_without_argument(grid)
    parser.add_argument(
        "--backend", metavar="model|rtl|verilator", default="model",
        help="model: the analytic cycle model (default, fast); rtl: the Amaranth simulator; "
        "verilator: the emitted Verilog under Verilator (same cycles, much slower)",
    )  # fmt: skip
    parser.add_argument("--csv", metavar="PATH", help="write one row per configuration and layer")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON ('-': stdout)")
    parser.add_argument(
        "--plot", metavar="PATH",
        help="draw total cycles and utilization per configuration (.png, .svg or .pdf; needs "
        "matplotlib: pip install 'systolic[plot]')",
    )  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="print only errors")
    add_workload_arguments(parser)
    add_energy_arguments(parser, clock=False)
    parser.set_defaults(run=run)


def _configs(args: argparse.Namespace) -> list[ArrayConfig]:
    from systolic.compare.grid import config_grid, parse_int_list, parse_list

    base = dataclasses.replace(_DEFAULT, mem_latency=args.mem_latency,
                               without=parse_units(args.without))
    return config_grid(
        base,
        arrays=parse_list("--array", args.array),
        dataflows=parse_list("--dataflow", args.dataflow),
        spad_kib=parse_int_list("--spad-kib", args.spad_kib),
        acc_kib=parse_int_list("--acc-kib", args.acc_kib),
        bus_bytes=parse_int_list("--bus-bytes", args.bus_bytes),
    )


def _check_arguments(args: argparse.Namespace) -> None:
    if args.topology is not None:
        if args.model is not None:
            raise ConfigError("give a MODEL or --topology, not both")
        if args.scalesim_topology is not None:
            raise ConfigError(
                "--scalesim-topology writes a model's layers and --topology reads a topology: "
                "use one of them"
            )
        if args.input is not None:
            raise ConfigError("--input feeds a model; a --topology runs on random values")
    if args.plot is not None and Path(args.plot).suffix.lstrip(".").lower() not in PLOT_FORMATS:
        raise ConfigError(f"--plot {args.plot!r} must name a .png, .svg or .pdf file")
    targets = [p for p in (args.csv, args.json, args.plot, args.scalesim_topology)
               if p is not None and p != "-"]  # fmt: skip
    if len({Path(p).resolve() for p in targets}) != len(targets):
        raise ConfigError("--csv, --json, --plot and --scalesim-topology must name different files")
    if args.csv == "-" or args.plot == "-" or args.scalesim_topology == "-":
        raise ConfigError("only --json can write to standard output ('-')")
    models = [m.path for m in workload_models(args) if args.models or args.workload]
    sources = {Path(p).resolve() for p in (args.model, args.topology, args.input, args.workload,
                                           *models) if p is not None}  # fmt: skip
    for option, path in (("--csv", args.csv), ("--json", args.json), ("--plot", args.plot),
                         ("--scalesim-topology", args.scalesim_topology)):  # fmt: skip
        if path is None or path == "-":
            continue
        if Path(path).resolve() in sources:
            raise ConfigError(
                f"{option} {path!r} would overwrite the model, --topology or --input file: "
                f"choose another path"
            )
        check_output_file(option, path)


def run(args: argparse.Namespace) -> int:
    """Compare, print the tables, write the requested files; return the exit status."""
    from systolic.compare.from_topology import topology_sweep
    from systolic.compare.layer_cycles import check_backend
    from systolic.compare.pareto import mark_pareto
    from systolic.compare.plot import check_plot_available, plot_bytes
    from systolic.compare.result import CompareReport
    from systolic.compare.to_topology import model_topology
    from systolic.compare.topology import format_topology, read_topology
    from systolic.compare.workload import WorkloadModel, combine
    from systolic.compare.workload_report import flat_results, workload_csv, workload_json
    from systolic.simulation.engine import engine_name
    from systolic.simulation.outputs import PendingFiles

    configs = _configs(args)
    check_backend(args.backend)
    _check_arguments(args)
    check_workload_arguments(args)
    table_from_args(args)  # a bad --energy-table fails before the work
    if args.plot is not None or args.pareto_plot is not None:
        check_plot_available()
    chatty = not args.quiet and args.json != "-"

    topology_texts = []
    if args.topology is not None:
        models = [WorkloadModel(args.topology)]
        layers = read_topology(args.topology)
        per_model = [topology_sweep(layers, configs, backend=args.backend, seed=args.seed,
                                    progress=Progress(len(configs), chatty),
                                    engine=topology_engine(args))]  # fmt: skip
        source, input_source = "topology", f"random weights seed {args.seed}"
    else:
        models = workload_models(args)
        progress = Progress(len(configs) * len(models), chatty)

        def prepared_hook(prepared: "PreparedModel") -> None:
            if args.scalesim_topology is not None:
                topology_texts.append(format_topology(model_topology(prepared.integer)))

        per_model, input_source = sweep_models(args, models, configs, progress, prepared_hook)
        source = "model"
    workload = mark_pareto(combine(models, per_model, args.clock_mhz))
    results = flat_results(workload)
    report = CompareReport(source, " + ".join(m.path for m in models), args.backend,
                           input_source, results, engine=engine_name(args.backend))  # fmt: skip
    text = json.dumps(workload_json(report.to_json(), workload), indent=2) + "\n"
    with PendingFiles() as files:
        if args.csv is not None:
            files.stage(args.csv, workload_csv(workload))
        if args.json is not None and args.json != "-":
            files.stage(args.json, text)
        if args.plot is not None:
            suffix = Path(args.plot).suffix.lstrip(".").lower()
            files.stage(args.plot, plot_bytes(per_model[0], models[0].path, suffix))
        if topology_texts:
            files.stage(args.scalesim_topology, topology_texts[0])
        if args.pareto_plot is not None:
            stage_pareto_plot(files, args.pareto_plot, workload)
        written = files.commit()
    if args.json == "-":
        sys.stdout.write(text)
    elif not args.quiet:
        sys.stdout.write(_summary(args.backend, workload, written))
    return 0


def _summary(backend: str, workload: Sequence["WorkloadResult"], written: list[Path]) -> str:
    from systolic.commands.terminal_width import table_width
    from systolic.compare.tables import render_layers, render_summary
    from systolic.compare.workload_table import render_workload
    from systolic.simulation.engine import engine_line
    from systolic.text import printable

    engine = engine_line(backend)  # which engine ran the model backend
    width = table_width()
    lines: list[str] = []
    for index, model in enumerate(workload[0].models if workload else ()):
        results = [entry.results[index] for entry in workload]
        lines += [f"{printable(model.path)}: {len(results)} configurations, backend {backend}",
                  *([engine] if engine else []), "",
                  render_summary(results, width).rstrip("\n"), "",
                  render_layers(results, width).rstrip("\n"), ""]  # fmt: skip
    lines += [render_workload(workload, width).rstrip("\n")]
    lines += [f"wrote {path}" for path in written]
    return "\n".join(lines) + "\n"
