"""`Accumulator`: the accumulator memory, rows of `cols` accumulators with read-modify-write.

The array's results arrive on `i_write` and either overwrite a row or are added to it; the STORE
unit reads rows through `read`. One `amaranth.lib.memory.Memory` holds the rows, with one write
port and two synchronous read ports (one for the read-modify-write, one for `read`).
"""

from amaranth import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from systolic.config import ArrayConfig

__all__ = [
    "READ_LATENCY",
    "WRITE_TO_READ",
    "Accumulator",
    "read_signature",
    "row_shape",
    "write_payload_layout",
]

READ_LATENCY = 1
"""Cycles from a request taken on `read.req` to its response being valid on `read.resp`."""

WRITE_TO_READ = 2
"""A write taken in cycle t is seen by every read request taken in cycle t + 2 or later."""


def row_shape(depth: int) -> unsigned:
    """Return the shape of a row address: enough bits for `depth` rows, at least one."""
    return unsigned(max(1, ceil_log2(depth)))


def write_payload_layout(depth: int, cols: int, acc_width: int) -> data.StructLayout:
    """Return the `i_write` payload: the `row`, its `cols` values and `accumulate`."""
    return data.StructLayout({
        "row": row_shape(depth),
        "data": data.ArrayLayout(signed(acc_width), cols),
        "accumulate": 1,
    })


def read_signature(depth: int, cols: int, acc_width: int) -> wiring.Signature:
    """Return the read interface as its user (the STORE unit) sees it.

    `req` (Out) carries {`row`}; `resp` (In) carries {`data`: `cols` signed accumulators}. The
    accumulator's own port is `In(read_signature(...))`, so one `wiring.connect` joins the two.
    """
    return wiring.Signature({
        "req": Out(stream.Signature(data.StructLayout({"row": row_shape(depth)}))),
        "resp": In(stream.Signature(data.StructLayout({
            "data": data.ArrayLayout(signed(acc_width), cols)}))),
    })


