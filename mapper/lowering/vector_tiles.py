"""The tiling nest of the vector-unit layers (QAdd, pools): images, channel blocks of `dim`
lanes, then blocks of output rows, alternating between two scratchpad buffers so that a block's
LOAD can overlap the previous block's vector instruction."""

import dataclasses
from collections.abc import Iterator

__all__ = ["VectorTile", "vector_tiles"]


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


def vector_tiles(images: int, channels: int, height: int, dim: int, block: int
                 ) -> Iterator[VectorTile]:
    """Yield the blocks in issue order; `block` output rows at most per block (> 0)."""
    buffer = 0
    for image in range(images):
        for c0 in range(0, channels, dim):
            lanes = min(dim, channels - c0)
            for y0 in range(0, height, block):
                yield VectorTile(image, c0, lanes, y0, min(block, height - y0), buffer)
                buffer ^= 1
