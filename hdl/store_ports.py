"""Port signatures and payload layouts of the STORE unit's memory and bus interfaces.

The memories themselves are instantiated at the top level; the STORE unit only sees these
ports. A memory read port follows `amaranth.lib.memory` semantics: an address presented with
`en` in cycle t is answered on `data` in cycle t + 1 (synchronous, not transparent).
"""

from amaranth.hdl import signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

__all__ = [
    "PARAMS_SHIFT_WIDTH",
    "memory_read_signature",
    "params_row_layout",
    "write_beat_layout",
]

PARAMS_SHIFT_WIDTH = 8
"""Width of a params lane's shift as stored (int8; meaningful range -31..31)."""


def memory_read_signature(depth: int, data_shape: object) -> wiring.Signature:
    """Return a synchronous memory read port as its user sees it.

    Members: `addr` (Out, max(1, ceil(log2(depth))) bits), `en` (Out, 1) and `data` (In,
    `data_shape`), valid in the cycle after `en`.
    """
    return wiring.Signature({
        "addr": Out(unsigned(max(1, ceil_log2(depth)))),
        "en": Out(1),
        "data": In(data_shape),
    })


def params_row_layout(cols: int) -> data.StructLayout:
    """Return one params row: per lane a bias (int32), a multiplier (int32) and a shift (int8)."""
    return data.StructLayout({
        "bias": data.ArrayLayout(signed(32), cols),
        "multiplier": data.ArrayLayout(signed(32), cols),
        "shift": data.ArrayLayout(signed(PARAMS_SHIFT_WIDTH), cols),
    })


def write_beat_layout(bus_bytes: int) -> data.StructLayout:
    """Return one external write beat: an aligned byte `addr`, `data` and byte `strobe`s."""
    return data.StructLayout({
        "addr": unsigned(32),
        "data": unsigned(8 * bus_bytes),
        "strobe": unsigned(bus_bytes),
    })

