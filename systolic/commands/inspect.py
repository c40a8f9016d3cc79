"""`systolic inspect MODEL`: what the tool reads from an ONNX model.

Prints the IR version, operator sets, producer, model version, metadata, the inputs and
outputs with their shapes, and a table of nodes (bound operator, output shape, MACs, the unit
that runs it: array, vector or host (none: removed by the mapper; unsupported: an operator
the tool does not implement), and why), with totals. A float model's units are decided
without calibrating it (the passes quantize it on assumed activation ranges; the output says
so: "calibration" in the JSON). `--input-shape NAME=DxD...` binds a
dynamic input. `--json PATH` writes the same as JSON (`-`: standard output). Name warnings
go to standard error as `systolic: warning: ...`, only when the model loads; any error is
one line and nothing is written.
"""

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from systolic.commands.compile import parse_input_shapes
from systolic.commands.config_args import add_config_arguments, config_from_args
from systolic.commands.model_loading import add_max_memory_argument, parse_size, report_warnings
from systolic.commands.output_paths import check_output_file
from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.fileio import write_atomically
from systolic.text import printable

if TYPE_CHECKING:
    from systolic.ir import Model

__all__ = ["parse_size", "register", "render_text", "run"]

def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the `inspect` subcommand."""
    parser = subparsers.add_parser(
        "inspect",
        help="show what the tool reads from an ONNX model",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument(
        "model",
        metavar="MODEL",
        nargs="?",
        help="the .onnx file (default: the bundled example, a quantized LeNet)",
    )
    parser.add_argument(
        "--json", metavar="PATH", help="also write the summary as JSON ('-': stdout)"
    )
    parser.add_argument(
        "--input-shape", metavar="NAME=DxD...", action="append", default=[],
        help="fix the shape of an input with symbolic dimensions, e.g. x=1x3x224x224 "
        "(repeat for several inputs): shapes and MACs are then those of that input",
    )  # fmt: skip
    add_max_memory_argument(parser)
    add_config_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Load the model, print or write its summary; return 0."""
    from systolic.examples import example_path
    from systolic.mapper.graph_checks import NameWarning
    from systolic.mapper.importer import load_model
    from systolic.mapper.report import model_report

    limit = parse_size(args.max_memory)
    config = config_from_args(args)
    if args.json and args.json != "-":
        check_output_file("--json", args.json)
        if args.model is not None and Path(args.json).resolve() == Path(args.model).resolve():
            raise ConfigError(f"--json {args.json!r} is the model itself: name another file")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NameWarning)
        model = load_model(args.model or example_path(), max_tensor_bytes=limit,
                           mark_unsupported=True, lazy_constants=True)  # fmt: skip
    model = _bind(model, parse_input_shapes(args.input_shape), limit)
    units, assumed = _units(model, config, limit)
    report = model_report(model, units)
    report["calibration"] = assumed
    report_warnings(caught)
    if args.json:
        text = json.dumps(report, indent=2) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
            return 0
        write_atomically(args.json, text)
    sys.stdout.write(render_text(report))
    return 0


def _units(
    model: "Model", config: ArrayConfig, limit: int
) -> tuple[list[tuple[str, str]], str | None]:
    """Return each node's (unit, reason) from the mapper (`node_units`, without calibration)
    and what it assumed instead of calibrating (None: nothing), unless the model's
    constants together exceed `limit`: the mapper would decode them all, so every node is
    then reported on the host with that reason, and no constant is decoded (the importer
    left the large ones undecoded: `lazy_constants`)."""
    from systolic.mapper.lowering.coverage import ASSUMED_RANGES, needs_calibration, node_units

    sizes = {tensor.name: tensor.nbytes for tensor in model.graph.initializers}
    total = sum(sizes.values())
    if total <= limit:
        assumed = ASSUMED_RANGES if needs_calibration(model) else None
        return node_units(model, config, calibrated=False), assumed
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:3]
    named = ", ".join(f"{name!r} ({size} bytes)" for name, size in largest)
    reason = (f"not mapped: the constants need {total} bytes together, more than --max-memory "
              f"({limit}); the largest: {named}")  # fmt: skip
    return [("host", reason)] * len(model.graph.nodes), None


def _bind(model: "Model", shapes: dict[str, tuple[int, ...]], limit: int) -> "Model":
    """Return `model` with the `--input-shape` shapes bound (unchanged without any)."""
    from systolic.mapper.importer import bind_inputs

    if not shapes:
        return model
    unknown = sorted(set(shapes) - {info.name for info in model.graph.inputs})
    if unknown:
        names = ", ".join(repr(info.name) for info in model.graph.inputs)
        raise ConfigError(f"--input-shape names {', '.join(map(repr, unknown))}, not an input "
                          f"of the model (inputs: {names})")
    return bind_inputs(model, shapes, max_tensor_bytes=limit)


def render_text(report: dict[str, Any]) -> str:
    """Return the summary as the text `systolic inspect` prints; every string from the model
    passes through `printable`."""
    opsets = ", ".join(f"{o['domain']}:{o['version']}" for o in report["opsets"])
    producer = " ".join(p for p in (report["producer"]["name"], report["producer"]["version"]) if p)
    lines = [
        f"IR version:     {report['ir_version']}",
        f"opsets:         {printable(opsets)}",
        f"producer:       {printable(producer) or '-'}",
        f"domain:         {printable(report['domain']) or '-'}",
        f"model version:  {report['model_version']['text']}",
        f"graph:          {printable(report['graph']) or '-'}",
    ]
    if report["doc"]:
        lines.append(f"doc:            {printable(report['doc'].splitlines()[0])}")
    for key, value in report["metadata"].items():
        lines.append(f"metadata:       {printable(key)} = {printable(value)}")
    for role in ("inputs", "outputs"):
        lines.append(f"{role}:")
        lines += [f"  {printable(v['name'])}: {printable(v['type'])}" for v in report[role]]
    if report.get("calibration"):
        lines.append(f"calibration:    {report['calibration']}")
    lines.append("")
    lines += _node_table(report["nodes"])
    totals = report["totals"]
    lines.append("")
    lines.append(
        f"totals: {totals['nodes']} nodes, {totals['macs']:,} MACs, "
        f"{totals['parameters']:,} parameters"
    )
    return "\n".join(lines) + "\n"


def _node_table(nodes: list[dict[str, Any]]) -> list[str]:
    header = ("node", "op", "output", "MACs", "unit", "reason")
    rows = [
        (
            printable(row["name"]),
            printable(row["op"]),
            printable(", ".join(o["type"] for o in row["outputs"])),
            f"{row['macs']:,}",
            row["unit"],
            printable(row["reason"]),
        )
        for row in nodes
    ]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    return [
        "  ".join(
            cell.rjust(widths[i]) if i == 3 else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ).rstrip()
        for cells in (header, *rows)
    ]
