"""Address-pattern arithmetic of the DMA: which external bytes a LOAD, STORE or vector op touches.

Shared by the golden model, the hardware DMA tests and the analytic cycle model, so all three
agree on the exact list of contiguous segments and on the bus beats each costs (docs/isa.md,
"Address patterns").

A *row pattern* places row `r` (r = r1 * n0 + r0, r0 < n0) at
`ext + r1 * stride1 + r0 * stride0`. An *element pattern* places element `e` of a row, with
`k = k0 + e`, `c = k mod run`, `j = (k div run) mod n_mid`, `i = k div (run * n_mid)`, at
`row_base + i * stride_outer + j * stride_mid + c * element_bytes`.

A row's *segments* are the maximal runs of consecutive elements whose addresses ascend by
`element_bytes`, in element order; segments are never merged across rows, even when two rows
happen to be adjacent in memory.
"""

import dataclasses
import functools
from typing import NamedTuple

import numpy as np

__all__ = [
    "ADDRESS_LIMIT",
    "ElementPattern",
    "RowPattern",
    "Segment",
    "beats",
    "element_offsets",
    "gather_segments",
    "row_segments",
    "total_beats",
]

ADDRESS_LIMIT = 2**32
"""External addresses are 32-bit byte addresses: every accessed byte lies in [0, 2**32)."""


class Segment(NamedTuple):
    """A contiguous run of external bytes: `length` bytes from `address`."""

    address: int
    length: int


@dataclasses.dataclass(frozen=True)
class RowPattern:
    """The two-level row pattern: row r at ext + (r // n0) * stride1 + (r % n0) * stride0."""

    ext: int
    n0: int
    stride0: int
    stride1: int

    def address(self, r: int) -> int:
        """Return the base address of row `r`."""
        r1, r0 = divmod(r, self.n0)
        return self.ext + r1 * self.stride1 + r0 * self.stride0

    def addresses(self, count: int) -> np.ndarray:
        """Return the base addresses of rows 0 .. count-1 (int64 array)."""
        r = np.arange(count, dtype=np.int64)
        if self.n0 == 1:  # (r // 1 = r, r % 1 = 0)
            r *= self.stride1
            r += self.ext
            return r
        return self.ext + (r // self.n0) * self.stride1 + (r % self.n0) * self.stride0

    def extent(self, count: int) -> tuple[int, int]:
        """Return (lowest, highest) base address over rows 0 .. count-1, in O(1).

        The base is linear in r1 and r0 separately, so each block of the rectangle
        (the full rows of n0 and the last partial one) takes its extremes at corners.
        """
        if self.n0 == 1 and count >= 1:  # rows 0 and count - 1 only
            last = (count - 1) * self.stride1
            return (self.ext + last, self.ext) if last < 0 else (self.ext, self.ext + last)
        full, partial = divmod(count, self.n0)
        corners = []
        if full:
            for r1 in (0, full - 1):
                for r0 in (0, self.n0 - 1):
                    corners.append(r1 * self.stride1 + r0 * self.stride0)
        if partial:
            for r0 in (0, partial - 1):
                corners.append(full * self.stride1 + r0 * self.stride0)
        return self.ext + min(corners), self.ext + max(corners)


@dataclasses.dataclass(frozen=True)
class ElementPattern:
    """The three-level element pattern of a LOAD row (see the module docstring)."""

    k0: int
    length: int
    run: int
    n_mid: int
    stride_mid: int
    stride_outer: int

    def offsets(self, element_bytes: int) -> np.ndarray:
        """Return the byte offset from the row base of elements 0 .. length-1 (int64 array,
        read-only: shared by every pattern with the same fields)."""
        return _offsets(self.k0, self.length, self.run, self.n_mid, self.stride_mid,
                        self.stride_outer, element_bytes)[0]

    def offset_range(self, element_bytes: int) -> tuple[int, int]:
        """Return (lowest, highest) offset of `offsets(element_bytes)` (length >= 1)."""
        return _offsets(self.k0, self.length, self.run, self.n_mid, self.stride_mid,
                        self.stride_outer, element_bytes)[1]

    def runs(self, element_bytes: int) -> list[Segment]:
        """Return one row's segments relative to its base address (same for every row).

        Consecutive elements are contiguous inside a run of `c`; across a wrap of `c` exactly
        when `stride_mid == run * element_bytes`, and across a wrap of `j` exactly when
        `stride_outer == (n_mid - 1) * stride_mid + run * element_bytes`: both are fixed for an
        instruction, so the hardware knows the segment boundaries at decode time.
        """
        offsets = self.offsets(element_bytes)
        if offsets.size == 0:
            return []
        breaks = np.flatnonzero(np.diff(offsets) != element_bytes) + 1
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [offsets.size]))
        return [
            Segment(int(offsets[s]), int(e - s) * element_bytes)
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
        ]


def element_offsets(k0: int, length: int, run: int, n_mid: int, stride_mid: int,
                    stride_outer: int, element_bytes: int) -> tuple[np.ndarray, tuple[int, int]]:
    """Return `ElementPattern(k0, ...).offsets(element_bytes)` (read-only, shared) and its
    (min, max), without building the pattern (the golden machine's LOAD)."""
    return _offsets(k0, length, run, n_mid, stride_mid, stride_outer, element_bytes)


@functools.lru_cache(maxsize=4096)
def _offsets(k0: int, length: int, run: int, n_mid: int, stride_mid: int, stride_outer: int,
             element_bytes: int) -> tuple[np.ndarray, tuple[int, int]]:
    """The offsets of an element pattern (read-only) and their (min, max), cached: programs
    repeat a few patterns many times."""
    k = k0 + np.arange(length, dtype=np.int64)
    c = k % run
    j = (k // run) % n_mid
    i = k // (run * n_mid)
    offsets = i * stride_outer + j * stride_mid + c * element_bytes
    offsets.flags.writeable = False
    extremes = (int(offsets.min()), int(offsets.max())) if length else (0, 0)
    return offsets, extremes


def gather_segments(
    rows: RowPattern, count: int, elements: ElementPattern, element_bytes: int
) -> list[Segment]:
    """Return the segments a LOAD of `count` rows reads, row by row in order."""
    runs = elements.runs(element_bytes)
    return [
        Segment(base + offset, length)
        for base in rows.addresses(count).tolist()
        for offset, length in runs
    ]


def row_segments(rows: RowPattern, count: int, row_bytes: int) -> list[Segment]:
    """Return the segments of `count` rows of `row_bytes` contiguous bytes each, in order.

    This is what a STORE, POOL, ADD or COPY writes (one output row per segment) and what a
    LOAD into `params` reads (one params row per segment).
    """
    return [Segment(base, row_bytes) for base in rows.addresses(count).tolist()]


def beats(segment: Segment, bus_bytes: int) -> int:
    """Return the aligned bus beats covering `segment` on a bus of `bus_bytes` bytes."""
    first = segment.address // bus_bytes
    last = (segment.address + segment.length - 1) // bus_bytes
    return last - first + 1


def total_beats(segments: list[Segment], bus_bytes: int) -> int:
    """Return the aligned bus beats of all `segments`, each counted on its own."""
    return sum(beats(segment, bus_bytes) for segment in segments)
