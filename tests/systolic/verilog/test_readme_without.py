"""The Verilog bundle of a configuration without optional units: the top module's name and
the README's command line and parameter table say which units are left out; a configuration
with every unit reads as before."""

import dataclasses

from systolic.config import ArrayConfig, OptionalUnit
from systolic.hdl.emit import top_name
from systolic.verilog.readme import command_line, render_readme

FULL = ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1)
SLIM = dataclasses.replace(FULL, without=frozenset(OptionalUnit))


def test_top_name_lists_the_omitted_units() -> None:
    assert top_name(FULL) == "systolic_accel_2x2_ws"
    assert top_name(SLIM) == "systolic_accel_2x2_ws_without_row_unit_tables"
    only_tables = dataclasses.replace(FULL, without=frozenset({OptionalUnit.TABLES}))
    assert top_name(only_tables) == "systolic_accel_2x2_ws_without_tables"


def test_command_line_gives_without_only_when_units_are_omitted() -> None:
    assert "--without" not in command_line(FULL)
    assert command_line(SLIM).endswith("--without row-unit,tables -o OUT")


def test_parameter_table_names_the_omitted_units() -> None:
    def readme(config: ArrayConfig) -> str:
        return render_readme(config, top_name(config), [], [], verilog_name="t.v",
                             lint_name="t.vlt", synth_name="t.ys")
    assert "| without |" not in readme(FULL)
    row = next(line for line in readme(SLIM).splitlines() if line.startswith("| without |"))
    assert "row-unit,tables" in row and "row-normalisation unit, activation table" in row
