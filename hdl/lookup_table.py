"""`LookupTable`: one of the STORE unit's 256-entry tables, loaded by rows, looked up per lane."""

from amaranth.hdl import Cat, Module, Mux, Shape, Signal, Value, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from systolic.isa.table import TABLE_ENTRIES

__all__ = ["LookupTable", "load_bytes", "load_layout", "load_rows"]


def load_rows(lanes: int, entry_bytes: int) -> int:
    """Return the rows of `lanes` bytes a load takes: `ceil(256 · entry_bytes / lanes)`."""
    return -(-TABLE_ENTRIES * entry_bytes // lanes)


def load_bytes(row: Value, lanes: int, entry_bytes: int) -> Value:
    """Return the table bytes a load of row `row` writes: `lanes`, fewer in the last row."""
    rows, size = load_rows(lanes, entry_bytes), TABLE_ENTRIES * entry_bytes
    return Mux(row == rows - 1, size - (rows - 1) * lanes, lanes)


def load_layout(lanes: int, entry_bytes: int) -> data.StructLayout:
    """Return one load beat: the row number `row` and its `lanes` bytes (int8 operands)."""
    return data.StructLayout({
        "row": range(load_rows(lanes, entry_bytes)),
        "data": data.ArrayLayout(signed(8), lanes),
    })


def _divmod(value: Value, divisor: int) -> tuple[Value, Value]:
    """Return (value // divisor, value % divisor): bit slices when divisor is a power of 2."""
    if divisor & (divisor - 1) == 0:
        bits = ceil_log2(divisor)
        return value[bits:], value[:bits]
    return value // divisor, value % divisor


class LookupTable(wiring.Component):
    """Hold 256 entries of shape `entry` and look up one entry per lane.

    docs/isa.md, "Activation unit: TABLE and the lut flags" and "SOFTMAX and the exp table":
    the table is the byte string `s` of `256 · entry_bytes` bytes, entry e being the
    little-endian bytes `s[e · entry_bytes ..]` (`entry_bytes = entry.width / 8`); a load
    beat of row r sets `s[r · lanes + j] = data[j]` for every lane j with `r · lanes + j` in
    the string (bytes of the last row beyond it are never read). Every entry reads 0 after
    reset. The activation table is `LookupTable(lanes=dim, entry=signed(8))` (the STORE unit
    indexes it with `y + 128`), the exp table `LookupTable(lanes=dim, entry=unsigned(16))`.

    Storage: an `amaranth.lib.memory.Memory` of `load_rows` rows of `lanes` bytes with one
    write port (a load writes its row in one cycle) and one asynchronous read port per lane
    (two when an entry can straddle two rows, `lanes mod entry_bytes != 0`), so synthesis
    maps it to LUT RAM (one copy per read port) and the Python simulator reads a list. A lane
    reads row `index · entry_bytes // lanes`, selects its entry among the row's bytes (a
    `lanes`-way multiplexer) and registers it. The memory's initial contents are not relied
    on (synthesis may drop them): one flip-flop per row, cleared by reset and set by the
    row's load, masks the bytes of rows never loaded to 0. Measured (lanes 8, Yosys 0.69
    `synth_ecp5`, the flow of `systolic.verilog.fpga_flow`): the int8 table maps to 256
    TRELLIS_DPR16X4 LUT RAMs, 2.1k LUT4 and 97 flip-flops (the 2048-flip-flop table it
    replaces: 33k LUT4, 26k wide multiplexers, 2.1k flip-flops), the u16 table to 512
    TRELLIS_DPR16X4, 4.6k LUT4 and 193 flip-flops (was 66k LUT4, 52k wide multiplexers,
    4.2k flip-flops).

    Parameters
    ----------
    lanes : int
        Entries looked up per cycle, and bytes per load row (the scratchpad row width `dim`).
    entry : Shape
        The entries' shape: a whole number of bytes, at most `lanes + 1` of them.

    Members
    -------
    i_load : ``In(stream.Signature(load_layout(lanes, entry_bytes), always_ready=True))``
        Load beats {row, data}; a beat is visible to a lookup taken in the next cycle (a lookup
        in the same cycle sees the row before the beat).
    i_index : ``In(stream.Signature(ArrayLayout(unsigned(8), lanes), always_ready=True))``
        Per lane an entry number 0..255.
    o_entry : ``Out(stream.Signature(ArrayLayout(entry, lanes), always_ready=True))``
        The entries, in order: indices taken in cycle t give entries valid in cycle t + 1
        (latency 1, registered; one row per cycle; no backpressure).
    """

    def __init__(self, *, lanes: int, entry: Shape):
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        entry = Shape.cast(entry)
        if entry.width % 8 or not 8 <= entry.width <= 8 * (lanes + 1):
            raise ValueError(f"entry must be 8 to {8 * (lanes + 1)} bits in whole bytes, not "
                             f"{entry.width}")
        self._lanes, self._entry = lanes, entry
        self.entry_bytes = entry.width // 8
        super().__init__({
            "i_load": In(stream.Signature(load_layout(lanes, self.entry_bytes),
                                          always_ready=True)),
            "i_index": In(stream.Signature(data.ArrayLayout(unsigned(8), lanes),
                                           always_ready=True)),
            "o_entry": Out(stream.Signature(data.ArrayLayout(entry, lanes), always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        lanes, size = self._lanes, self.entry_bytes
        rows = load_rows(lanes, size)
        m.submodules.ram = ram = Memory(shape=8 * lanes, depth=rows, init=[])
        loaded = Signal(rows)
        load = self.i_load
        write = ram.write_port()
        m.d.comb += [write.addr.eq(load.payload.row), write.data.eq(load.payload.data),
                     write.en.eq(load.valid)]
        with m.If(load.valid):
            m.d.sync += loaded.bit_select(load.payload.row, 1).eq(1)

        m.d.sync += self.o_entry.valid.eq(self.i_index.valid)
        for j in range(lanes):
            entry = self._lookup(m, ram, loaded, self.i_index.payload[j])
            m.d.sync += self.o_entry.payload[j].eq(entry)
        return m

    def _lookup(self, m, ram, loaded, index):
        """Return entry `index`: its row(s) read, rows never loaded as 0, its bytes selected."""
        lanes, size, width = self._lanes, self.entry_bytes, self._entry.width
        if lanes % size:  # an entry may straddle two rows: read both, select from byte `offset`
            row, offset = _divmod(index * size, lanes)
            rows = [row, Mux(row + 1 < len(loaded), row + 1, row)]
        else:  # entry `offset` of its row
            row, offset = _divmod(index, lanes // size)
            rows = [row]
        words = []
        for address in rows:
            port = ram.read_port(domain="comb")
            m.d.comb += port.addr.eq(address)
            words.append(Mux(loaded.bit_select(address, 1), port.data, 0))
        if len(words) > 1:
            return Cat(*words).bit_select(offset * 8, width)
        return words[0].word_select(offset, width)
