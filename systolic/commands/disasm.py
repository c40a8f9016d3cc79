"""`systolic disasm PROGRAM`: print a program file as text.

The configuration, the memory map (image segments and tensor placements), then each layer
with its instructions, one per line in the assembler's text form. Everything but the
instructions is a `#` comment, so `systolic.sim.isa.assembler.parse_text` reads the listing
back into the program's instructions.
"""

import argparse
import sys

from systolic.sim.isa.disassembler import format_instruction
from systolic.sim.isa.program import Program

__all__ = ["register", "render", "run"]


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
    """Return the listing described in the module docstring."""
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
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Read the program file and print its listing; return 0."""
    from systolic.mapper.lowering.compiled import CompiledModel

    sys.stdout.write(render(CompiledModel.load(args.program).program))
    return 0
