"""`ArrayConfig`: the one description of an accelerator, shared by mapper, hdl and sim.

A configuration is a frozen dataclass; every impossible combination raises `ConfigError`
(a `ValueError`) from `__post_init__` with a message that says what to change. Variants are
made with `dataclasses.replace`, which re-runs the checks.
"""

import dataclasses
import enum
import re

from systolic.config_units import OptionalUnit, units_text
from systolic.errors import ConfigError

__all__ = ["MAX_MEMORY_KIB", "ArrayConfig", "Dataflow", "OptionalUnit"]


class Dataflow(enum.Enum):
    """Which operand stays in the processing elements while the others stream through."""

    WS = "ws"  #: weight-stationary: a tile of B is preloaded, A streams, partial sums flow down
    OS = "os"  #: output-stationary: A and B stream, each PE keeps its own accumulator
    BOTH = "both"  #: either one, chosen by each EXECUTE instruction (PRELOAD/COMPUTE or COMPUTE.OS)

    @property
    def weight_stationary(self) -> bool:
        """True when the array runs PRELOAD and COMPUTE (WS or BOTH)."""
        return self is not Dataflow.OS

    @property
    def output_stationary(self) -> bool:
        """True when the array runs COMPUTE.OS (OS or BOTH)."""
        return self is not Dataflow.WS

    @classmethod
    def parse(cls, text: str) -> "Dataflow":
        """Return the dataflow named `text` ("ws", "os" or "both", any case)."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ConfigError(
                f"unknown dataflow {text!r}: use 'ws' (weight-stationary), "
                f"'os' (output-stationary) or 'both' (either, per instruction)"
            ) from None


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


MAX_MEMORY_KIB = 16384
"""The largest scratchpad or accumulator memory, in KiB (16 MiB: well above any real
accelerator's on-chip buffers; the HDL and the simulators hold every row, and emitting a
4 MiB scratchpad already takes minutes)."""


@dataclasses.dataclass(frozen=True)
class ArrayConfig:
    """An accelerator configuration.

    Members
    -------
    rows, cols:
        Processing elements in the array, each 1 to 128.
    dataflow:
        `Dataflow.WS`, `Dataflow.OS` or `Dataflow.BOTH` (an array that runs either dataflow,
        chosen per EXECUTE instruction).
    input_width, weight_width:
        Signed operand widths in bits, 4 to 16 (default 8).
    acc_width:
        Accumulator width in bits (default 32); at least input_width + weight_width, at most 64.
    spad_kib:
        Scratchpad size in KiB (inputs and weights), 1 to MAX_MEMORY_KIB.
    acc_kib:
        Accumulator memory size in KiB, 1 to MAX_MEMORY_KIB.
    bus_bytes:
        External memory bus width in bytes per cycle, a power of two from 1 to 256.
    mem_latency:
        Cycles from an external read request to its data (default 8), 0 to 1024. The hardware's
        read buffering is sized by it, and every cycle count depends on it.
    without:
        The optional STORE-side units left out (`OptionalUnit`, default none): a frozenset of
        `OptionalUnit.ROW_UNIT` (SOFTMAX, LAYERNORM) and `OptionalUnit.TABLES` (activation
        table); `has(unit)` tells whether a unit is built.
    """

    rows: int = 8
    cols: int = 8
    dataflow: Dataflow = Dataflow.WS
    input_width: int = 8
    weight_width: int = 8
    acc_width: int = 32
    spad_kib: int = 256
    acc_kib: int = 64
    bus_bytes: int = 16
    mem_latency: int = 8
    without: frozenset[OptionalUnit] = frozenset()

    def __post_init__(self) -> None:
        for name in ("rows", "cols"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 1 <= value <= 128:
                raise ConfigError(f"{name} must be an integer from 1 to 128, not {value!r}")
        if not isinstance(self.dataflow, Dataflow):
            raise ConfigError(
                f"dataflow must be Dataflow.WS, Dataflow.OS or Dataflow.BOTH, not {self.dataflow!r}"
            )
        for name in ("input_width", "weight_width"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 4 <= value <= 16:
                raise ConfigError(f"{name} must be an integer from 4 to 16 bits, not {value!r}")
        product_width = self.input_width + self.weight_width
        if not isinstance(self.acc_width, int) or not product_width <= self.acc_width <= 64:
            raise ConfigError(
                f"acc_width must be from input_width + weight_width ({product_width}) to 64 bits, "
                f"not {self.acc_width!r}"
            )
        if not isinstance(self.bus_bytes, int) or not (
            _is_power_of_two(self.bus_bytes) and self.bus_bytes <= 256
        ):
            raise ConfigError(
                f"bus_bytes must be a power of two from 1 to 256, not {self.bus_bytes!r}"
            )
        if (
            not isinstance(self.mem_latency, int)
            or isinstance(self.mem_latency, bool)
            or not 0 <= self.mem_latency <= 1024
        ):
            raise ConfigError(
                f"mem_latency must be a whole number of cycles from 0 to 1024, "
                f"not {self.mem_latency!r}"
            )
        if not isinstance(self.without, frozenset) or not all(
                isinstance(unit, OptionalUnit) for unit in self.without):
            raise ConfigError(f"without must be a frozenset of OptionalUnit members, "
                              f"not {self.without!r}")
        for name in ("spad_kib", "acc_kib"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive whole number of KiB, not {value!r}")
            if value > MAX_MEMORY_KIB:
                raise ConfigError(
                    f"{name}={value} is larger than the {MAX_MEMORY_KIB} KiB (16 MiB) an "
                    "on-chip memory may have here (the hardware and its simulators build every "
                    f"row): use at most {MAX_MEMORY_KIB}"
                )
        # Double buffering needs room for two tiles of each operand and two accumulator tiles.
        spad_needed = 2 * (self.rows + self.cols) * self.spad_row_bytes
        if self.spad_kib * 1024 < spad_needed:
            raise ConfigError(
                f"spad_kib={self.spad_kib} is too small for a {self.rows}x{self.cols} array: "
                f"double-buffered operand tiles need at least {-(-spad_needed // 1024)} KiB; "
                f"raise spad_kib or use a smaller array"
            )
        acc_needed = 2 * self.rows * self.acc_row_bytes
        if self.acc_kib * 1024 < acc_needed:
            raise ConfigError(
                f"acc_kib={self.acc_kib} is too small for a {self.rows}x{self.cols} array: "
                f"two accumulator tiles need at least {-(-acc_needed // 1024)} KiB; "
                f"raise acc_kib or use a smaller array"
            )

    # -- derived sizes -------------------------------------------------------------------------

    @property
    def dim(self) -> int:
        """The larger array side: the width, in elements, of a scratchpad row."""
        return max(self.rows, self.cols)

    @property
    def operand_bytes(self) -> int:
        """Bytes that hold one operand element in memory (inputs and weights alike)."""
        return (max(self.input_width, self.weight_width) + 7) // 8

    @property
    def spad_row_bytes(self) -> int:
        """Bytes in one scratchpad row: `dim` operand elements."""
        return self.dim * self.operand_bytes

    @property
    def spad_depth(self) -> int:
        """Rows in the scratchpad."""
        return self.spad_kib * 1024 // self.spad_row_bytes

    @property
    def acc_row_bytes(self) -> int:
        """Bytes in one accumulator row: `cols` accumulators."""
        return self.cols * ((self.acc_width + 7) // 8)

    @property
    def acc_depth(self) -> int:
        """Rows in the accumulator memory."""
        return self.acc_kib * 1024 // self.acc_row_bytes

    def has(self, unit: OptionalUnit) -> bool:
        """True when the optional unit `unit` is built (not in `without`)."""
        return unit not in self.without

    @property
    def pes(self) -> int:
        """Processing elements in the array."""
        return self.rows * self.cols

    # -- text forms ------------------------------------------------------------------------------

    @property
    def shape_text(self) -> str:
        """The array size as the command line writes it, for example "16x16"."""
        return f"{self.rows}x{self.cols}"

    @staticmethod
    def parse_shape(text: str) -> tuple[int, int]:
        """Parse an array size "RxC" (or "N" for NxN) into (rows, cols)."""
        match = re.fullmatch(r"\s*(\d+)\s*(?:[xX*]\s*(\d+))?\s*", text)
        if not match:
            raise ConfigError(f"array size {text!r} is not of the form RxC, for example 8x8")
        rows = int(match.group(1))
        cols = int(match.group(2) or rows)
        return rows, cols

    def to_dict(self) -> dict[str, object]:
        """Return the fields as plain JSON-ready values (dataflow as "ws"/"os"/"both";
        `without` as a list of unit names, and left out when no unit is: the dictionary of a
        configuration with every unit is what it was before units could be omitted)."""
        fields = dataclasses.asdict(self)
        fields["dataflow"] = self.dataflow.value
        del fields["without"]
        if self.without:
            fields["without"] = units_text(self.without).split(",")
        return fields
