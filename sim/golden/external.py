"""External memory as the golden machine's units see it: rows gathered and rows written.

`memory` is the machine's external memory, a uint8 array holding the bytes from address 0.
Rows follow a row pattern and, for a scratchpad LOAD, an element pattern (docs/isa.md,
"Address patterns", `systolic.isa.patterns`). Operands are `operand_bytes` bytes,
little-endian two's complement ("Operands in memory"); `flip` inverts bit 7 of every byte on
the way in or out (the uint8 conversion, "uint8 tensors"). Every function first checks the
whole byte range its patterns span and raises SimulationError, naming `what` and changing
nothing, when a byte of it lies outside `memory`.

A pattern's byte addresses minus its `ext` depend only on its other fields, which programs
repeat many times at many addresses: they are computed once per shape (`_row_offsets`,
`_gather_offsets`).
"""

import functools
from typing import NamedTuple

import numpy as np

from systolic.errors import SimulationError
from systolic.isa.patterns import ElementPattern, RowPattern

__all__ = ["check_external", "gather_operands", "read_rows", "write_rows"]

_FLIP = np.uint8(0x80)


class _Offsets(NamedTuple):
    """Byte addresses relative to a pattern's `ext` (read-only), their extremes, and whether
    the rows they form (one per first index) are disjoint."""

    offsets: np.ndarray
    low: int
    high: int
    disjoint: bool


def _frozen(offsets: np.ndarray, disjoint: bool) -> _Offsets:
    offsets.flags.writeable = False
    return _Offsets(offsets, int(offsets.min()), int(offsets.max()), disjoint)


@functools.lru_cache(maxsize=4096)
def _row_offsets(n0: int, stride0: int, stride1: int, count: int, row_bytes: int) -> _Offsets:
    """The `count` x `row_bytes` contiguous bytes of a row pattern with `ext` 0."""
    bases = RowPattern(0, n0, stride0, stride1).addresses(count)
    disjoint = count == 1 or int(np.diff(np.sort(bases)).min()) >= row_bytes
    return _frozen(bases[:, None] + np.arange(row_bytes), disjoint)


@functools.lru_cache(maxsize=4096)
def _gather_offsets(n0: int, stride0: int, stride1: int, count: int, elements: ElementPattern,
                    operand_bytes: int) -> _Offsets:
    """The bytes of a gather with `ext` 0, indexed by row, element and byte of the element
    (`disjoint` is not computed: False)."""
    bases = RowPattern(0, n0, stride0, stride1).addresses(count)
    element_bytes = elements.offsets(operand_bytes)[:, None] + np.arange(operand_bytes)
    return _frozen(bases[:, None, None] + element_bytes, False)


def check_external(memory: np.ndarray, what: str, first: int, last: int) -> None:
    """Raise SimulationError, naming `what`, unless bytes `first..last` all lie in `memory`."""
    if first < 0 or last >= memory.size:
        raise SimulationError(
            f"{what} accesses external bytes {first}..{last}, beyond the "
            f"{memory.size} bytes of simulated memory; give Machine a larger memory_size"
        )


def _gather(memory: np.ndarray, what: str, ext: int, relative: _Offsets) -> np.ndarray:
    """Return the bytes at `ext` + `relative.offsets`, after checking that they lie in
    `memory` (a new uint8 array of the offsets' shape)."""
    check_external(memory, what, ext + relative.low, ext + relative.high)
    if relative.low >= 0:  # (indexing the tail from `ext` saves adding `ext` to each offset)
        gathered: np.ndarray = memory[ext:][relative.offsets]
    else:
        gathered = memory[relative.offsets + ext]
    return gathered


def read_rows(memory: np.ndarray, what: str, rows: RowPattern, count: int,
              row_bytes: int) -> np.ndarray:
    """Return the `count` rows of `row_bytes` contiguous bytes at the row pattern's
    addresses (a new count x row_bytes uint8 array)."""
    relative = _row_offsets(rows.n0, rows.stride0, rows.stride1, count, row_bytes)
    return _gather(memory, what, rows.ext, relative)


def gather_operands(memory: np.ndarray, what: str, rows: RowPattern, count: int,
                    elements: ElementPattern, operand_bytes: int, flip: bool) -> np.ndarray:
    """Return the `count` rows of `elements.length` operands at the patterns' addresses, as
    signed numbers of 8 * `operand_bytes` bits (a new array of numpy type `<i{operand_bytes}`)."""
    relative = _gather_offsets(rows.n0, rows.stride0, rows.stride1, count, elements,
                               operand_bytes)
    raw = _gather(memory, what, rows.ext, relative)  # row, element, byte
    if flip:
        raw ^= _FLIP
    operands: np.ndarray = raw.view(f"<i{operand_bytes}")[..., 0]  # (an element's bytes)
    return operands


def write_rows(memory: np.ndarray, what: str, rows: RowPattern, values: np.ndarray,
               operand_bytes: int, flip: bool) -> None:
    """Write row i of the integer matrix `values` at row i of the row pattern, each element
    as its low `operand_bytes` bytes, in row order: where rows overlap, later bytes win."""
    count = values.shape[0]
    if not count:
        return
    raw = values.astype(f"<i{operand_bytes}", order="C").view(np.uint8).reshape(count, -1)
    if flip:
        raw ^= _FLIP
    relative = _row_offsets(rows.n0, rows.stride0, rows.stride1, count, raw.shape[1])
    check_external(memory, what, rows.ext + relative.low, rows.ext + relative.high)
    addresses = relative.offsets + rows.ext
    if relative.disjoint:
        memory[addresses] = raw
        return
    for address, row in zip(addresses, raw, strict=True):  # in order: later rows win
        memory[address] = row
