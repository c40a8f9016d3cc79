"""The `systolic` command line: one subcommand per module in `systolic.commands`.

Every user-caused error (`SystolicError`, a file that cannot be read, memory running out) is
printed as one line `systolic: error: ...` on standard error with exit status 2 and no
traceback. An unexpected exception is a bug: it prints one line too (exit 3), and `--debug`
shows the traceback. Messages pass through `printable`, so a name from a file can neither
drive the terminal nor add a line.
Warnings (the importer's name warnings, numpy's floating-point warnings from a host layer)
are one line each, `systolic: warning: ...`, without the source line Python would show;
`--debug` shows them in Python's own form. Names that only the IR's C90 identifier rule
rejects draw no warning unless `--strict` asks for it.
"""

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn, TextIO

from systolic import __version__
from systolic.commands import COMMANDS
from systolic.commands.model_loading import command_budget
from systolic.errors import SystolicError
from systolic.mapper.graph_checks import C90NameWarning
from systolic.text import printable

EXIT_USAGE = 2
EXIT_INTERNAL = 3

MEMORY_MESSAGE = (
    "out of memory: the model or its inputs need more memory than this machine (or its "
    "process limit) gives; use a smaller model or inputs, set a lower --max-memory to be "
    "told which tensors are too large, or run where more memory is available"
)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line too, `systolic: error: ...` naming
    the subcommand and where to read its options (exit status 2); subcommand parsers
    inherit the class."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("systolic").strip()
        where = f"{command}: " if command else ""
        text = printable(f"{where}{message} (see '{self.prog} --help')")
        self.exit(EXIT_USAGE, f"systolic: error: {text}\n")


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every subcommand registered."""
    parser = OneLineParser(
        prog="systolic",
        description=(
            "Map ONNX models onto a configurable systolic-array accelerator, simulate it "
            "cycle by cycle against a bit-exact numpy reference, emit Verilog, compare cycles."
        ),
    )
    parser.add_argument("--version", action="version", version=f"systolic {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show a traceback when the tool itself fails"
    )
    parser.add_argument(
        "--strict", action="store_true",
        help="also warn about names that only the ONNX IR's C90 identifier rule rejects "
             "(what exporters write: '/conv1/Conv', 'onnx::Conv_12'); off by default",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def show_warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Print a warning as one line `systolic: warning: ...` (the `warnings.showwarning`
    signature); warnings from outside the tool keep their category name as a prefix."""
    text = printable(" ".join(str(message).split()))
    own = category.__module__.split(".")[0] == "systolic"
    prefix = "" if own else f"{category.__name__}: "
    print(f"systolic: warning: {prefix}{text}", file=file if file is not None else sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    with warnings.catch_warnings():
        if not args.debug:
            warnings.showwarning = show_warning_line
        if args.strict:
            warnings.simplefilter("always", C90NameWarning)
        return _run(args)


def _error_line(kind: str, message: str) -> None:
    print(f"systolic: {kind}: {printable(message)}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    try:
        with command_budget(args):  # (--max-memory, for the whole command)
            status: int = args.run(args)
        return status
    except SystolicError as err:
        _error_line("error", str(err))
        return EXIT_USAGE
    except OSError as err:
        where = f": {err.filename}" if err.filename else ""
        _error_line("error", f"{err.strerror or err}{where}")
        return EXIT_USAGE
    except MemoryError:
        _error_line("error", MEMORY_MESSAGE)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("systolic: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a bug in the tool: one line unless --debug
        if args.debug:
            raise
        _error_line(
            "internal error",
            f"{type(err).__name__}: {err} (rerun with --debug for a traceback and please "
            "report it)",
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
