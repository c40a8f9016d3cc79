"""SOFTMAX's pass 1 in the row-normalisation unit: the row's maximum, reduced over a chunk's
lanes in registered steps (the combinational chain of `lanes` comparisons from the scratchpad's
read data was the whole 8x8's longest path: 40 LUT levels)."""

from amaranth.hdl import Module, Mux, Signal, Value, signed
from amaranth.lib import data

__all__ = ["MAXIMUM_LAG", "emit_row_maximum"]

MAXIMUM_LAG = 2
"""Cycles the row maximum lags the read's data by, beyond the one cycle it always took: the
chunk's data reaches `row_max` MAXIMUM_LAG + 1 cycles after it leaves the scratchpad, so the
sequencer waits MAXIMUM_LAG cycles between pass 1's last read and pass 2's first."""


def _larger(a: Value, b: Value) -> Value:
    return Mux(a > b, a, b)


def _tree(values: list[Value]) -> Value:
    """The largest of `values`, a balanced tree of comparisons (depth ceil(log2 n))."""
    while len(values) > 1:
        values = [_larger(*values[i:i + 2]) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def emit_row_maximum(m: Module, update: Value, first: Value, x, in_lane: list[Value]) -> Signal:
    """Add the row maximum to `m` and return it (`row_max`, signed 8 bits).

    `update` is high in the cycle a pass-1 chunk's data is on `x` (its valid lanes
    `in_lane`; invalid lanes count as -128), `first` when it is the row's first chunk (the
    maximum restarts). Stages: c + 1 the data, each pair of lanes compared (`max_pairs`),
    c + 2 the chunk's maximum (`chunk_max`), c + 3 `row_max` updated with it, readable from
    c + 4 (MAXIMUM_LAG = 2 cycles later than the single-cycle chain it replaces)."""
    lanes = len(x)
    masked = [Mux(in_lane[j], x[j], -128) for j in range(lanes)]
    pairs = Signal(data.ArrayLayout(signed(8), (lanes + 1) // 2), name="max_pairs")
    chunk = Signal(signed(8), name="chunk_max")
    mx = Signal(signed(8), name="row_max")
    tag = data.StructLayout({"update": 1, "first": 1})
    paired, reduced = Signal(tag, name="max_paired"), Signal(tag, name="max_reduced")
    m.d.sync += [
        *(pairs[i].eq(_tree(masked[2 * i:2 * i + 2])) for i in range(len(pairs))),
        paired.update.eq(update), paired.first.eq(first),
        chunk.eq(_tree(list(pairs))),
        reduced.eq(paired),
    ]
    with m.If(reduced.update):
        m.d.sync += mx.eq(Mux(reduced.first, chunk, _larger(chunk, mx)))
    return mx
