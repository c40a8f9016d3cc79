"""split_rows: the row pieces of a tile follow the blocks' row patterns exactly."""

import pytest

from systolic.mapper.lowering.gemm import RowBlock, split_rows

BLOCKS = (RowBlock(1000, 14, 5, 3, 100), RowBlock(5000, 6, 4, 2, 50))


def _address(block: RowBlock, r: int) -> int:
    return block.base + (r // block.n0) * block.stride1 + (r % block.n0) * block.stride0


def _expected(start: int, stop: int) -> list[int]:
    rows = [_address(BLOCKS[0], r) for r in range(14)] + [_address(BLOCKS[1], r) for r in range(6)]
    return rows[start:stop]


@pytest.mark.parametrize(("start", "stop"), [(0, 20), (0, 1), (3, 9), (7, 16), (12, 20), (15, 17)])
def test_pieces_cover_the_tile_in_order(start: int, stop: int) -> None:
    pieces = split_rows(BLOCKS, start, stop)
    got: list[int] = []
    for piece in pieces:
        assert piece.offset == len(got)
        for r in range(piece.count):
            got.append(piece.ext + (r // piece.n0) * piece.stride1 + (r % piece.n0) * piece.stride0)
    assert got == _expected(start, stop)
    assert len(pieces) <= 2 * len(BLOCKS)
