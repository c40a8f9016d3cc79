"""Row layouts and port signatures shared by the units and the top level.

The memories (spad_in, spad_wt, params) are instantiated at the top level; the units see
them only through these ports, so a writer and a reader of the same memory agree on its
layout by construction.

- A read port follows `amaranth.lib.memory` semantics: an address presented with `en` in
  cycle t is answered on `data` in cycle t + 1 (synchronous, not transparent); while `en` is
  low `data` holds.
- A write port writes `data` to `addr` in every cycle `en` is high.
"""

from amaranth.hdl import signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = [
    "PARAMS_SHIFT_WIDTH",
    "addr_width",
    "memory_read_signature",
    "memory_write_signature",
    "params_row_layout",
    "spad_row_layout",
    "write_beat_layout",
]

PARAMS_SHIFT_WIDTH = 8
"""Width of a params lane's shift as stored (int8; meaningful range -31..31)."""


def addr_width(depth: int) -> int:
    """Return the bits of a row address for a memory of `depth` rows (at least 1)."""
    return max(1, (depth - 1).bit_length())


def spad_row_layout(width: int, dim: int) -> data.ArrayLayout:
    """Return one scratchpad row: `dim` signed `width`-bit operands."""
    return data.ArrayLayout(signed(width), dim)


def params_row_layout(cols: int) -> data.StructLayout:
    """Return one params row: all `cols` biases (int32), then all multipliers (int32), then all
    shifts (int8): the same order as the row's bytes in external memory (docs/isa.md)."""
    return data.StructLayout({
        "bias": data.ArrayLayout(signed(32), cols),
        "multiplier": data.ArrayLayout(signed(32), cols),
        "shift": data.ArrayLayout(signed(PARAMS_SHIFT_WIDTH), cols),
    })


def memory_read_signature(depth: int, row_layout: data.Layout) -> wiring.Signature:
    """Return a synchronous memory read port as its user sees it: `addr`, `en` out, `data` in."""
    return wiring.Signature({
        "addr": Out(unsigned(addr_width(depth))),
        "en": Out(1),
        "data": In(row_layout),
    })


def memory_write_signature(depth: int, row_layout: data.Layout) -> wiring.Signature:
    """Return a memory write port as its writer sees it: `addr`, `data`, `en` out."""
    return wiring.Signature({
        "addr": Out(unsigned(addr_width(depth))),
        "data": Out(row_layout),
        "en": Out(1),
    })


def write_beat_layout(bus_bytes: int) -> data.StructLayout:
    """Return one external write beat: an aligned byte `addr`, `data` and byte `strobe`s."""
    return data.StructLayout({
        "addr": unsigned(32),
        "data": unsigned(8 * bus_bytes),
        "strobe": unsigned(bus_bytes),
    })
