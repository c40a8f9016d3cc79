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

from collections.abc import Sequence

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.instructions import Instruction, Load
from systolic.isa.patterns import Segment
from systolic.isa.store import RowWriter

__all__ = ["DEFAULT_LAG", "blocks_of", "interleave", "last_writers"]

DEFAULT_LAG = 1
"""Producer STOREs between a block's last operand STORE and the block (measured on the light
ResNet-50: 0 lets the block's LOAD wait at the head of the LOAD queue)."""

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
    the block's LOADs read (-1 when none), or None when the producer's writes span more than
    `_SPAN_LIMIT` bytes."""
    writers = [index for index, instr in enumerate(producer) if isinstance(instr, RowWriter)]
    written = [_byte_addresses(producer[index].segments(config)) for index in writers]
    if not any(found.size for found in written):
        return [-1] * len(blocks)
    low = min(int(found.min()) for found in written if found.size)
    high = max(int(found.max()) for found in written if found.size) + 1
    if high - low > _SPAN_LIMIT:
        return None
    last = np.full(high - low, -1, dtype=np.int64)
    for index, found in zip(writers, written, strict=True):  # later writers overwrite
        last[found - low] = index
    result = []
    for block in blocks:
        read = np.concatenate([_byte_addresses(instr.segments(config))
                               for instr in block if isinstance(instr, Load)] or [_NONE])
        read = read[(read >= low) & (read < high)]
        result.append(int(last[read - low].max()) if read.size else -1)
    return result


_NONE = np.zeros(0, dtype=np.int64)


def _byte_addresses(segments: Sequence[Segment]) -> np.ndarray:
    """Return every byte address the segments cover (int64, in segment order)."""
    if not segments:
        return _NONE
    starts = np.fromiter((s.address for s in segments), dtype=np.int64, count=len(segments))
    lengths = np.fromiter((s.length for s in segments), dtype=np.int64, count=len(segments))
    if (lengths == lengths[0]).all():
        return (starts[:, None] + np.arange(lengths[0], dtype=np.int64)).ravel()
    offsets = np.arange(int(lengths.sum()), dtype=np.int64)
    offsets -= np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + offsets


def interleave(producer: Sequence[Instruction], blocks: Sequence[Sequence[Instruction]],
               writers: Sequence[int], lag: int = DEFAULT_LAG,
               spacing: int | None = None) -> list[Instruction]:
    """Return the producer's instructions with the blocks inserted in their own order, block
    b after producer instruction `after[b]`: the later of `writers[b]` followed by `lag` more
    producer STOREs (RowWriters) and `after[b - 1] + spacing` (default: the producer's
    instructions shared evenly among the blocks, so that no burst of blocks fills the
    dispatcher's queues while the array waits); blocks beyond the producer's end follow it."""
    if spacing is None:
        spacing = len(producer) // max(1, len(blocks))
    stores = [i for i, instr in enumerate(producer) if isinstance(instr, RowWriter)]
    after: list[int] = []
    floor = -1 - spacing
    for writer in writers:
        position = int(np.searchsorted(stores, writer, side="right")) + lag - 1
        spot = writer if position < 0 else (stores[position] if position < len(stores)
                                            else len(producer) - 1)  # fmt: skip
        floor = max(floor + spacing, spot, writer)
        after.append(floor)
    merged: list[Instruction] = []
    block = 0
    for index in range(-1, len(producer)):
        if index >= 0:
            merged.append(producer[index])
        while block < len(blocks) and after[block] == index:
            merged += blocks[block]
            block += 1
    for rest in blocks[block:]:
        merged += rest
    return merged
