"""Footprint layouts and the combinational test of whether two footprints conflict.

A footprint is a fixed-size array of memory ranges, each {valid, mem, first, last, write}
with `first` and `last` inclusive. Two ranges conflict when both are valid, name the same
memory, overlap (`a.first <= b.last` and `b.first <= a.last`) and at least one writes; two
footprints conflict when any pair of their ranges does. The Python statement of the same rule
is `systolic.isa.memories.Access.conflicts`.
"""

from amaranth.hdl import Value
from amaranth.lib import data

__all__ = [
    "MEMORY_IDS",
    "MEM_WIDTH",
    "footprint_layout",
    "footprints_conflict",
    "range_layout",
    "ranges_conflict",
]

MEM_WIDTH = 3
"""Width of a range's memory id."""

MEMORY_IDS = ("spad_in", "spad_wt", "acc", "params", "external")
"""Memory id `i` names memory `MEMORY_IDS[i]` (the values of `systolic.isa.memories.Memory`)."""


def range_layout(addr_width: int) -> data.StructLayout:
    """Return the layout of one range: {valid, mem, first, last, write}."""
    return data.StructLayout({
        "valid": 1,
        "mem": MEM_WIDTH,
        "first": addr_width,
        "last": addr_width,
        "write": 1,
    })


def footprint_layout(ranges: int, addr_width: int) -> data.ArrayLayout:
    """Return the layout of a footprint: `ranges` ranges."""
    return data.ArrayLayout(range_layout(addr_width), ranges)


def ranges_conflict(a: data.View, b: data.View) -> Value:
    """Return a 1-bit value: ranges `a` and `b` overlap in one memory and one of them writes.

    Cost: a 3-bit equality and two `addr_width`-bit magnitude comparators.
    """
    return (
        a.valid & b.valid & (a.mem == b.mem) & (a.write | b.write)
        & (a.first <= b.last) & (b.first <= a.last)
    )


def footprints_conflict(a: data.View, b: data.View) -> Value:
    """Return a 1-bit value: some range of footprint `a` conflicts with some range of `b`.

    Cost: len(a) * len(b) range comparisons and an OR of their results.
    """
    result: Value = ranges_conflict(a[0], b[0])
    for i in range(a.shape().length):
        for j in range(b.shape().length):
            if i or j:
                result = result | ranges_conflict(a[i], b[j])
    return result
