"""The `systolic` command line: one subcommand per module in `systolic.commands`.

Every user-caused error (`SystolicError`, a file that cannot be read) is printed as one line
`systolic: error: ...` on standard error with exit status 2 and no traceback. An unexpected
exception is a bug: it prints one line too (exit 3), and `--debug` shows the traceback.
"""

import argparse
import sys
from collections.abc import Sequence

from . import __version__
from .commands import COMMANDS
from .errors import SystolicError

EXIT_USAGE = 2
EXIT_INTERNAL = 3


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
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
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        status: int = args.run(args)
        return status
    except SystolicError as err:
        print(f"systolic: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:
        where = f": {err.filename}" if err.filename else ""
        print(f"systolic: error: {err.strerror or err}{where}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("systolic: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a bug in the tool: one line unless --debug
        if args.debug:
            raise
        print(
            f"systolic: internal error: {type(err).__name__}: {err} "
            f"(rerun with --debug for a traceback and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
