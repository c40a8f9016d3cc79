"""The tiling nest of the vector-unit layers (QAdd, pools): images, channel blocks of `dim`
lanes, then blocks of output rows (or, `rows_outer`, the row blocks outside the channel
blocks: the order a convolution producing the operand stores it in), alternating between two
scratchpad buffers so that a block's LOAD can overlap the previous block's vector
instruction; and the window of spad_in rows a vector layer stages its operands in."""

import dataclasses
from collections.abc import Iterator

from systolic.config import ArrayConfig
from systolic.isa.memories import Memory, depth

__all__ = ["SpadWindow", "VectorTile", "vector_tiles"]


@dataclasses.dataclass(frozen=True)
class VectorTile:
    """One block of a vector layer: output rows `y0 .. y0 + rows - 1` of channels
    `c0 .. c0 + lanes - 1` of image `image`, staged in scratchpad buffer `buffer` (0 or 1)."""

    image: int
    c0: int
    lanes: int
    y0: int
    rows: int
    buffer: int


@dataclasses.dataclass(frozen=True)
class SpadWindow:
    """spad_in rows `first .. first + rows - 1`: where a vector layer stages its operands
    (all of spad_in, or the rows the array layer it is interleaved with leaves unused)."""

    first: int
    rows: int

    @classmethod
    def whole(cls, config: ArrayConfig) -> "SpadWindow":
        """All of spad_in."""
        return cls(0, depth(config, Memory.SPAD_IN))


def vector_tiles(images: int, channels: int, height: int, dim: int, block: int,
                 rows_outer: bool = False) -> Iterator[VectorTile]:
    """Yield the blocks in issue order; `block` output rows at most per block (> 0)."""
    buffer = 0
    for image in range(images):
        chunks = [(c0, min(dim, channels - c0)) for c0 in range(0, channels, dim)]
        starts = range(0, height, block)
        pairs = ([(c, y0) for y0 in starts for c in chunks] if rows_outer
                 else [(c, y0) for c in chunks for y0 in starts])  # fmt: skip
        for (c0, lanes), y0 in pairs:
            yield VectorTile(image, c0, lanes, y0, min(block, height - y0), buffer)
            buffer ^= 1
