"""Byte placement of the DMA: bus beats into the row being built (`RowGather`).

A read response is one aligned beat of `bus_bytes` bytes. Its *placement* says where it goes:
beat byte `k` lands on row byte `p = row_bytes + k - sel`, and only row bytes `lo <= p < hi`
(the part of the beat that belongs to the current segment) are taken. The row buffer starts
zeroed, so row bytes no segment covers stay 0. The beat with `last` set completes the row: the
row (with that beat merged) leaves on `o_row` in the next cycle and the buffer is zeroed for the
next row in the same edge, so rows follow each other with no bubble.

`flip` inverts bit 7 of every beat byte (uint8 tensors, docs/isa.md "uint8 tensors").

The shifter is one byte-granular barrel shifter (`bit_select` of a zero-padded window,
`row_bytes + bus_bytes` byte positions) plus two comparators per row byte for the enable range.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RowGather", "placement_layout"]


def placement_layout(bus_bytes: int, row_bytes: int) -> data.StructLayout:
    """Return the layout of one beat's placement: {sel, lo, hi, last, flip}."""
    position = (row_bytes + 1).bit_length()
    return data.StructLayout({
        "sel": (row_bytes + bus_bytes).bit_length(),
        "lo": position,
        "hi": position,
        "last": 1,
        "flip": 1,
    })


class RowGather(wiring.Component):
    """Assemble rows of `row_bytes` bytes from placed bus beats.

    Members
    -------
    i_beat : In(stream {data: bus_bytes*8, place: placement_layout, meta: meta_layout}), always ready
        One response beat per cycle at most, with its placement and pass-through `meta`.
    o_row : Out(stream {data: ArrayLayout(8, row_bytes), meta: meta_layout}), always ready
        A completed row and the `meta` of its last beat, valid for one cycle.

    Latency: a beat with `last` taken in cycle t gives its row in cycle t + 1.
    Throughput: one beat per cycle, rows back to back. No backpressure on either side.
    """

    def __init__(self, *, bus_bytes: int, row_bytes: int, meta_layout: data.Layout) -> None:
        if bus_bytes < 1 or row_bytes < 1:
            raise ValueError(f"bus_bytes and row_bytes must be positive, not {bus_bytes}, "
                             f"{row_bytes}")
        self.bus_bytes = bus_bytes
        self.row_bytes = row_bytes
        self.place_layout = placement_layout(bus_bytes, row_bytes)
        super().__init__({
            "i_beat": In(stream.Signature(data.StructLayout({
                "data": 8 * bus_bytes,
                "place": self.place_layout,
                "meta": meta_layout,
            }), always_ready=True)),
            "o_row": Out(stream.Signature(data.StructLayout({
                "data": data.ArrayLayout(8, row_bytes),
                "meta": meta_layout,
            }), always_ready=True)),
        })

    def elaborate(self, platform: object) -> Module:
        """Build the shifter, the enable mask and the row buffer."""
        m = Module()
        row_bits = 8 * self.row_bytes
        beat = self.i_beat.payload
        place = beat.place

        flip_mask = Const(int("80" * self.bus_bytes, 16), 8 * self.bus_bytes)
        raw = Mux(place.flip, beat.data ^ flip_mask, beat.data)
        window = Cat(Const(0, row_bits), raw, Const(0, row_bits))
        shifted = window.bit_select(place.sel * 8, row_bits)

        enables = [(place.lo <= p) & (place.hi > p) for p in range(self.row_bytes)]
        mask = Cat(*(enable.replicate(8) for enable in enables))

        buffer = Signal(row_bits)
        merged = buffer | (shifted & mask)

        m.d.sync += self.o_row.valid.eq(0)
        with m.If(self.i_beat.valid):
            with m.If(place.last):
                m.d.sync += [
                    buffer.eq(0),
                    self.o_row.valid.eq(1),
                    self.o_row.payload.data.eq(merged),
                    self.o_row.payload.meta.eq(beat.meta),
                ]
            with m.Else():
                m.d.sync += buffer.eq(merged)
        return m
