"""The command-line options of the energy figures: `--energy-table FILE` and `--clock-mhz`.

`add_energy_arguments(parser, clock=True)` adds them; `table_from_args(args)` returns the
`EnergyTable` (the default 45 nm table, or FILE over it: a bad file is one ConfigError line
naming the key), `clock_from_args(args)` the clock in MHz or None.
"""

import argparse
import math

from systolic.errors import ConfigError
from systolic.sim.energy.table import EnergyTable

__all__ = ["add_energy_arguments", "clock_from_args", "table_from_args"]


def add_energy_arguments(parser: argparse.ArgumentParser, *, clock: bool = True) -> None:
    """Add --energy-table (and --clock-mhz when `clock`) to `parser`."""
    group = parser.add_argument_group("energy (docs/energy.md)")
    group.add_argument(
        "--energy-table", metavar="FILE",
        help="per-action energies in TOML (Accelergy-style; any key of the default 45 nm "
        "table, the rest kept), default: the bundled 45 nm table",
    )  # fmt: skip
    if clock:
        group.add_argument(
            "--clock-mhz", metavar="MHZ",
            help="clock for latency (ms), inferences per second and TOPS/W (default: none)",
        )  # fmt: skip


def table_from_args(args: argparse.Namespace) -> EnergyTable:
    """Return the energy table the options name."""
    path = getattr(args, "energy_table", None)
    return EnergyTable.default() if path is None else EnergyTable.load(path)


def clock_from_args(args: argparse.Namespace) -> float | None:
    """Return --clock-mhz as a number above 0, or None when it is not given."""
    text = getattr(args, "clock_mhz", None)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"--clock-mhz must be a number above 0, not {text!r}")
    return value
