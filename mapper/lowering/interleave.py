"""Software pipelining of a vector layer into the array layer that produces its operand.

A residual add or a pool that follows the convolution producing its input runs on the STORE
unit's vector path, which the convolution leaves mostly idle; issued after the whole
convolution it makes the array wait (docs/cycle-model.md: the dispatcher accepts in program
order, so only 16 instructions overlap a layer boundary). `interleave` places each block of
the vector layer (its LOADs and the ADD or POOLs of one tile) into the producer's
instruction stream, after the last producer instruction writing any byte the block reads,
then `lag` more producer STOREs: the block's LOAD then finds its operand stored and does not
hold up the producer's LOADs in the in-order LOAD queue.

Contract (checked by the caller, `vector_overlap`): the producer neither reads nor writes
what the vector blocks write (a fresh output buffer, a spad_in window the producer leaves
unused), and the blocks are independent of each other except through their own program
order, which is kept. Then the merged program computes what the two layers in sequence do.
"""

import functools
from collections.abc import Sequence

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.instruction_base import row_pattern_of
from systolic.isa.instructions import Instruction, Load, LoadTarget
from systolic.isa.patterns import ElementPattern, RowPattern
from systolic.isa.store import RowWriter

__all__ = ["DEFAULT_LAG", "SPACING_PERCENT", "WriterMap", "blocks_of", "interleave", "last_writers"]

DEFAULT_LAG = 1
"""Producer STOREs between a block's last operand STORE and the block (measured on the light
ResNet-50: 0 lets the block's LOAD wait at the head of the LOAD queue)."""

SPACING_PERCENT = 95
"""Blocks are spread over this share of the producer's instructions (light ResNet-50 at 16x16
WS: 90 / 95 / 100 / 105 % give 1.0200 / 1.0198 / 1.0201 / 1.0212 of the conv+Gemm ideal)."""

_SPAN_LIMIT = 1 << 28
"""The largest external byte span the last-writer map covers (else no interleaving)."""


def blocks_of(code: Sequence[Instruction]) -> list[list[Instruction]]:
    """Cut a vector layer's code into blocks: each starts at a LOAD that follows a non-LOAD
    (its operand LOADs, then the vector instructions reading them)."""
    blocks: list[list[Instruction]] = []
    for instr in code:
        if not blocks or (isinstance(instr, Load) and not isinstance(blocks[-1][-1], Load)):
            blocks.append([])
        blocks[-1].append(instr)
    return blocks


def last_writers(producer: Sequence[Instruction], blocks: Sequence[Sequence[Instruction]],
                 config: ArrayConfig) -> list[int] | None:
    """Return per block the index of the last producer instruction writing an external byte
    the block's LOADs may read (each LOAD row taken as the span of its elements: a superset
    of the bytes it reads), -1 when none; or None when the producer's writes span more than
    `_SPAN_LIMIT` bytes. (`WriterMap(producer, config).newest(blocks)`.)"""
    writers = WriterMap(producer, config)
    return None if writers.too_wide else writers.newest(blocks)


