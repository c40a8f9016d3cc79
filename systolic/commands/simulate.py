"""`systolic simulate [MODEL]`: run a model on the simulated accelerator and check it.

Maps the model (float models are quantized first), runs the program on the simulated
hardware, checks every accelerator output bit for bit against the numpy reference and, when
onnxruntime is installed, compares the final outputs with onnxruntime on the original model.
Prints a per-layer table (unit, MACs, cycles, stalls, array utilization, energy) and
totals, and the energy per inference by component (docs/energy.md; with --clock-mhz also
latency, inferences per second and TOPS/W). Without
MODEL it runs the bundled example (a quantized LeNet). Exit status 0 when every check
passes, 1 when the accelerator differs from the reference; any error is one line (exit 2)
and then nothing is written.
"""

import argparse
import contextlib
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from systolic.commands.config_args import add_config_arguments, config_from_args
from systolic.commands.energy_args import add_energy_arguments, clock_from_args, table_from_args
from systolic.commands.model_loading import (
    add_max_memory_argument,
    add_model_arguments,
    parse_size,
    seed_value,
)
from systolic.commands.output_paths import check_output_file
from systolic.commands.terminal_width import table_width
from systolic.errors import ConfigError
from systolic.simulation.report import OnnxruntimeExplanation, SimulationReport, render_table
from systolic.text import printable

__all__ = ["register", "run"]

