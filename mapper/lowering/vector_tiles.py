"""The tiling nest of the vector-unit layers (QAdd, pools): images, bands of output rows,
channel blocks of `dim` lanes, then blocks of output rows within the band (one band of every
row by default: channel blocks outermost; narrower bands follow a convolution that stores its
output band by band), alternating between two scratchpad buffers so that a block's LOAD can
overlap the previous block's vector instruction; and the window of spad_in rows a vector
layer stages its operands in."""

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
                 band: int | None = None) -> Iterator[VectorTile]:
    """Yield the blocks in issue order; `block` output rows at most per block (> 0), bands
    of `band` rows (rounded down to whole blocks, at least one; default all rows)."""
    rows = height if band is None else max(block, band // block * block)
    buffer = 0
    for image in range(images):
        for b0 in range(0, height, rows):
            for c0 in range(0, channels, dim):
                for y0 in range(b0, min(height, b0 + rows), block):
                    yield VectorTile(image, c0, min(dim, channels - c0), y0,
                                     min(block, height - y0), buffer)  # fmt: skip
                    buffer ^= 1
