"""The optional units of a configuration (systolic/config_units.py, `ArrayConfig.without`)."""

import dataclasses

import pytest

from systolic.config import ArrayConfig, OptionalUnit
from systolic.config_units import absent_message, parse_units, units_text
from systolic.errors import ConfigError

ROW_UNIT, TABLES = OptionalUnit.ROW_UNIT, OptionalUnit.TABLES


@pytest.mark.parametrize(("text", "units"), [
    ("", frozenset()), ("none", frozenset()), ("row-unit", frozenset({ROW_UNIT})),
    (" Tables , row-unit ", frozenset({ROW_UNIT, TABLES})), ("tables,tables", frozenset({TABLES})),
])
def test_parse_units(text: str, units: frozenset[OptionalUnit]) -> None:
    assert parse_units(text) == units
    assert parse_units(units_text(units)) == units


def test_unknown_unit_is_one_line_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"^--without 'vector' is not an optional unit: use "
                                          r"one or more of row-unit, tables, separated by commas$"):
        parse_units("row-unit,vector")


def test_units_text_keeps_declaration_order() -> None:
    assert units_text(frozenset({TABLES, ROW_UNIT})) == "row-unit,tables"
    assert units_text(frozenset()) == ""


def test_absent_message() -> None:
    assert absent_message(TABLES) == ("the accelerator is configured without its activation "
                                      "table (--without tables)")


def test_config_field_has_and_dict() -> None:
    full = ArrayConfig()
    assert full.without == frozenset() and full.has(ROW_UNIT) and full.has(TABLES)
    assert "without" not in full.to_dict()  # unchanged dictionary (cache keys, JSON)
    slim = dataclasses.replace(full, without=frozenset({ROW_UNIT}))
    assert not slim.has(ROW_UNIT) and slim.has(TABLES)
    assert slim.to_dict()["without"] == ["row-unit"]
    assert slim != full and hash(slim) != hash(full)


@pytest.mark.parametrize("value", [{ROW_UNIT}, frozenset({"row-unit"}), "tables", None])
def test_config_field_must_be_a_frozenset_of_units(value: object) -> None:
    with pytest.raises(ConfigError, match="without must be a frozenset of OptionalUnit"):
        ArrayConfig(without=value)  # type: ignore[arg-type]
