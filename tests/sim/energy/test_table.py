"""The per-action energy table: the bundled 45 nm numbers, the scaling rules, a user's file
put over them, and one-line errors naming the key of a bad file."""

import math
from pathlib import Path

import pytest

from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.sim.energy.table import ACTIONS, DEFAULT_TABLE, EnergyTable, sram_access_energy

CONFIG = ArrayConfig(rows=8, cols=8, spad_kib=256, acc_kib=64)


def test_the_default_table_is_package_data_with_its_sources() -> None:
    text = DEFAULT_TABLE.read_text()
    assert "Horowitz" in text and "CACTI" in text and "LPDDR4" in text
    table = EnergyTable.default()
    assert table.name.startswith("45 nm")
    assert table.numbers["arithmetic"] == {"add8": 0.03, "add32": 0.1, "mul8": 0.2, "mul32": 3.1}


def test_default_actions_follow_the_documented_rules() -> None:
    actions = EnergyTable.default().actions(CONFIG)
    assert set(actions) == set(ACTIONS)
    assert actions["pe.mac"] == pytest.approx(0.2 + 0.1)  # 8x8 multiply + 32-bit add
    # spad_in: 8 operands of 8 bits from 128 KiB: 10 pJ * 64/64 * sqrt(128 KiB / 8 KB)
    assert actions["spad_in.read"] == pytest.approx(10 * math.sqrt(16))
    # accumulator: 8 lanes of 32 bits from 64 KiB
    assert actions["acc.read"] == pytest.approx(10 * 256 / 64 * math.sqrt(8))
    # params: 512 rows of 8 lanes x 72 bits
    assert actions["params.read"] == pytest.approx(10 * 576 / 64 * math.sqrt(512 * 72 / 8192))
    assert actions["dram.read_bit"] == actions["dram.write_bit"] == 8.0
    assert actions["spad_in.write"] == actions["spad_in.read"]


def test_sram_scaling_reproduces_horowitz_points() -> None:
    sram = EnergyTable.default().numbers["sram"]
    assert sram_access_energy(sram, 64, 8192) == pytest.approx(10)
    assert sram_access_energy(sram, 64, 32768) == pytest.approx(20)
    assert sram_access_energy(sram, 64, 1 << 20) == pytest.approx(100, rel=0.15)


def test_energy_grows_with_memory_size_and_width() -> None:
    table = EnergyTable.default()
    small = table.actions(ArrayConfig(rows=8, cols=8, spad_kib=64, acc_kib=16))
    wide = table.actions(ArrayConfig(rows=16, cols=16, spad_kib=256, acc_kib=64))
    base = table.actions(CONFIG)
    assert small["spad_in.read"] < base["spad_in.read"] < wide["spad_in.read"]
    assert small["acc.read"] < base["acc.read"] < wide["acc.read"]


def test_a_user_file_changes_only_what_it_names(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[technology]\nname = "mine"\n[dram]\nread_bit = 4\n'
                    '[actions]\n"pe.mac" = 0.5\n')  # fmt: skip
    table = EnergyTable.load(path)
    actions, default = table.actions(CONFIG), EnergyTable.default().actions(CONFIG)
    assert table.name == "mine"
    assert actions["dram.read_bit"] == 4 and actions["pe.mac"] == 0.5
    changed = {key for key in ACTIONS if actions[key] != default[key]}
    assert changed == {"dram.read_bit", "pe.mac"}


@pytest.mark.parametrize(("text", "message"), [
    ("[sram]\nreference_energy = -1\n", "sram.reference_energy must be a non-negative number"),
    ("[sram]\nbogus = 1\n", "unknown key 'sram.bogus'"),
    ("[actions]\n\"pe.fly\" = 1\n", "unknown key 'actions.pe.fly'"),
    ("[dram]\nread_bit = \"8\"\n", "dram.read_bit must be a non-negative number, not '8'"),
    ("[actions]\n\"pe.mac\" = true\n", 'actions."pe.mac" must be a non-negative number'),
    ("dram = 3\n", "dram must be a [section]"),
    ("[dram\n", "is not valid TOML"),
])  # fmt: skip
def test_a_bad_file_is_one_line_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        EnergyTable.load(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read it"):
        EnergyTable.load(tmp_path / "none.toml")
