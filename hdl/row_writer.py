"""`RowWriter`: writes rows of elements to external memory at a row pattern, in aligned beats."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from systolic.hdl.ports import write_beat_layout

__all__ = ["RowWriter"]


class RowWriter(wiring.Component):
    """Write each row taken on `i_row` as `row_bytes` bytes at the next address of a row pattern.

    Row r goes to `row_base(r) = ext + (r // n0) * stride1 + (r % n0) * stride0` (docs/isa.md,
    "Address patterns"; 32-bit wrap-around arithmetic), as the aligned bus beats that cover
    bytes `row_base(r) .. row_base(r) + row_bytes - 1`, with byte strobes on exactly those
    bytes. `flip` inverts bit 7 of every byte written (uint8 outputs).

    Parameters
    ----------
    elements : int
        Elements per row, at least 1.
    element_bytes : int
        Bytes per element (little-endian, the low bytes of the signed element), 1 or 2.
    bus_bytes : int
        Bytes per beat, a power of two.

    Members
    -------
    i_row : ``In(stream.Signature(ArrayLayout(signed(8 * element_bytes), elements)))``
        Rows, in order.
    o_write : ``Out(stream.Signature(write_beat_layout(bus_bytes)))``
        Beats {addr, data, strobe}; `addr` is aligned to `bus_bytes`.
    start : ``In(1)``
        Pulse before an instruction's first row: the next row is row 0 of the pattern.
    ext, n0, stride0, stride1, row_bytes, flip : ``In(...)``
        The pattern and row size (1 .. elements * element_bytes); held while rows are written.
    direct, direct_addr, direct_bytes : ``In(...)``
        Read with the row taken on `i_row`: when `direct` is 1 the row goes to `direct_addr`
        as `direct_bytes` bytes (1 .. elements * element_bytes) instead, and the pattern does
        not advance (SOFTMAX's chunks of a long row).
    row_done : ``Out(1)``
        The last beat of a row transfers on `o_write` in this cycle.

    Latency, throughput and backpressure
    ------------------------------------
    A row taken in cycle t puts its first beat on `o_write` in cycle t + 1; a row of b beats
    occupies `o_write` for b transfers, and the next row is taken in the cycle of the current
    row's last transfer, so rows follow each other with no idle cycle. `i_row.ready` depends
    combinationally on `o_write.ready`.
    """

    def __init__(self, *, elements: int, element_bytes: int, bus_bytes: int):
        if not isinstance(elements, int) or elements < 1:
            raise ValueError(f"elements must be a positive integer, not {elements!r}")
        if element_bytes not in (1, 2):
            raise ValueError(f"element_bytes must be 1 or 2, not {element_bytes!r}")
        exact_log2(bus_bytes)
        self._elements, self._element_bytes, self._bus_bytes = elements, element_bytes, bus_bytes
        row_bytes = elements * element_bytes
        super().__init__({
            "i_row": In(stream.Signature(
                data.ArrayLayout(signed(8 * element_bytes), elements))),
            "o_write": Out(stream.Signature(write_beat_layout(bus_bytes))),
            "start": In(1),
            "ext": In(unsigned(32)),
            "n0": In(unsigned(32)),
            "stride0": In(signed(32)),
            "stride1": In(signed(32)),
            "row_bytes": In(range(row_bytes + 1)),
            "flip": In(1),
            "direct": In(1),
            "direct_addr": In(unsigned(32)),
            "direct_bytes": In(range(row_bytes + 1)),
            "row_done": Out(1),
        })

    def max_beats(self) -> int:
        """Return the most beats one row can take (the worst alignment of the widest row)."""
        return (self._bus_bytes - 1 + self._elements * self._element_bytes - 1) \
            // self._bus_bytes + 1

    def elaborate(self, platform):
        m = Module()
        bus = self._bus_bytes
        log_bus = exact_log2(bus)
        row_bytes = self._elements * self._element_bytes
        beats = self.max_beats()

        # Row pattern: the base of the next row.
        addr = Signal(32)
        base1 = Signal(32)
        r0 = Signal(32)

        # The row being written: its bytes already moved to their lanes in the beats.
        wide = Signal(8 * bus * beats)
        mask = Signal(bus * beats)
        beat_base = Signal(32)
        last_beat = Signal(range(beats))
        beat = Signal(range(beats))
        valid = Signal()

        finishing = valid & self.o_write.ready & (beat == last_beat)
        take = self.i_row.valid & self.i_row.ready
        m.d.comb += [
            self.i_row.ready.eq(~valid | finishing),
            self.row_done.eq(finishing),
            self.o_write.valid.eq(valid),
            self.o_write.payload.addr.eq(beat_base + (beat << log_bus)),
            self.o_write.payload.data.eq(wide.word_select(beat, 8 * bus)),
            self.o_write.payload.strobe.eq(mask.word_select(beat, bus)),
        ]

        target = Signal(32, name="target")
        size = Signal(range(row_bytes + 1), name="size")
        m.d.comb += [target.eq(Mux(self.direct, self.direct_addr, addr)),
                     size.eq(Mux(self.direct, self.direct_bytes, self.row_bytes))]
        offset = target[:log_bus] if log_bus else Const(0, 1)
        flip_bits = Cat(Const(0x80, 8) for _ in range(row_bytes))
        raw = self.i_row.payload.as_value() ^ Mux(self.flip, flip_bits, 0)
        thermometer = Cat(Const(j, 16) < size for j in range(row_bytes))
        with m.If(take):
            m.d.sync += [
                wide.eq(raw << (offset * 8)),
                mask.eq(thermometer << offset),
                beat_base.eq(target - offset),
                last_beat.eq((offset + size - 1) >> log_bus),
                beat.eq(0),
                valid.eq(1),
            ]
            with m.If(~self.direct & (r0 + 1 < self.n0)):
                m.d.sync += [r0.eq(r0 + 1), addr.eq(addr + self.stride0)]
            with m.Elif(~self.direct):
                m.d.sync += [r0.eq(0), base1.eq(base1 + self.stride1),
                             addr.eq(base1 + self.stride1)]
        with m.Elif(finishing):
            m.d.sync += valid.eq(0)
        with m.Elif(valid & self.o_write.ready):
            m.d.sync += beat.eq(beat + 1)
        with m.If(self.start):
            m.d.sync += [addr.eq(self.ext), base1.eq(self.ext), r0.eq(0)]
        return m
