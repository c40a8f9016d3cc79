"""The command-line options that describe an accelerator configuration (`ArrayConfig`).

`add_config_arguments(parser)` adds `--array RxC`, `--dataflow ws|os`, `--spad-kib`,
`--acc-kib`, `--bus-bytes` and `--mem-latency`; `config_from_args(args)` builds the checked
configuration (ConfigError, one line, for an impossible one).
"""

import argparse
import dataclasses

from systolic.config import ArrayConfig, Dataflow

__all__ = ["add_config_arguments", "config_from_args"]

_DEFAULT = ArrayConfig()


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the configuration options to `parser`."""
    group = parser.add_argument_group("accelerator configuration")
    group.add_argument(
        "--array", metavar="RxC", default=_DEFAULT.shape_text,
        help=f"array size (default {_DEFAULT.shape_text})",
    )  # fmt: skip
    group.add_argument(
        "--dataflow", metavar="ws|os", default=_DEFAULT.dataflow.value,
        help="weight-stationary (ws, default) or output-stationary (os)",
    )  # fmt: skip
    for name, help_text in (
        ("spad_kib", "scratchpad size in KiB"),
        ("acc_kib", "accumulator memory size in KiB"),
        ("bus_bytes", "external memory bus width in bytes"),
        ("mem_latency", "external memory read latency in cycles"),
    ):
        default = getattr(_DEFAULT, name)
        group.add_argument(
            "--" + name.replace("_", "-"), metavar="N", type=int, default=default,
            help=f"{help_text} (default {default})",
        )  # fmt: skip


def config_from_args(args: argparse.Namespace) -> ArrayConfig:
    """Return the configuration the parsed options describe."""
    rows, cols = ArrayConfig.parse_shape(args.array)
    return dataclasses.replace(
        _DEFAULT,
        rows=rows,
        cols=cols,
        dataflow=Dataflow.parse(args.dataflow),
        spad_kib=args.spad_kib,
        acc_kib=args.acc_kib,
        bus_bytes=args.bus_bytes,
        mem_latency=args.mem_latency,
    )
