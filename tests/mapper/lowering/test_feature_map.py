"""`load_pixels`: the LOAD of a block of image rows, made as a copy of a prototype, equals the
LOAD the constructor builds from the same fields (fields, decode hints, check mark, word)."""

import pytest

from systolic.isa.fields import InstructionError
from systolic.isa.load import Load, LoadTarget
from systolic.mapper.lowering.feature_map import FeatureMap, load_pixels

_MAPS = (
    FeatureMap((4096, 4096 + 7 * 9 * 32), height=7, width=9, channels=32, row_stride=9 * 32,
               pixel_stride=32, element=1),
    FeatureMap((0,), height=5, width=1, channels=70, row_stride=140, pixel_stride=140,
               element=2),
)


def _constructed(fmap: FeatureMap, image: int, y0: int, rows: int, channel: int, lanes: int,
                 spad_row: int, flip_sign: bool) -> Load:
    return Load(LoadTarget.SPAD_IN, row=spad_row, count=rows * fmap.width,
                ext=fmap.pixel(image, y0, 0, channel), n0=fmap.width,
                row_stride0=fmap.pixel_stride if fmap.width > 1 else 0,
                row_stride1=fmap.row_stride if rows > 1 else 0, k0=0, length=lanes, run=lanes,
                n_mid=1, flip_sign=flip_sign)


@pytest.mark.parametrize("fmap", _MAPS, ids=["wide", "one_pixel_rows"])
@pytest.mark.parametrize(("image", "y0", "rows", "channel", "lanes", "flip"), [
    (0, 0, 1, 0, 16, False), (0, 2, 3, 16, 16, True), (0, 4, 1, 5, 3, True),
    (0, 0, 5, 0, 1, False)])
def test_a_copy_equals_the_constructed_load(fmap: FeatureMap, image: int, y0: int, rows: int,
                                            channel: int, lanes: int, flip: bool) -> None:
    made = load_pixels(fmap, image, y0, rows, channel, lanes, 40, flip_sign=flip)
    built = _constructed(fmap, image, y0, rows, channel, lanes, 40, flip)
    assert made == built
    assert made.__dict__ == built.__dict__
    assert made.encode() == built.encode()


def test_lanes_outside_the_field_raise_the_constructors_error() -> None:
    with pytest.raises(InstructionError, match="length"):
        load_pixels(_MAPS[0], 0, 0, 1, 0, 1 << 16, 0, flip_sign=False)