class WriterMap:
    """The newest producer instruction writing each external byte, kept per segment: the
    byte range cut at every start and end of a written row (a RowWriter's row is a
    contiguous span of `row_bytes`), so its size and the cost of building and querying it
    grow with the number of written rows, not bytes (sorting them: n log n).

    `too_wide` is True when the writes span more than `_SPAN_LIMIT` bytes (the caller then
    does not interleave); `newest(blocks)` answers as `last_writers`."""

    def __init__(self, producer: Sequence[Instruction], config: ArrayConfig) -> None:
        self.config = config
        fields = [(index, *_rows(row_pattern_of(i)), i.written_rows(), i.row_bytes(config))
                  for index, i in enumerate(producer) if isinstance(i, RowWriter)]  # fmt: skip
        table = np.array(fields, dtype=np.int64).reshape(-1, 7).T
        index, ext, n0, stride0, stride1, count, length = table
        row = _ranks(count)
        index, ext, n0, stride0, stride1, length = (
            np.repeat(a, count) for a in (index, ext, n0, stride0, stride1, length))
        starts = ext + (row // n0) * stride1 + (row % n0) * stride0
        keep = length > 0
        starts, ends, index = starts[keep], starts[keep] + length[keep], index[keep]
        self.too_wide = bool(starts.size) and int(ends.max() - starts.min()) > _SPAN_LIMIT
        # segment s = [edges[s], edges[s + 1]); the last one, [edges[-1], ...), has no writer
        self.edges = _distinct(np.concatenate([starts, ends]))
        self.last = np.full(self.edges.size + 1, -1, dtype=np.int64)  # (+1: a sentinel)
        first = np.searchsorted(self.edges, starts)
        covered = np.searchsorted(self.edges, ends) - first
        segment = np.repeat(first, covered) + _ranks(covered)
        np.maximum.at(self.last, segment, np.repeat(index, covered))

    def newest(self, blocks: Sequence[Sequence[Instruction]]) -> list[int]:
        """Per block the newest writer of a byte its spad LOADs may read (each LOAD row the
        span of its elements), -1 when none: one vectorized pass over every LOAD row."""
        ob = self.config.operand_bytes
        fields = [(b, i.ext, i.n0, i.row_stride0, i.row_stride1, i.count,
                   *_offset_range(i.k0, i.length, i.run, i.n_mid, i.stride_mid,
                                  i.stride_outer, ob))
                  for b, block in enumerate(blocks) for i in block
                  if isinstance(i, Load) and i.mem is not LoadTarget.PARAMS]  # fmt: skip
        newest = np.full(len(blocks), -1, dtype=np.int64)
        if not fields or not self.edges.size:
            return newest.tolist()
        block, ext, n0, stride0, stride1, count, lo, hi = np.array(fields, dtype=np.int64).T
        row = _ranks(count)  # row r of its LOAD
        block, ext, n0, stride0, stride1, lo, hi = (
            np.repeat(a, count) for a in (block, ext, n0, stride0, stride1, lo, hi))
        starts = ext + (row // n0) * stride1 + (row % n0) * stride0 + lo
        ends = starts + (hi - lo + ob)
        first = np.maximum(np.searchsorted(self.edges, starts, side="right") - 1, 0)
        stop = np.searchsorted(self.edges, ends, side="left")  # (segments first .. stop - 1)
        hit = stop > first
        if not hit.any():
            return newest.tolist()
        pairs = np.column_stack([first[hit], stop[hit]]).ravel()
        row_newest = np.maximum.reduceat(self.last, pairs)[::2]
        np.maximum.at(newest, block[hit], row_newest)
        return newest.tolist()


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending (`np.unique`, which numpy 2.4 does by hashing: 20-30x
    slower on these arrays than sorting)."""
    ordered = np.sort(values)
    keep = np.ones(ordered.size, dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    result: np.ndarray = ordered[keep]
    return result


def _rows(pattern: RowPattern) -> tuple[int, int, int, int]:
    return pattern.ext, pattern.n0, pattern.stride0, pattern.stride1


@functools.lru_cache(maxsize=1024)
def _offset_range(*fields: int) -> tuple[int, int]:
    """`ElementPattern(*fields[:-1]).offset_range(fields[-1])`, cached."""
    return ElementPattern(*fields[:-1]).offset_range(fields[-1])


def _ranks(sizes: np.ndarray) -> np.ndarray:
    """0 .. size-1 for each of `sizes`, concatenated (int64)."""
    starts: np.ndarray = np.repeat(np.cumsum(sizes) - sizes, sizes)
    ranks: np.ndarray = np.arange(int(sizes.sum()), dtype=np.int64) - starts
    return ranks


def interleave(producer: Sequence[Instruction], blocks: Sequence[Sequence[Instruction]],
               writers: Sequence[int], lag: int = DEFAULT_LAG,
               spacing: int | None = None) -> list[Instruction]:
    """Return the producer's instructions with the blocks inserted in their own order, block
    b after producer instruction `after[b]`: the later of `writers[b]` followed by `lag` more
    producer STOREs (RowWriters) and `after[b - 1] + spacing` (default: `SPACING_PERCENT`
    of the producer's instructions shared evenly among the blocks, so that no burst of
    blocks fills the dispatcher's queues while the array waits); blocks beyond the
    producer's end follow it."""
    if spacing is None:
        spacing = len(producer) * SPACING_PERCENT // (100 * max(1, len(blocks)))
    return _merged(producer, blocks, _places(producer, writers, lag, spacing))


def _places(producer: Sequence[Instruction], writers: Sequence[int], lag: int, spacing: int
            ) -> list[int]:
    """Return `after[b]` of `interleave` for every block (one searchsorted over the producer's
    RowWriters, then the running floor)."""
    types = list(map(type, producer))
    writer_types = {cls for cls in set(types) if issubclass(cls, RowWriter)}
    stores = np.flatnonzero(np.fromiter(map(writer_types.__contains__, types), dtype=bool,
                                        count=len(types)))
    wanted = np.asarray(writers, dtype=np.int64).reshape(-1)
    position = np.searchsorted(stores, wanted, side="right") + lag - 1
    tail = np.append(stores, len(producer) - 1)  # (position past the last STORE: the end)
    spots = np.where(position < 0, wanted, tail[np.clip(position, 0, len(stores))])
    after: list[int] = []
    floor = -1 - spacing
    for spot, writer in zip(spots.tolist(), wanted.tolist(), strict=True):
        floor = max(floor + spacing, spot, writer)
        after.append(floor)
    return after


def _merged(producer: Sequence[Instruction], blocks: Sequence[Sequence[Instruction]],
            after: Sequence[int]) -> list[Instruction]:
    """Return the producer with block b after producer instruction `after[b]`, in block
    order: a block whose place is before the previous block's, or past the producer's end,
    and every block after it, follow the producer."""
    merged: list[Instruction] = []
    done = -1  # (producer[:done + 1] is in `merged`)
    placed = 0
    for block, place in zip(blocks, after, strict=False):
        if not done <= place < len(producer):
            break
        merged += producer[done + 1 : place + 1]
        merged += block
        done = place
        placed += 1
    merged += producer[done + 1 :]
    for rest in blocks[placed:]:
        merged += rest
    return merged