EXIT_MISMATCH = 1
VCD_COST = "about 2x the time and 25 MB for the bundled LeNet's 4.7 k cycles; 6x with memories"
"""What --vcd costs, for its warning (measured: README, simulate)."""
_NAMED_LAYERS = 5
"""Saturating layers named in the onnxruntime explanation line; the rest are counted."""


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the `simulate` subcommand."""
    parser = subparsers.add_parser(
        "simulate",
        help="run a model on the simulated accelerator and check it bit for bit",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    add_model_arguments(parser)
    parser.add_argument(
        "--backend", metavar="rtl|verilator|model", default="rtl",
        help="rtl: the Amaranth simulator (default); verilator: the emitted Verilog under "
        "Verilator; model: the analytic cycle model with golden values (fast)",
    )  # fmt: skip
    parser.add_argument(
        "--output", metavar="FILE.npz",
        help="write the model's final outputs (by output name, in the model's output types)",
    )  # fmt: skip
    parser.add_argument(
        "--json", metavar="PATH", help="write the report and the checks as JSON ('-': stdout)"
    )
    parser.add_argument(
        "--vcd", metavar="PATH",
        help="write the waveform of the run (rtl backend; several runs: PATH-1.vcd, ...)",
    )  # fmt: skip
    parser.add_argument(
        "--trace", metavar="FILE.json",
        help="write the run as a Chrome trace (Perfetto, chrome://tracing): a track per unit, "
        "a slice per instruction named after its layer, 1 us = 1 cycle",
    )  # fmt: skip
    parser.add_argument(
        "--vcd-depth", type=_vcd_depth, metavar="N|all",
        help="with --vcd: the signals of the top module and N levels of submodules below it "
        "(default 1: the units' signals, not the PEs'; 'all': every signal)",
    )  # fmt: skip
    parser.add_argument(
        "--vcd-memories", action="store_true",
        help="with --vcd: also every memory row (scratchpads, accumulators: a much larger file)",
    )  # fmt: skip
    parser.add_argument(
        "--no-onnxruntime", action="store_true",
        help="skip the comparison with onnxruntime even when it is installed",
    )  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="print only errors and mismatches")
    parser.add_argument(
        "--host-ops-per-cycle", metavar="N", type=float,
        help="estimate the host layers' cycles at N operations (MACs and produced elements) "
             "per accelerator cycle and include them in the totals and the latency (default: "
             "host layers cost nothing and totals say 'accelerator only')",
    )  # fmt: skip
    add_energy_arguments(parser)
    add_max_memory_argument(parser)
    add_config_arguments(parser)
    parser.set_defaults(run=run)


def _check_paths(args: argparse.Namespace) -> None:
    if args.output is not None and not args.output.endswith(".npz"):
        raise ConfigError(f"--output {args.output!r} must name a .npz file (one array per output)")
    if args.vcd is not None and not args.vcd.endswith(".vcd"):
        raise ConfigError(f"--vcd {args.vcd!r} must name a .vcd file")
    if args.trace is not None and not args.trace.endswith(".json"):
        raise ConfigError(f"--trace {args.trace!r} must name a .json file")
    named = [(option, path) for option, path in
             (("--output", args.output), ("--json", args.json), ("--vcd", args.vcd),
              ("--trace", args.trace))
             if path is not None and path != "-"]  # fmt: skip
    resolved = [Path(path).resolve() for _, path in named]
    if len(set(resolved)) != len(resolved):
        raise ConfigError("--output, --json, --vcd and --trace must name different files")
    sources = {Path(p).resolve() for p in (args.model, args.input) if p is not None}
    for (option, path), where in zip(named, resolved, strict=True):
        if where in sources:
            raise ConfigError(f"{option} {path!r} would overwrite the model or --input file")
        check_output_file(option, path)


def _waveform(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """Return the context in which the run writes its VCD as --vcd-depth/--vcd-memories say;
    warn on standard error, when it is a terminal (as the progress bar), that a waveform slows
    the run."""
    if args.vcd is None:
        if args.vcd_depth is not None or args.vcd_memories:
            raise ConfigError("--vcd-depth and --vcd-memories need --vcd PATH")
        return contextlib.nullcontext()
    from systolic.sim.rtl.waveform import Waveform, waveform_options

    if args.backend == "rtl" and sys.stderr.isatty():
        print(f"systolic: warning: --vcd slows the rtl backend ({VCD_COST}); --vcd-depth N "
              f"makes it smaller and faster", file=sys.stderr)  # fmt: skip
    waveform = Waveform(memories=args.vcd_memories)  # the default depth unless given
    if args.vcd_depth is not None:
        depth = None if args.vcd_depth == "all" else args.vcd_depth
        waveform = dataclasses.replace(waveform, depth=depth)
    return waveform_options(waveform)


def _host_ops_per_cycle(value: float | None) -> float | None:
    """--host-ops-per-cycle: None, or a finite number above 0 (ConfigError otherwise)."""
    from systolic.simulation.host_cost import check_host_ops_per_cycle

    if value is None:
        return None
    try:
        return check_host_ops_per_cycle(value)
    except ValueError:
        raise ConfigError(f"--host-ops-per-cycle must be a number above 0, not {value:g}") \
            from None


def _vcd_depth(text: str) -> int | str:
    """--vcd-depth: a level count >= 0, or 'all'."""
    return "all" if text.strip().lower() == "all" else seed_value(text)


def run(args: argparse.Namespace) -> int:
    """Simulate, print the table, write the requested files; return the exit status."""
    from systolic.examples import DEFAULT_EXAMPLE, example_path
    from systolic.simulation.energy import with_energy
    from systolic.simulation.outputs import PendingFiles, npz_bytes
    from systolic.simulation.run import simulate_model

    config = config_from_args(args)
    limit = parse_size(args.max_memory)
    table, clock = table_from_args(args), clock_from_args(args)
    host_ops = _host_ops_per_cycle(args.host_ops_per_cycle)
    _check_paths(args)
    if args.model is None:
        model_path, label = example_path(), f"bundled:{DEFAULT_EXAMPLE}"
    else:
        model_path, label = args.model, args.model
    with PendingFiles() as files, _waveform(args):
        outcome = simulate_model(
            model_path, config, label=label, backend=args.backend, input_path=args.input,
            seed=args.seed, vcd=args.vcd, files=files,
            compare_onnxruntime=not args.no_onnxruntime, max_tensor_bytes=limit,
        )  # fmt: skip
        report = dataclasses.replace(outcome.report, host_ops_per_cycle=host_ops)
        if outcome.compiled is not None:
            report = with_energy(report, outcome.compiled, table, clock)
        text = json.dumps(report.to_json(), indent=2) + "\n"
        if args.output is not None:
            files.stage(args.output, npz_bytes(outcome.outputs))
        if args.json is not None and args.json != "-":
            files.stage(args.json, text)
        if args.trace is not None and outcome.compiled is not None:
            from systolic.simulation.trace import trace_document

            files.stage(args.trace, trace_document(outcome.compiled, outcome.run_times, label))
        written = files.commit()
    if args.json == "-":
        sys.stdout.write(text)
    elif not args.quiet:
        sys.stdout.write(_summary(report, label, written))
    if report.mismatch is not None:
        print(f"systolic: mismatch: {printable(report.mismatch.text())}", file=sys.stderr)
        return EXIT_MISMATCH
    return 0


def _summary(report: SimulationReport, label: str, written: list[Path]) -> str:
    config = report.config
    heading = (
        f"{printable(label)}: {config['rows']}x{config['cols']} {config['dataflow']}, backend "
        f"{report.backend}, input {report.input_source}"
    )
    from systolic.simulation.engine import engine_line

    engine = engine_line(report.backend)  # which engine ran the model backend
    table = render_table(report, table_width()).rstrip("\n")
    lines = [heading, *([engine] if engine else []), "", table]
    checks = report.to_json()["checks"]
    lines.append(
        "reference: bit-exact"
        if checks["reference_bit_exact"]
        else "reference: MISMATCH at "
        + (printable(report.mismatch.text()) if report.mismatch else "?")
    )
    lines += _onnxruntime_lines(report, checks)
    quant = checks.get("quantization")
    if quant is not None:
        top1 = quant["top1_agreement"]
        lines.append(
            f"quantization vs float model: max |error| {quant['max_abs_error']:.6g}, cosine "
            f"{quant['cosine_similarity']:.6f}"
            + (f", top-1 agreement {100 * top1:.1f}%" if top1 is not None else "")
        )
    lines += [f"wrote {path}" for path in written]
    return "\n".join(lines) + "\n"


def _onnxruntime_lines(report: SimulationReport, checks: dict[str, Any]) -> list[str]:
    if not checks["onnxruntime_ran"]:
        from systolic.simulation.onnxruntime_check import onnxruntime_available

        return [
            "onnxruntime: not compared (--no-onnxruntime)"
            if onnxruntime_available()
            else "onnxruntime: not compared (not installed: pip install onnxruntime)"
        ]
    lines = [(
        f"onnxruntime: max |diff| {checks['onnxruntime_max_abs_diff']:.6g}"
        f"{_steps(checks.get('onnxruntime_max_diff_steps'))}, "
        f"{100 * checks['onnxruntime_equal_fraction']:.2f}% of elements equal"
    )]  # fmt: skip
    if "onnxruntime_unoptimized_max_abs_diff" in checks:
        lines.append(
            f"onnxruntime with graph optimizations off (node by node, as the ONNX operators "
            f"define it): max |diff| {checks['onnxruntime_unoptimized_max_abs_diff']:.6g}"
            f"{_steps(checks.get('onnxruntime_unoptimized_max_diff_steps'))}, "
            f"{100 * checks['onnxruntime_unoptimized_equal_fraction']:.2f}% of elements equal"
        )
    explanation = report.onnxruntime_explanation
    if explanation is not None and explanation.kind != "none":
        lines.append(_explanation_line(explanation, checks))
    return lines


def _steps(steps: int | None) -> str:
    return f" ({steps} quantization steps)" if steps is not None else ""


def _explanation_line(explanation: OnnxruntimeExplanation, checks: dict[str, Any]) -> str:
    steps = checks.get("onnxruntime_max_diff_steps")
    size = f"{steps} steps" if steps is not None else f"{checks['onnxruntime_max_abs_diff']:.6g}"
    layers = ", ".join(explanation.layers[:_NAMED_LAYERS])
    if len(explanation.layers) > _NAMED_LAYERS:
        layers += f" and {len(explanation.layers) - _NAMED_LAYERS} more"
    saturation = (f"this CPU's onnxruntime saturates uint8 x int8 int16 pair sums (no VNNI) "
                  f"in layers {layers}")  # fmt: skip
    rounding = ("its float ops round differently in the last bits and a dynamic quantization "
                "downstream turns that into other steps (replayed with its float values: equal "
                "to float rounding)")  # fmt: skip
    layernorm = ("its run of the model's LayerNorm chains quantizes their steps to 8 bits where "
                 "LAYERNORM sums exactly (replayed with its normalized values: equal)")
    if explanation.kind == "saturation":
        why = f"explained: {saturation} (equal once they cannot saturate)"
    elif explanation.kind == "fused_rounding":
        why = ("explained: its fused quantized kernels round differently (equal with its graph "
               "optimizations off)")  # fmt: skip
    elif explanation.kind == "float_rounding":
        why = f"explained: {rounding}"
    elif explanation.kind == "saturation+float_rounding":
        why = f"explained: {saturation}, and {rounding}"
    elif explanation.kind == "layernorm":
        why = f"explained: {layernorm}"
    elif explanation.kind == "saturation+layernorm":
        why = f"explained: {saturation}, and {layernorm}"
    else:
        why = ("not explained by int16 saturation, by its fused kernels' rounding, by float "
               "rounding before a dynamic quantization or by its quantized LayerNorm steps")  # fmt: skip
    return f"onnxruntime: differs by {size}; {why}"
