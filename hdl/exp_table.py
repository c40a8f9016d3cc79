"""`ExpTable`: the STORE unit's 256-entry u16 exp table (SOFTMAX) and its per-lane lookup."""

from amaranth.hdl import Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.isa.table import EXP_TABLE_BYTES, TABLE_ENTRIES

__all__ = ["ENTRY_BITS", "ExpTable", "exp_load_layout", "exp_table_rows"]

ENTRY_BITS = 16
"""Width of an exp table entry (unsigned)."""


def exp_table_rows(lanes: int) -> int:
    """Return the rows of `lanes` bytes a wide TABLE reads: `ceil(512 / lanes)`."""
    return -(-EXP_TABLE_BYTES // lanes)


def exp_load_layout(lanes: int) -> data.StructLayout:
    """Return one load beat: the row number `row` and its `lanes` bytes (int8 operands)."""
    return data.StructLayout({
        "row": range(exp_table_rows(lanes)),
        "data": data.ArrayLayout(signed(8), lanes),
    })


class ExpTable(wiring.Component):
    """Hold the exp table E (256 unsigned 16-bit entries) and look up one entry per lane.

    docs/isa.md, "SOFTMAX and the exp table": the table is the 512 bytes
    `s[k]` (E[e] = s[2e] + 256 s[2e+1]); a load beat of row r sets `s[r * lanes + j] =
    u8(data[j])` for every lane j with `r * lanes + j < 512` (bytes of the last row beyond
    511 are dropped). Every entry is 0 after reset.

    Storage: 4096 flip-flops (the 512 bytes, byte k at bit 8k), so a load writes a whole row
    in one cycle and every lane has its own read port: a 256:1 multiplexer tree of 16 bits
    indexed by the lane's u8 index, followed by the output register.

    Parameters
    ----------
    lanes : int
        Elements per row (the scratchpad row width `dim`), at least 1.

    Members
    -------
    i_load : ``In(stream.Signature(exp_load_layout(lanes), always_ready=True))``
        Load beats {row, data}. A beat is visible to a lookup taken in the next cycle.
    i_index : ``In(stream.Signature(ArrayLayout(unsigned(8), lanes), always_ready=True))``
        Per lane an index 0..255.
    o_entry : ``Out(stream.Signature(ArrayLayout(unsigned(16), lanes), always_ready=True))``
        E[index] per lane: an index taken in cycle t is valid in cycle t + 1 (latency 1, one
        row per cycle, no backpressure).
    """

    def __init__(self, *, lanes: int):
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        self._lanes = lanes
        super().__init__({
            "i_load": In(stream.Signature(exp_load_layout(lanes), always_ready=True)),
            "i_index": In(stream.Signature(data.ArrayLayout(unsigned(8), lanes),
                                           always_ready=True)),
            "o_entry": Out(stream.Signature(data.ArrayLayout(unsigned(ENTRY_BITS), lanes),
                                            always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = self._lanes
        entries = Signal(ENTRY_BITS * TABLE_ENTRIES)

        load = self.i_load.payload
        with m.If(self.i_load.valid), m.Switch(load.row):
            for r in range(exp_table_rows(lanes)):
                with m.Case(r):
                    for k in range(r * lanes, min(EXP_TABLE_BYTES, (r + 1) * lanes)):
                        m.d.sync += entries[8 * k:8 * k + 8].eq(load.data[k - r * lanes])

        m.d.sync += self.o_entry.valid.eq(self.i_index.valid)
        for j in range(lanes):
            m.d.sync += self.o_entry.payload[j].eq(_select(entries, self.i_index.payload[j]))
        return m


def _select(entries: Value, index: Value) -> Value:
    """Return entry `index` of `entries` through a binary tree of 2:1 multiplexers."""
    level = [entries[ENTRY_BITS * e:ENTRY_BITS * (e + 1)] for e in range(TABLE_ENTRIES)]
    for bit in index:
        level = [Mux(bit, high, low) for low, high in zip(level[0::2], level[1::2], strict=True)]
    return level[0]
