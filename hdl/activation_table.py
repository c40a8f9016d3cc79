"""`ActivationTable`: the STORE unit's 256-entry int8 table and its registered per-lane lookup."""

from amaranth.hdl import Cat, Module, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.isa.table import TABLE_ENTRIES as ENTRIES

__all__ = ["ActivationTable", "load_layout", "table_rows"]


def table_rows(lanes: int) -> int:
    """Return the rows of `lanes` entries a load takes: `ceil(256 / lanes)`."""
    return -(-ENTRIES // lanes)


def load_layout(lanes: int) -> data.StructLayout:
    """Return one load beat: the row number `row` and its `lanes` entries."""
    return data.StructLayout({
        "row": range(table_rows(lanes)),
        "data": data.ArrayLayout(signed(8), lanes),
    })


class ActivationTable(wiring.Component):
    """Hold the activation table T (256 signed 8-bit entries) and map rows through it.

    docs/isa.md, "Activation unit: TABLE and the lut flags": a load beat of row r sets
    `T[r * lanes + j] = data[j]` for every lane j with `r * lanes + j < 256` (entries of the
    last row beyond 255 are dropped); a lookup maps every lane's int8 value y to `T[y + 128]`.
    Every entry is 0 after reset.

    Storage: 2048 flip-flops (one 2048-bit register with synchronous reset), so a load writes
    a whole row in one cycle and every lane has its own read port. The lookup is registered:
    `lanes` read ports, each a 256:1 multiplexer of 8 bits whose index is y with bit 7
    inverted (y + 128), followed by the output register. Measured (Yosys `synth -flatten`,
    8 lanes): 37.7k generic cells, of which 2113 flip-flops; an explicit tree of 2:1 muxes
    gave the same count within 3% and simulates far slower, hence `word_select`. (On an FPGA
    the alternative is one 256 x 8 distributed RAM per lane, written by row; the
    reset-to-zero contract and the single-cycle row load are why registers were chosen.)

    Parameters
    ----------
    lanes : int
        Elements per row (the scratchpad row width `dim`), at least 1.

    Members
    -------
    i_load : ``In(stream.Signature(load_layout(lanes), always_ready=True))``
        Load beats {row, data}; row < ceil(256 / lanes). A beat is visible to a lookup taken
        in the next cycle.
    i_row : ``In(stream.Signature(ArrayLayout(signed(8), lanes), always_ready=True))``
        Rows of int8 values to map.
    o_row : ``Out(stream.Signature(ArrayLayout(signed(8), lanes), always_ready=True))``
        The mapped rows, in order: a row taken in cycle t is valid in cycle t + 1 (latency 1,
        one row per cycle; no backpressure: the consumer takes every row).
    """

    def __init__(self, *, lanes: int):
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        self._lanes = lanes
        row = data.ArrayLayout(signed(8), lanes)
        super().__init__({
            "i_load": In(stream.Signature(load_layout(lanes), always_ready=True)),
            "i_row": In(stream.Signature(row, always_ready=True)),
            "o_row": Out(stream.Signature(row, always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = self._lanes
        entries = Signal(8 * ENTRIES)

        load = self.i_load.payload
        with m.If(self.i_load.valid), m.Switch(load.row):
            for r in range(table_rows(lanes)):
                with m.Case(r):
                    for e in range(r * lanes, min(ENTRIES, (r + 1) * lanes)):
                        m.d.sync += entries[8 * e:8 * e + 8].eq(load.data[e - r * lanes])

        m.d.sync += self.o_row.valid.eq(self.i_row.valid)
        for j in range(lanes):
            value = self.i_row.payload[j]
            index = Cat(value[:7], ~value[7])  # y + 128 for an int8 y
            m.d.sync += self.o_row.payload[j].eq(entries.word_select(index, 8).as_signed())
        return m
