"""Footprint layouts and the combinational test of whether two footprints conflict.

A footprint is a fixed-size array of memory ranges, each {valid, mem, first, last, write}
with `first` and `last` inclusive. Two ranges conflict when both are valid, name the same
memory, overlap (`a.first <= b.last` and `b.first <= a.last`) and at least one writes; two
footprints conflict when any pair of their ranges does. The Python statement of the same rule
is `systolic.isa.memories.Access.conflicts`.

A compact footprint (`compact_layout`) is the same footprint as the dispatcher stores it when
the on-chip memories are small: its on-chip ranges with `onchip_width`-bit addresses and its
one external range apart, at full width. Two compact footprints conflict exactly when the
footprints they come from do, provided each footprint has at most one external range and its
on-chip addresses are below 2**onchip_width (`compact_contract_holds`; every instruction's
footprint does, for `onchip_addr_width(config)`): then only one pair of ranges per footprint
pair needs full-width comparators.
"""

from collections.abc import Sequence

from amaranth.hdl import Cat, Module, Mux, Value
from amaranth.lib import data

from systolic.config import ArrayConfig
from systolic.isa.memories import Access, Memory, depth

__all__ = [
    "EXTERNAL_ID",
    "MEMORY_IDS",
    "MEM_WIDTH",
    "at_most",
    "compact_conflict",
    "compact_conflict_terms",
    "compact_contract_holds",
    "compact_footprint",
    "compact_layout",
    "footprint_conflict_terms",
    "footprint_layout",
    "footprints_conflict",
    "onchip_addr_width",
    "range_layout",
    "ranges_conflict",
]

MEM_WIDTH = 3
"""Width of a range's memory id."""

MEMORY_IDS = ("spad_in", "spad_wt", "acc", "params", "external")
"""Memory id `i` names memory `MEMORY_IDS[i]` (the values of `systolic.isa.memories.Memory`)."""

EXTERNAL_ID = MEMORY_IDS.index("external")
"""The memory id of external memory."""

_ONCHIP = (Memory.SPAD_IN, Memory.SPAD_WT, Memory.ACC, Memory.PARAMS)


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


def at_most(x: Value, y: Value) -> Value:
    """Return a 1-bit value: unsigned `x` <= unsigned `y`, as the sign of `y - x`.

    A subtraction maps onto the FPGA's carry cells alone (max(width) + 1 bits); on ECP5,
    Yosys and ABC turned many `<=` operators of one design into wide LUT trees as well.
    """
    return ~(Value.cast(y) - Value.cast(x))[-1]


def ranges_conflict(a: data.View, b: data.View) -> Value:
    """Return a 1-bit value: ranges `a` and `b` overlap in one memory and one of them writes.

    Cost: a 3-bit equality and two `addr_width`-bit magnitude comparators.
    """
    return (
        a.valid & b.valid & (a.mem == b.mem) & (a.write | b.write)
        & at_most(a.first, b.last) & at_most(b.first, a.last)
    )


def footprint_conflict_terms(a: data.View, b: data.View) -> list[Value]:
    """Return the 1-bit conflicts of every range pair of footprints `a` and `b` (a's range i
    against b's range j at index i * len(b) + j); the footprints conflict when any is 1.

    Cost: len(a) * len(b) range comparisons.
    """
    return [ranges_conflict(a[i], b[j])
            for i in range(a.shape().length) for j in range(b.shape().length)]


def footprints_conflict(a: data.View, b: data.View) -> Value:
    """Return a 1-bit value: some range of footprint `a` conflicts with some range of `b`.

    Cost: len(a) * len(b) range comparisons and an OR of their results.
    """
    return Cat(*footprint_conflict_terms(a, b)).any()


def onchip_addr_width(config: ArrayConfig) -> int:
    """Return the bits of the largest row address of an on-chip memory of `config`."""
    deepest = max(depth(config, memory) for memory in _ONCHIP)
    return max(1, (deepest - 1).bit_length())


def compact_contract_holds(accesses: Sequence[Access], onchip_width: int) -> bool:
    """Return whether a footprint can be compacted without changing any conflict: at most one
    external range, and every on-chip range below row 2**onchip_width."""
    external = [a for a in accesses if a.memory is Memory.EXTERNAL]
    onchip = [a for a in accesses if a.memory is not Memory.EXTERNAL]
    return len(external) <= 1 and all(a.last < 1 << onchip_width for a in onchip)


def _external_layout(addr_width: int) -> data.StructLayout:
    return data.StructLayout({"valid": 1, "first": addr_width, "last": addr_width, "write": 1})


def compact_layout(ranges: int, onchip_width: int, addr_width: int) -> data.StructLayout:
    """Return the layout of a compact footprint: {onchip: `ranges` ranges of `onchip_width`-bit
    addresses, external: {valid, first, last, write} of `addr_width` bits}."""
    return data.StructLayout({
        "onchip": data.ArrayLayout(range_layout(onchip_width), ranges),
        "external": _external_layout(addr_width),
    })


def compact_footprint(m: Module, footprint: data.View, compact: data.View) -> None:
    """Drive `compact` (a `compact_layout` view) from `footprint` combinationally in `m`.

    On-chip range i keeps slot i with its addresses' low bits (external ranges leave their slot
    invalid); the external range is the first valid slot naming external memory. Cost: a
    `ranges`:1 priority mux of 2 * addr_width + 1 bits.
    """
    width = compact.onchip[0].first.shape().width
    external = compact.external
    chosen: dict[str, Value] = {"valid": Value.cast(0), "first": Value.cast(0),
                                "last": Value.cast(0), "write": Value.cast(0)}
    for index in reversed(range(footprint.shape().length)):
        source, slot = footprint[index], compact.onchip[index]
        is_external = source.valid & (source.mem == EXTERNAL_ID)
        m.d.comb += [
            slot.valid.eq(source.valid & ~is_external),
            slot.mem.eq(source.mem),
            slot.first.eq(source.first[:width]),
            slot.last.eq(source.last[:width]),
            slot.write.eq(source.write),
        ]
        chosen = {
            "valid": is_external | chosen["valid"],
            "first": Mux(is_external, source.first, chosen["first"]),
            "last": Mux(is_external, source.last, chosen["last"]),
            "write": Mux(is_external, source.write, chosen["write"]),
        }
    m.d.comb += [getattr(external, name).eq(value) for name, value in chosen.items()]


def compact_conflict_terms(a: data.View, b: data.View) -> list[Value]:
    """Return the 1-bit conflicts of compact footprints `a` and `b` term by term: their on-chip
    range pairs (`footprint_conflict_terms`), then their external ranges; the footprints
    conflict when any is 1.

    Cost: len(a.onchip) * len(b.onchip) narrow range comparisons and one full-width one.
    """
    x, y = a.external, b.external
    external = (x.valid & y.valid & (x.write | y.write)
                & at_most(x.first, y.last) & at_most(y.first, x.last))
    return [*footprint_conflict_terms(a.onchip, b.onchip), external]


def compact_conflict(a: data.View, b: data.View) -> Value:
    """Return a 1-bit value: compact footprints `a` and `b` conflict (the OR of
    `compact_conflict_terms`).
    """
    return Cat(*compact_conflict_terms(a, b)).any()
