"""The configurations `systolic compare` sweeps: the product of comma-separated option lists."""

import dataclasses
import itertools
from collections.abc import Sequence

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError

__all__ = ["config_grid", "config_label", "parse_int_list", "parse_list"]


def parse_list(option: str, text: str) -> list[str]:
    """Split "a,b,c" into its non-empty items; an empty list is an error naming the option."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ConfigError(f"{option} needs at least one value, for example {option} 8x8,16x16")
    return items


def parse_int_list(option: str, text: str) -> list[int]:
    """Parse "16,32" into integers; a non-integer names the option and the value."""
    values = []
    for item in parse_list(option, text):
        try:
            values.append(int(item))
        except ValueError:
            raise ConfigError(f"{option}: {item!r} is not a whole number") from None
    return values


def config_grid(
    base: ArrayConfig,
    *,
    arrays: Sequence[str] = (),
    dataflows: Sequence[str] = (),
    spad_kib: Sequence[int] = (),
    acc_kib: Sequence[int] = (),
    bus_bytes: Sequence[int] = (),
) -> list[ArrayConfig]:
    """Return every combination of the listed values (an empty list keeps `base`'s value), in
    the order the lists give, without duplicates. An impossible combination raises the
    ConfigError of `ArrayConfig`, prefixed with the combination's label."""
    shapes = [ArrayConfig.parse_shape(text) for text in arrays] or [(base.rows, base.cols)]
    flows = [Dataflow.parse(text) for text in dataflows] or [base.dataflow]
    configs: list[ArrayConfig] = []
    for (rows, cols), flow, spad, acc, bus in itertools.product(
        shapes, flows, spad_kib or [base.spad_kib], acc_kib or [base.acc_kib],
        bus_bytes or [base.bus_bytes],
    ):
        label = f"{rows}x{cols} {flow.value} spad {spad} KiB acc {acc} KiB bus {bus} B"
        try:
            config = dataclasses.replace(
                base, rows=rows, cols=cols, dataflow=flow, spad_kib=spad, acc_kib=acc,
                bus_bytes=bus,
            )
        except ConfigError as err:
            raise ConfigError(f"configuration {label}: {err}") from None
        if config not in configs:
            configs.append(config)
    return configs


def config_label(config: ArrayConfig, varying: Sequence[str] = ("array", "dataflow")) -> str:
    """A short label naming the fields that vary across a sweep, e.g. "16x16 ws bus 8"."""
    parts = []
    if "array" in varying:
        parts.append(config.shape_text)
    if "dataflow" in varying:
        parts.append(config.dataflow.value)
    if "spad_kib" in varying:
        parts.append(f"spad {config.spad_kib}K")
    if "acc_kib" in varying:
        parts.append(f"acc {config.acc_kib}K")
    if "bus_bytes" in varying:
        parts.append(f"bus {config.bus_bytes}")
    return " ".join(parts) or config.shape_text
