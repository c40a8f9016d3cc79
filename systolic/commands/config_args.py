"""The command-line options that describe an accelerator configuration (`ArrayConfig`).

`add_config_arguments(parser)` adds `--array RxC`, `--dataflow ws|os|both`, `--spad-kib`,
`--acc-kib`, `--bus-bytes`, `--mem-latency` and `--without UNITS` (the optional units left
out, `add_without_argument`; with `widths=True` also `--input-width`, `--weight-width` and
`--acc-width`); `config_from_args(args)` builds the checked
configuration. A value that is not a whole number, or an impossible configuration, is a
ConfigError: one line naming the option.
"""

import argparse
import dataclasses
from typing import Any

from systolic.config import ArrayConfig, Dataflow
from systolic.config_units import OptionalUnit, parse_units
from systolic.errors import ConfigError

__all__ = ["add_config_arguments", "add_without_argument", "config_from_args"]

_DEFAULT = ArrayConfig()

_WIDTH_OPTIONS = (
    ("input_width", "signed input operand bits, 4-16"),
    ("weight_width", "signed weight bits, 4-16"),
    ("acc_width", "accumulator bits, input+weight width to 64"),
)
_SIZE_OPTIONS = (
    ("spad_kib", "scratchpad size in KiB (inputs and weights)"),
    ("acc_kib", "accumulator memory size in KiB"),
    ("bus_bytes", "external memory bus width in bytes per beat, a power of two 1-256"),
    ("mem_latency", "external memory read latency in cycles, 0-1024"),
)


def _flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def add_config_arguments(parser: argparse.ArgumentParser, *, widths: bool = False) -> None:
    """Add the configuration options to `parser` (the operand widths too when `widths`)."""
    group = parser.add_argument_group("accelerator configuration")
    group.add_argument(
        "--array", metavar="RxC", default=_DEFAULT.shape_text,
        help=f"array rows x columns (default {_DEFAULT.shape_text})",
    )  # fmt: skip
    group.add_argument(
        "--dataflow", metavar="ws|os|both", default=_DEFAULT.dataflow.value,
        help="weight-stationary (ws, default), output-stationary (os), or both: an array "
             "that runs either, chosen per layer by the cycle model",
    )  # fmt: skip
    for field, meaning in (_WIDTH_OPTIONS if widths else ()) + _SIZE_OPTIONS:
        group.add_argument(
            _flag(field), metavar="N", dest=field,
            help=f"{meaning} (default {getattr(_DEFAULT, field)})",
        )  # fmt: skip
    add_without_argument(group)


def add_without_argument(group: "argparse._ActionsContainer") -> None:
    """Add `--without UNITS` (dest `without`, default none): the optional STORE-side units
    the accelerator leaves out, parsed by `config_units.parse_units`."""
    names = ", ".join(f"{unit.value} ({unit.title})" for unit in OptionalUnit)
    group.add_argument(
        "--without", metavar="UNIT,...", default="",
        help=f"optional units to leave out of the accelerator: {names}; their layers run "
             "on the host (default: none, every unit built)",
    )  # fmt: skip


def _whole_number(flag: str, text: str) -> int:
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise ConfigError(f"{flag} {text!r} is not a whole number") from None


def config_from_args(args: argparse.Namespace) -> ArrayConfig:
    """Return the configuration the parsed options describe; options not given (or not
    added) keep `ArrayConfig`'s defaults."""
    rows, cols = ArrayConfig.parse_shape(args.array)
    values: dict[str, Any] = {"rows": rows, "cols": cols,
                              "dataflow": Dataflow.parse(args.dataflow),
                              "without": parse_units(getattr(args, "without", "") or "")}
    for field, _ in _WIDTH_OPTIONS + _SIZE_OPTIONS:
        text = getattr(args, field, None)
        if text is not None:
            values[field] = _whole_number(_flag(field), text)
    return dataclasses.replace(_DEFAULT, **values)