class Accumulator(wiring.Component):
    """`depth` rows of `cols` signed `acc_width`-bit accumulators: overwrite or add, and read.

    Arithmetic: an accumulating write stores `old + data` per lane modulo `2**acc_width` (two's
    complement wrap-around, never saturation), as the numeric contract says. The contents start
    at zero (the memory's initial value); reset does not clear them.

    Parameters
    ----------
    depth : int
        Rows, at least 1 (`ArrayConfig.acc_depth`; `from_config` builds one from a config).
    cols : int
        Accumulators per row (the array's columns), at least 1.
    acc_width : int
        Width of each signed accumulator in bits, at least 2.

    Members
    -------
    i_write : ``In(stream.Signature(write_payload_layout(depth, cols, acc_width)))``
        {`row`, `data`, `accumulate`}: `accumulate` 0 overwrites `row` with `data`, 1 adds
        `data` to it. `ready` is the constant 1: a write is taken in every cycle `valid` is
        high, in any order of rows, including back-to-back accumulates to the same row.
    read : ``In(read_signature(depth, cols, acc_width))``
        `read.req` {`row`}: a row to read; `read.resp` {`data`}: its contents, in request order.
        Independent of `i_write`.
    o_idle : ``Out(1)``
        No write is in flight: every write taken before this cycle is visible to a read request
        taken in this cycle. Registered; it does not look at `i_write.valid` in the same cycle.

    A `row` at or above `depth` is a caller error with an unspecified effect (the address may
    alias another row, or the write may be dropped and the read return anything).

    Latency, throughput and backpressure
    ------------------------------------
    Writes: a write taken in cycle t presents its row to the RMW read port in cycle t; in cycle
    t + 1 it takes the row's old value, computes the new one and writes it, and the memory holds
    it from cycle t + 2. One write per cycle, sustained, in any pattern of rows. When the write
    taken in cycle t - 1 was to the same row, the RMW port (not transparent) still shows the
    value before that write, so the old value comes from a bypass register holding the row
    written in the previous cycle instead: back-to-back accumulates to one row are exact. Writes
    two or more cycles apart need no bypass. `o_idle` is low in cycle t + 1 and, if no write was taken
    in cycle t + 1, high again in cycle t + 2.

    Reads: a request taken in cycle t is answered in cycle t + 1 (READ_LATENCY); one request per
    cycle when `read.resp` is ready. The answer is the row as the memory held it in cycle t, so
    it includes every write taken in cycle t - 2 or earlier and none taken in cycle t - 1 or
    later: a write taken in cycle t is first seen by a request taken in cycle t + 2
    (WRITE_TO_READ). While `read.resp` holds an untaken answer, that answer does not change
    (the memory port's output register is held) and `read.req.ready` is low: `read.req.ready =
    ~read.resp.valid | read.resp.ready`, combinationally. Writes are never held by reads.

    Cost
    ----
    One memory of `depth` x `cols * acc_width` bits with one write port and two synchronous
    read ports (two block RAMs of one write and one read port each, on FPGAs); `cols` adders of
    `acc_width` bits and two `cols * acc_width`-bit 2:1 multiplexers (bypass, accumulate); a
    `row`-wide comparator; registers: the write stage and the bypass, each a row, its address
    and a valid bit (2 x (`cols * acc_width` + row bits + 1) + 1 with `accumulate`), and the
    response `valid`. Row addresses have max(1, ceil(log2(depth))) bits.
    """

    def __init__(self, *, depth: int, cols: int, acc_width: int):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, not {depth!r}")
        if not isinstance(cols, int) or cols < 1:
            raise ValueError(f"cols must be a positive integer, not {cols!r}")
        if not isinstance(acc_width, int) or acc_width < 2:
            raise ValueError(f"acc_width must be an integer of at least 2, not {acc_width!r}")
        self._depth, self._cols, self._acc_width = depth, cols, acc_width
        super().__init__({
            "i_write": In(stream.Signature(write_payload_layout(depth, cols, acc_width))),
            "read": In(read_signature(depth, cols, acc_width)),
            "o_idle": Out(1),
        })

    @classmethod
    def from_config(cls, config: ArrayConfig) -> "Accumulator":
        """Return the accumulator memory of `config`: `acc_depth` rows of `cols` accumulators."""
        return cls(depth=config.acc_depth, cols=config.cols, acc_width=config.acc_width)

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def cols(self) -> int:
        return self._cols

    @property
    def acc_width(self) -> int:
        return self._acc_width

    def elaborate(self, platform: object) -> Module:
        m = Module()
        row_layout = data.ArrayLayout(signed(self._acc_width), self._cols)
        write_layout = write_payload_layout(self._depth, self._cols, self._acc_width)

        m.submodules.memory = memory = Memory(shape=row_layout, depth=self._depth, init=[])
        rmw_port = memory.read_port()  # synchronous, not transparent: old value before a write
        store_port = memory.read_port()
        write_port = memory.write_port()

        # Stage 0 (cycle t): take the write and address the RMW read port with its row.
        m.d.comb += [
            self.i_write.ready.eq(1),
            rmw_port.addr.eq(self.i_write.payload.row),
        ]
        # Stage 1 (cycle t + 1): old value (memory or bypass), new value, memory write.
        stage = Signal(write_layout)
        stage_valid = Signal()
        m.d.sync += [stage.eq(self.i_write.payload), stage_valid.eq(self.i_write.valid)]

        # The row written in the previous cycle: the RMW port did not see that write yet.
        bypass_row = Signal(row_shape(self._depth))
        bypass_data = Signal(row_layout)
        bypass_valid = Signal()
        new = Signal(row_layout)
        m.d.sync += [
            bypass_row.eq(stage.row),
            bypass_data.eq(new),
            bypass_valid.eq(stage_valid),
        ]
        old = Signal(row_layout)
        with m.If(bypass_valid & (bypass_row == stage.row)):
            m.d.comb += old.eq(bypass_data)
        with m.Else():
            m.d.comb += old.eq(rmw_port.data)
        for i in range(self._cols):
            m.d.comb += new[i].eq(Mux(stage.accumulate, old[i] + stage.data[i], stage.data[i]))
        m.d.comb += [
            write_port.addr.eq(stage.row),
            write_port.data.eq(new),
            write_port.en.eq(stage_valid),
            self.o_idle.eq(~stage_valid),
        ]

        # Read port: the memory port's output register is the response register.
        resp_valid = Signal()
        advance = ~resp_valid | self.read.resp.ready
        m.d.comb += [
            self.read.req.ready.eq(advance),
            store_port.addr.eq(self.read.req.payload.row),
            store_port.en.eq(advance),
            self.read.resp.valid.eq(resp_valid),
            self.read.resp.payload.data.eq(store_port.data),
        ]
        with m.If(advance):
            m.d.sync += resp_valid.eq(self.read.req.valid)
        return m
