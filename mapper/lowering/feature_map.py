"""A placed activation seen as the vector unit sees it: images of H x W pixels, one pixel per
scratchpad row, the channels contiguous in external memory.

Channel-last tensors [N, C, H, W] (or [N, C, W], H = 1) are N images of H x W pixels of C
channels. A row-major tensor [..., K] is one image of prod(...) x 1 pixels of K channels
(rank 1: one pixel). Pixel (y, x) of image n starts at `image_addresses[n] + y * row_stride +
x * pixel_stride`; its channel c lies `c * element` bytes further.
"""

import dataclasses
import functools
import math

from systolic.errors import UnsupportedError
from systolic.isa.field_copies import copy_with
from systolic.isa.instructions import Load, LoadTarget
from systolic.isa.program import TensorPlacement

__all__ = ["FeatureMap", "check_same_layout", "feature_map", "load_pixels"]


@dataclasses.dataclass(frozen=True)
class FeatureMap:
    """See the module docstring."""

    image_addresses: tuple[int, ...]
    height: int
    width: int
    channels: int
    row_stride: int
    pixel_stride: int
    element: int

    def pixel(self, image: int, y: int, x: int, channel: int = 0) -> int:
        """Return the address of channel `channel` of pixel (y, x) of image `image`."""
        return (
            self.image_addresses[image]
            + y * self.row_stride
            + x * self.pixel_stride
            + channel * self.element
        )


def feature_map(placement: TensorPlacement, channel_last: bool) -> FeatureMap:
    """Return the feature-map view of a placement (channel axis 1 when `channel_last`, else
    the last axis); UnsupportedError when its channels are not contiguous."""
    shape, strides = placement.shape, placement.strides
    element = placement.dtype.numpy.itemsize
    if channel_last:
        n, c = shape[0], shape[1]
        height, width = (shape[2], shape[3]) if len(shape) == 4 else (1, shape[2])
        row_stride = strides[2] if len(shape) == 4 else 0
        pixel_stride = strides[-1]
        images = tuple(placement.address + i * strides[0] for i in range(n))
        channel_stride = strides[1]
    else:
        if not shape:
            shape, strides = (1,), (element,)
        c = shape[-1]
        channel_stride = strides[-1]
        if len(shape) == 1:
            images, height, row_stride = (placement.address,), 1, 0
        else:
            height, row_stride = shape[-2], strides[-2]
            outer = shape[:-2]
            images = tuple(
                placement.address
                + sum(i * s for i, s in zip(_unravel(k, outer), strides[:-2], strict=True))
                for k in range(math.prod(outer))
            )
        width, pixel_stride = 1, 0
    if c > 1 and channel_stride != element:
        raise UnsupportedError(f"tensor {placement.name!r} does not hold its channels contiguously")
    return FeatureMap(images, height, width, c, row_stride, pixel_stride, element)


def check_same_layout(label: str, maps: dict[str, FeatureMap]) -> None:
    """Raise UnsupportedError unless the element-wise operands and result `maps` (by value
    name) are seen alike: as many images of as many rows, pixels and channels. Tensors of one
    shape can be stored differently (an attention product's [B, H, S, S] row-major, a bias
    made on the host [1, H, S, S] channel-last): lane i of a pixel would then not be the same
    element in each, so the layer runs on the host."""
    shapes = {name: (len(m.image_addresses), m.height, m.width, m.channels)
              for name, m in maps.items()}
    if len(set(shapes.values())) > 1:
        seen = ", ".join(f"{name!r} {n} x {h} x {w} x {c}"
                         for name, (n, h, w, c) in shapes.items())
        raise UnsupportedError(
            f"{label}: its operands are stored in different layouts (images x rows x pixels x "
            f"channels: {seen}), so the vector unit cannot pair their elements; runs on the host")


def _unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    digits = []
    for extent in reversed(shape):
        digits.append(index % extent)
        index //= extent
    return tuple(reversed(digits))


def load_pixels(
    fmap: FeatureMap,
    image: int,
    y0: int,
    rows: int,
    channel: int,
    lanes: int,
    spad_row: int,
    *,
    flip_sign: bool,
) -> Load:
    """LOAD image rows y0 .. y0+rows-1 (all W pixels each), channels channel .. +lanes-1,
    into spad_in rows spad_row .. (one row per pixel, row (y - y0) * W + x).

    The LOAD is a copy of one prototype per (lanes, flip_sign) with the rows and addresses
    changed (`copy_with`: what the constructor builds from the same fields)."""
    return copy_with(
        _pixel_prototype(lanes, flip_sign),
        row=spad_row,
        count=rows * fmap.width,
        ext=fmap.pixel(image, y0, 0, channel),
        n0=fmap.width,
        row_stride0=fmap.pixel_stride if fmap.width > 1 else 0,
        row_stride1=fmap.row_stride if rows > 1 else 0,
    )


@functools.lru_cache(maxsize=256)
def _pixel_prototype(lanes: int, flip_sign: bool) -> Load:
    """A LOAD of `lanes` contiguous channels per row (its rows and addresses placeholders)."""
    return Load(LoadTarget.SPAD_IN, row=0, count=1, ext=0, k0=0, length=lanes, run=lanes,
                n_mid=1, flip_sign=flip_sign)
