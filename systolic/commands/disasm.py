"""`systolic disasm PROGRAM`: print a program file as text.

The configuration, the memory map (image segments and tensor placements), then each layer
with its instructions, one per line in the assembler's text form. Everything but the
instructions is a `#` comment, so `systolic.isa.assembler.parse_text` reads the listing
back into the program's instructions.
"""

import argparse
import sys
from pathlib import Path

from systolic.errors import ModelError, SystolicError
from systolic.isa.disassembler import format_instruction
from systolic.isa.program import Program
from systolic.text import printable

__all__ = ["load_program", "register", "render", "run"]


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the `disasm` subcommand."""
    parser = subparsers.add_parser(
        "disasm",
        help="print a program file as text",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("program", metavar="PROGRAM", help="the program file (.pb)")
    parser.set_defaults(run=run)


def render(program: Program) -> str:
    """Return the listing described in the module docstring; names from the program file
    pass through `printable`, so each listing line is one line of plain text."""
    config = program.config
    fields = " ".join(f"{k}={v}" for k, v in config.to_dict().items())
    lines = [
        (
            f"# systolic program: {config.shape_text} {config.dataflow.value}, "
            f"{len(program.instructions)} instructions, {len(program.layers)} layers"
        ),
        f"# config: {fields}",
        "# memory map:",
    ]
    for segment in sorted(program.segments, key=lambda s: s.address):
        lines.append(
            f"#   {segment.address:#010x}..{segment.end - 1:#010x} image segment "
            f"({len(segment.data)} bytes)"
        )
    for tensor in sorted(program.tensors, key=lambda t: (t.address, t.name)):
        lines.append(
            f"#   {tensor.address:#010x}..{tensor.end - 1:#010x} {tensor.role.value} "
            f"{tensor.name}: {tensor.dtype.name} {list(tensor.shape)} strides "
            f"{list(tensor.strides)}"
        )
    hosts = {step.layer: step for step in program.host_steps}
    position = 0
    for index, layer in enumerate(program.layers):
        where = (
            f"instructions {layer.first}..{layer.end - 1} ({layer.count})"
            if layer.count
            else "no instructions"
        )
        lines.append(
            f"# layer {index} {layer.name!r}: {layer.op} on {layer.unit.value}, {where}, "
            f"{layer.macs:,} MACs" + (f"; {layer.reason}" if layer.reason else "")
        )
        lines.append(f"#   {', '.join(layer.inputs)} -> {', '.join(layer.outputs)}")
        if index in hosts:
            node = hosts[index].node
            lines.append(f"#   host: {node.text()}")
        lines += [format_instruction(i) for i in program.instructions[layer.first : layer.end]]
        position = layer.end
    lines += [format_instruction(i) for i in program.instructions[position:]]
    return "\n".join(printable(line) for line in lines) + "\n"


def _looks_like_onnx(data: bytes) -> bool:
    """True when `data` parses as an ONNX model with a graph (a common mix-up)."""
    from google.protobuf.message import DecodeError

    from systolic.proto import ModelProto

    model = ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError:
        return False
    return model.HasField("graph") and model.ir_version > 0


def load_program(path: str) -> Program:
    """Read the program file at `path`; any problem is one `ModelError` naming the file."""
    from systolic.mapper.lowering.compiled import CompiledModel

    data = Path(path).read_bytes()  # OSError: the command line names the file
    if not data:
        raise ModelError(f"{path} is empty: it holds no program (write one with systolic compile)")
    if _looks_like_onnx(data):
        raise ModelError(
            f"{path} is an ONNX model, not a program: compile it first with "
            f"'systolic compile {path} -o PROGRAM'"
        )
    try:
        return CompiledModel.load(path).program
    except SystolicError as err:
        text = str(err)
        if text.startswith(f"{path} "):
            raise
        raise ModelError(
            f"{path} is not a valid program file ({text}): it is corrupt or from another "
            f"version of the tool; recompile the model"
        ) from None


def run(args: argparse.Namespace) -> int:
    """Read the program file and print its listing; return 0."""
    sys.stdout.write(render(load_program(args.program)))
    return 0
