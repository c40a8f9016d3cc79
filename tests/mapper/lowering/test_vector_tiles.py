"""The vector layers' tiling nest: channel blocks outermost by default, bands of rows when
asked, buffers alternating in issue order; the spad_in window of all of spad_in."""

from systolic.config import ArrayConfig
from systolic.isa.memories import Memory, depth
from systolic.mapper.lowering.vector_tiles import SpadWindow, vector_tiles


def _order(**kwargs):  # type: ignore[no-untyped-def]
    return [(t.c0, t.y0, t.rows) for t in vector_tiles(1, 6, 5, 4, 2, **kwargs)]


def test_channel_blocks_outermost_by_default():
    assert _order() == [(0, 0, 2), (0, 2, 2), (0, 4, 1), (4, 0, 2), (4, 2, 2), (4, 4, 1)]
    assert [t.lanes for t in vector_tiles(1, 6, 5, 4, 2)] == [4, 4, 4, 2, 2, 2]


def test_bands_of_rows_hold_every_channel_block():
    assert _order(band=1) == [(0, 0, 2), (4, 0, 2), (0, 2, 2), (4, 2, 2), (0, 4, 1), (4, 4, 1)]
    assert _order(band=4) == [(0, 0, 2), (0, 2, 2), (4, 0, 2), (4, 2, 2), (0, 4, 1), (4, 4, 1)]
    assert _order(band=5) == _order(band=4)  # (whole blocks)
    assert _order(band=99) == _order()


def test_buffers_alternate_over_images_in_issue_order():
    tiles = list(vector_tiles(2, 4, 3, 4, 2, band=1))
    assert [(t.image, t.y0, t.buffer) for t in tiles] == [(0, 0, 0), (0, 2, 1), (1, 0, 0),
                                                          (1, 2, 1)]  # fmt: skip


def test_the_whole_window_is_all_of_spad_in():
    config = ArrayConfig(rows=4, cols=4, spad_kib=2)
    assert SpadWindow.whole(config) == SpadWindow(0, depth(config, Memory.SPAD_IN))
