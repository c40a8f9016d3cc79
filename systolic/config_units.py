"""The STORE-side units an accelerator configuration may omit (`ArrayConfig.without`).

A CNN accelerator needs no SOFTMAX or LAYERNORM hardware, and an integer-only one no
activation tables; leaving them out makes the design smaller (docs/hardware.md, "Optional
units"). Each omittable unit is an `OptionalUnit`, named on the command line as
`--without row-unit,tables`. The instructions a missing unit executes are refused by the
program check (`absent_message`), and the mapper runs the layers that need it on the host with
the same words as its reason.
"""

import enum

from systolic.errors import ConfigError

__all__ = ["OptionalUnit", "absent_message", "parse_units", "units_text"]


class OptionalUnit(enum.Enum):
    """A unit of the STORE side that a configuration may leave out."""

    ROW_UNIT = "row-unit"
    """The row-normalisation unit: SOFTMAX, LAYERNORM, and TABLE `wide` (its exp table)."""
    TABLES = "tables"
    """The activation table: TABLE (not `wide`) and the `lut` flag of STORE and COPY."""

    @property
    def title(self) -> str:
        """The unit's name in prose, for example "row-normalisation unit"."""
        return _TITLES[self]


_TITLES = {
    OptionalUnit.ROW_UNIT: "row-normalisation unit",
    OptionalUnit.TABLES: "activation table",
}


def absent_message(unit: OptionalUnit) -> str:
    """Return the one-line reason a unit's work cannot run on the accelerator, for example
    "the accelerator is configured without its row-normalisation unit (--without row-unit)"."""
    return f"the accelerator is configured without its {unit.title} (--without {unit.value})"


def parse_units(text: str) -> frozenset[OptionalUnit]:
    """Return the units a comma-separated list names ("row-unit,tables"; "" or "none": no
    unit); ConfigError naming the choices for an unknown name."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if names == ["none"]:
        return frozenset()
    units = set()
    for name in names:
        try:
            units.add(OptionalUnit(name))
        except ValueError:
            choices = ", ".join(unit.value for unit in OptionalUnit)
            raise ConfigError(f"--without {name!r} is not an optional unit: use one or more "
                              f"of {choices}, separated by commas") from None
    return frozenset(units)


def units_text(units: frozenset[OptionalUnit]) -> str:
    """Return `units` as `parse_units` reads them: names in declaration order, commas
    between ("" for none)."""
    return ",".join(unit.value for unit in OptionalUnit if unit in units)
