"""Per-action energies: the default 45 nm table shipped with the package, or the user's.

`EnergyTable.default()` reads `default_45nm.toml` (package data beside this module);
`EnergyTable.load(path)` reads a user's TOML file with the same sections, each key optional
(a missing key keeps the default), so a file may change one number. A file that is not TOML,
or has an unknown key or a value that is not a non-negative number, raises ConfigError with
one line naming the file and the key. `table.actions(config)` returns the energy of every
action (`ACTIONS`, "component.action" -> pJ) for `config`, derived from the table's numbers
by the rules of docs/energy.md ("Per-action energies"), with `[actions]` entries of the
table winning over the derived values.
"""

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.isa.memories import PARAMS_DEPTH

__all__ = ["ACTIONS", "DEFAULT_TABLE", "EnergyTable", "sram_access_energy"]

DEFAULT_TABLE = Path(__file__).with_name("default_45nm.toml")

ACTIONS = (
    "pe.mac", "pe.idle",
    "spad_in.read", "spad_in.write", "spad_wt.read", "spad_wt.write",
    "params.read", "params.write", "acc.read", "acc.write", "acc.add",
    "output_stage.lane", "vector.lane", "vector.mul_lane", "lut.lookup", "lut.write",
    "dram.read_bit", "dram.write_bit",
)  # fmt: skip
"""Every action with an energy, "component.action"."""

_NUMBERS = {
    "arithmetic": ("add8", "add32", "mul8", "mul32"),
    "pe": ("idle_slot",),
    "sram": ("reference_energy", "reference_bits", "reference_bytes", "size_exponent",
             "write_factor"),
    "dram": ("read_bit", "write_bit"),
}  # fmt: skip
"""The numeric keys of each section (besides [technology] name and [actions])."""

PARAMS_LANE_BITS = 72
"""Bits of one params lane in the RTL's params row: bias 32, multiplier 32, shift 8."""
LUT_ENTRIES = 256


def sram_access_energy(sram: Mapping[str, float], bits: int, capacity_bytes: int) -> float:
    """Return the read energy (pJ) of one `bits`-wide access to an SRAM of `capacity_bytes`:
    reference_energy * bits / reference_bits * (capacity / reference_bytes) ** size_exponent."""
    size = (capacity_bytes / sram["reference_bytes"]) ** sram["size_exponent"]
    return float(sram["reference_energy"] * bits / sram["reference_bits"] * size)


@dataclasses.dataclass(frozen=True)
class EnergyTable:
    """A technology's numbers: `name`, `numbers` (section -> key -> value, as `_NUMBERS`),
    `overrides` ("component.action" -> pJ) and `source` (the file it came from)."""

    name: str
    numbers: Mapping[str, Mapping[str, float]]
    overrides: Mapping[str, float]
    source: str

    @classmethod
    def default(cls) -> "EnergyTable":
        """Return the table shipped with the package (45 nm)."""
        return _parse(_read(DEFAULT_TABLE), str(DEFAULT_TABLE), None)

    @classmethod
    def load(cls, path: str | Path) -> "EnergyTable":
        """Return the default table with the numbers of the TOML file `path` put over it."""
        return _parse(_read(Path(path)), str(path), cls.default())

    def actions(self, config: ArrayConfig) -> dict[str, float]:
        """Return the energy (pJ) of every action of `ACTIONS` on `config`."""
        derived = _derived(self.numbers, config)
        return {action: float(self.overrides.get(action, derived[action])) for action in ACTIONS}

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source,
                "numbers": {section: dict(values) for section, values in self.numbers.items()},
                "overrides": dict(self.overrides)}  # fmt: skip


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as error:
        raise ConfigError(f"energy table {path}: cannot read it ({error.strerror})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"energy table {path} is not valid TOML: {error}") from None


def _number(source: str, key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0:
        raise ConfigError(
            f"energy table {source}: {key} must be a non-negative number, not {value!r}")
    return float(value)


def _parse(document: dict[str, Any], source: str, base: "EnergyTable | None") -> EnergyTable:
    numbers = {s: dict(v) for s, v in base.numbers.items()} if base else {s: {} for s in _NUMBERS}
    overrides = dict(base.overrides) if base else {}
    name = base.name if base else ""
    for section, values in document.items():
        if not isinstance(values, dict):
            raise ConfigError(f"energy table {source}: {section} must be a [section]")
        for key, value in values.items():
            where = f"{section}.{key}"
            if section == "technology" and key == "name":
                name = str(value)
            elif section == "actions" and key in ACTIONS:
                overrides[key] = _number(source, f'actions."{key}"', value)
            elif key in _NUMBERS.get(section, ()):
                numbers[section][key] = _number(source, where, value)
            else:
                raise ConfigError(f"energy table {source}: unknown key {where!r}")
    for section, keys in _NUMBERS.items():
        for key in keys:
            if key not in numbers[section]:
                raise ConfigError(f"energy table {source}: {section}.{key} is missing")
    if numbers["sram"]["reference_bits"] == 0 or numbers["sram"]["reference_bytes"] == 0:
        raise ConfigError(f"energy table {source}: sram.reference_bits and "
                          f"sram.reference_bytes must be positive")  # fmt: skip
    return EnergyTable(name or source, numbers, overrides, source)


def _derived(numbers: Mapping[str, Mapping[str, float]], config: ArrayConfig) -> dict[str, float]:
    """Return every action's energy by the rules of docs/energy.md ("Per-action energies")."""
    arith, sram = numbers["arithmetic"], numbers["sram"]
    add8, add32, mul8, mul32 = (arith[k] for k in ("add8", "add32", "mul8", "mul32"))
    iw, ww, aw, dim, cols = (config.input_width, config.weight_width, config.acc_width,
                             config.dim, config.cols)  # fmt: skip
    half_spad = config.spad_kib * 512
    memories = {  # name -> (bits per access, capacity in bytes)
        "spad_in": (dim * iw, half_spad),
        "spad_wt": (dim * ww, half_spad),
        "params": (PARAMS_LANE_BITS * cols, PARAMS_DEPTH * PARAMS_LANE_BITS * cols // 8),
        "acc": (cols * aw, config.acc_kib * 1024),
    }
    actions = {
        "pe.mac": mul8 * iw * ww / 64 + add32 * aw / 32,
        "pe.idle": numbers["pe"]["idle_slot"],
        "acc.add": add32 * aw / 32,
        "output_stage.lane": (add32 * (aw + 1) / 32 + mul32 * (aw + 1) * 32 / 1024
                              + 2 * add8 * 11 / 8),
        "vector.lane": add8 * (iw + 1) / 8 + mul32 * (iw + 1) * 32 / 1024
        + add32 * (iw + 65) / 32,
        "vector.mul_lane": mul8 * (iw + 33) * (iw + 1) / 64,  # PRODUCT's 41 x 9 multiply
        "lut.lookup": sram_access_energy(sram, 8, LUT_ENTRIES),
        "lut.write": sram_access_energy(sram, 8, LUT_ENTRIES) * sram["write_factor"],
        "dram.read_bit": numbers["dram"]["read_bit"],
        "dram.write_bit": numbers["dram"]["write_bit"],
    }
    for memory, (bits, capacity) in memories.items():
        read = sram_access_energy(sram, bits, capacity)
        actions[f"{memory}.read"] = read
        actions[f"{memory}.write"] = read * sram["write_factor"]
    return actions
