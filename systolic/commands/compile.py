"""`systolic compile MODEL -o PROGRAM`: compile an ONNX model into an accelerator program.

Runs the mapper passes (the integer graph), then the model compiler for the configuration the
options give, and writes the program file (docs/isa.md, "Program format") atomically. Prints
one line per layer (unit, instructions, MACs) and a summary. Any error is one line and
nothing is written.
"""

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from systolic.errors import ConfigError
from systolic.simulation.progress import ProgressBar
from systolic.text import printable

if TYPE_CHECKING:
    from systolic.ir import Model

from systolic.commands.config_args import add_config_arguments, config_from_args
from systolic.commands.model_loading import add_max_memory_argument, load_user_model, parse_size

__all__ = ["integer_model", "parse_input_shapes", "register", "run"]


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the `compile` subcommand."""
    parser = subparsers.add_parser(
        "compile",
        help="compile an ONNX model into an accelerator program",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("model", metavar="MODEL", help="the .onnx file")
    parser.add_argument(
        "-o", "--output", metavar="PROGRAM", required=True, help="the program file to write"
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    parser.add_argument(
        "--input-shape", metavar="NAME=DxD...", action="append", default=[],
        help="fix the shape of an input with symbolic dimensions, e.g. x=1x3x224x224 "
        "(repeat for several inputs)",
    )  # fmt: skip
    add_max_memory_argument(parser)
    add_config_arguments(parser)
    parser.set_defaults(run=run)


def integer_model(model: "Model") -> "Model":
    """Return the model rewritten by the mapper passes into an integer graph."""
    from systolic.mapper.passes.pipeline import run_passes

    integer, _ = run_passes(model)
    return integer


def parse_input_shapes(texts: list[str]) -> dict[str, tuple[int, ...]]:
    """Return {input name: shape} from `--input-shape NAME=DxDx...` values."""
    shapes: dict[str, tuple[int, ...]] = {}
    for text in texts:
        name, _, dims = text.rpartition("=")
        try:
            shape = tuple(int(d, 10) for d in dims.split("x")) if dims else ()
        except ValueError:
            shape = ()
        if not name or not shape or any(d <= 0 for d in shape):
            raise ConfigError(
                f"--input-shape {text!r} is not NAME=DxD... with positive sizes, for example "
                f"x=1x3x224x224"
            )
        if name in shapes:
            raise ConfigError(f"--input-shape gives input {name!r} twice")
        shapes[name] = shape
    return shapes


def run(args: argparse.Namespace) -> int:
    """Compile and write the program; return 0."""
    from systolic.commands.output_paths import check_output_file
    from systolic.mapper.importer import bind_inputs
    from systolic.mapper.lowering import compile_model
    from systolic.sim.timing.layer_cycles import layer_cycles

    config = config_from_args(args)
    limit = parse_size(args.max_memory)
    check_output_file("-o", args.output)
    if Path(args.output).resolve() == Path(args.model).resolve():
        raise ConfigError(f"-o {args.output!r} is the model itself: name another file")
    shapes = parse_input_shapes(args.input_shape)
    model = load_user_model(args.model, max_tensor_bytes=limit)
    if shapes:
        unknown = sorted(set(shapes) - {info.name for info in model.graph.inputs})
        if unknown:
            names = ", ".join(repr(info.name) for info in model.graph.inputs)
            raise ConfigError(
                f"--input-shape names {', '.join(map(repr, unknown))}, not an input of the "
                f"model (inputs: {names})"
            )
        model = bind_inputs(model, shapes, max_tensor_bytes=limit)
    constants = {tensor.name for tensor in model.graph.initializers}
    for info in model.graph.inputs:
        if info.name not in constants and not info.type.is_static:
            dims = "x".join(str(d) if isinstance(d, int) else "D" for d in info.type.shape or ())
            raise ConfigError(
                f"input {info.name!r} has no fixed shape ({info.type.text()}): a program is "
                f"compiled for one shape; give it with --input-shape {info.name}={dims or 'D'}"
            )
    model = integer_model(model)
    bar = ProgressBar(len(model.graph.nodes), "compiling layers")
    try:
        compiled = compile_model(model, config, progress=lambda done, _: bar.update(done),
                                 layer_cycles=layer_cycles)
    finally:
        bar.close()
    compiled.save(args.output)
    if not args.quiet:
        program = compiled.program
        for layer in program.layers:
            sys.stdout.write(
                f"{printable(layer.name):<32} {printable(layer.op):<14} {layer.unit.value:<6} "
                f"{layer.count:>7} instr {layer.macs:>12,} MACs\n"
            )
        hosts = sum(1 for layer in program.layers if layer.unit.value == "host")
        sys.stdout.write(
            f"wrote {printable(args.output)}: {config.shape_text} {config.dataflow.value}, "
            f"{len(program.layers)} layers ({hosts} on the host), "
            f"{len(program.instructions)} instructions, {compiled.memory_size:,} bytes of "
            f"external memory\n"
        )
    return 0
