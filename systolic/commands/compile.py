"""`systolic compile MODEL -o PROGRAM`: compile an ONNX model into an accelerator program.

Runs the mapper passes (the integer graph), then the model compiler for the configuration the
options give, and writes the program file (docs/isa.md, "Program format") atomically. Prints
one line per layer (unit, instructions, MACs) and a summary. Any error is one line and
nothing is written.
"""

import argparse
import sys
from typing import Any

from systolic.mapper.ir import Model

from .config_args import add_config_arguments, config_from_args

__all__ = ["integer_model", "register", "run"]


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
    add_config_arguments(parser)
    parser.set_defaults(run=run)


def integer_model(model: Model) -> Model:
    """Return the model rewritten by the mapper passes into an integer graph."""
    try:
        from systolic.mapper.passes.pipeline import run_passes
    except ModuleNotFoundError:
        return model
    result: Any = run_passes(model)
    if isinstance(result, tuple):  # (model, report)
        result = result[0]
    if isinstance(result, Model):
        return result
    return Model(model.ir_version, model.opsets, result)


def run(args: argparse.Namespace) -> int:
    """Compile and write the program; return 0."""
    from systolic.mapper.lowering import compile_model

    from .model_loading import load_user_model

    config = config_from_args(args)
    model = integer_model(load_user_model(args.model))
    compiled = compile_model(model, config)
    compiled.save(args.output)
    if not args.quiet:
        program = compiled.program
        for layer in program.layers:
            sys.stdout.write(
                f"{layer.name:<32} {layer.op:<14} {layer.unit.value:<6} "
                f"{layer.count:>7} instr {layer.macs:>12,} MACs\n"
            )
        hosts = sum(1 for layer in program.layers if layer.unit.value == "host")
        sys.stdout.write(
            f"wrote {args.output}: {config.shape_text} {config.dataflow.value}, "
            f"{len(program.layers)} layers ({hosts} on the host), "
            f"{len(program.instructions)} instructions, {compiled.memory_size:,} bytes of "
            f"external memory\n"
        )
    return 0
