"""The subcommands, in the order `systolic --help` lists them.

Each module has `register(subparsers)`, which adds its parser and sets `run=` to a function
taking the parsed arguments and returning the exit status.
"""

from types import ModuleType

from systolic.commands import compare, compile, disasm, inspect, simulate, verilog

COMMANDS: tuple[ModuleType, ...] = (inspect, compile, simulate, compare, disasm, verilog)
