"""The external memory plan of a compiled model: every tensor placed once.

Layout rules (docs/notes section D): 8-bit activations of rank 4 ([N, C, H, W]) are stored
channel-last (NHWC), except the operands and results of matrix products ([B, H, S, K]
attention tensors: the plan's `matrix` names) that no spatial operator touches, and so are
those of rank 3 ([N, C, W]) that a 1-D convolution or pooling reads or writes (the plan's
`spatial` names); every other tensor is row-major (a [B, S, K] operand of a matrix product
keeps its K contiguous). A tensor a
padded QConv reads is stored inside a halo as wide as the largest pad of those consumers, the
halo bytes holding the consumer's x_zero_point (as a byte of the tensor's own type: uint8
tensors keep uint8 bytes) in the memory image; the placement's address points at logical
element (0, ..., 0). Buffers are aligned to the bus width and never reused.
"""

import dataclasses
import math

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ResourceError, UnsupportedError
from systolic.ir import DataType
from systolic.isa.program import PLACEABLE_TYPES, MemorySegment, TensorPlacement, TensorRole

__all__ = [
    "EIGHT_BIT",
    "MemoryPlan",
    "canonical_strides",
    "element_type",
    "is_channel_last",
]

EIGHT_BIT = frozenset({DataType.UINT8, DataType.INT8})
"""The activation types the accelerator reads and writes."""

_ADDRESS_LIMIT = 1 << 32


def element_type(dtype: DataType) -> DataType | None:
    """Return `dtype` when the program format can place it, else None (the value then lives
    on the host only). The accelerator itself touches only `EIGHT_BIT` (and the int32 rows it
    reads); host steps read and write the others."""
    return dtype if dtype in PLACEABLE_TYPES else None


def is_channel_last(
    dtype: DataType, shape: tuple[int, ...], spatial: bool = True, matrix: bool = False,
    wide: bool = False,
) -> bool:  # fmt: skip
    """True for the tensors stored channel-last: 8-bit activations of rank 4 (unless `matrix`:
    a matrix product's operand no spatial operator touches), and of rank 3 when `spatial` (a
    1-D convolution or pooling touches them); and the int32 results of integer convolutions
    (`wide`: QConvInt's STORE.raw writes pixels of channels)."""
    if wide and len(shape) in (3, 4):
        return True
    return dtype in EIGHT_BIT and (
        (len(shape) == 4 and not matrix) or (len(shape) == 3 and spatial)
    )


def canonical_strides(
    dtype: DataType, shape: tuple[int, ...], halo: int = 0, *, spatial: bool = True,
    matrix: bool = False, wide: bool = False,
) -> tuple[tuple[int, ...], int, int]:
    """Return (strides, bytes of the buffer, offset of element 0 in the buffer) of a tensor
    stored by the layout rules, inside a halo of `halo` elements on each spatial side."""
    kind = element_type(dtype)
    if kind is None:
        raise UnsupportedError(f"tensors of type {dtype.name} cannot be placed in memory")
    size = kind.numpy.itemsize
    if not is_channel_last(dtype, shape, spatial, matrix, wide):
        if halo:
            raise UnsupportedError("only channel-last activations can have a halo")
        row_major: list[int] = []
        step = size
        for extent in reversed(shape):
            row_major.append(step)
            step *= extent
        return tuple(reversed(row_major)), max(step, size), 0
    n, c, *extents = shape
    padded = [extent + 2 * halo for extent in extents]
    pixel = c * size
    # strides of the padded spatial axes, innermost (W) first
    spatial_strides = []
    step = pixel
    for extent in reversed(padded):
        spatial_strides.append(step)
        step *= extent
    spatial_strides.reverse()
    image = step
    strides = (image, size, *spatial_strides)
    offset = sum(halo * s for s in spatial_strides)
    return strides, n * image, offset


@dataclasses.dataclass
class MemoryPlan:
    """A bump allocator of external memory with the placements and image segments made."""

    config: ArrayConfig
    spatial: frozenset[str] = frozenset()
    matrix: frozenset[str] = frozenset()
    wide: frozenset[str] = frozenset()
    next_free: int = 0
    placements: dict[str, TensorPlacement] = dataclasses.field(default_factory=dict)
    segments: list[MemorySegment] = dataclasses.field(default_factory=list)

    @property
    def alignment(self) -> int:
        """Buffers start on bus-beat boundaries."""
        return max(self.config.bus_bytes, 8)

    def allocate(self, size: int, align: int | None = None) -> int:
        """Return the address of `size` fresh bytes (aligned to `align`, default the bus)."""
        step = max(align or 1, self.alignment)
        address = -(-self.next_free // step) * step
        if address + size > _ADDRESS_LIMIT:
            raise ResourceError(
                f"the model needs more than the 4 GiB of the 32-bit external address space "
                f"(at {address} asking for {size} more bytes); use a smaller model"
            )
        self.next_free = address + max(size, 1)
        return address

    def add_segment(self, data: bytes) -> int:
        """Place constant bytes in the memory image; return their address."""
        address = self.allocate(len(data))
        if data:
            self.segments.append(MemorySegment(address, bytes(data)))
        return address

    def channel_last(self, name: str, dtype: DataType, shape: tuple[int, ...]) -> bool:
        """True when value `name` is stored channel-last."""
        return is_channel_last(dtype, shape, name in self.spatial, name in self.matrix,
                               name in self.wide)

    def canonical(self, name: str, dtype: DataType, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Return the strides the layout rules give value `name` (without a halo)."""
        return canonical_strides(dtype, shape, spatial=name in self.spatial,
                                 matrix=name in self.matrix, wide=name in self.wide)[0]

    def place(
        self,
        name: str,
        dtype: DataType,
        shape: tuple[int, ...],
        role: TensorRole,
        *,
        halo: int = 0,
        fill: int = 0,
    ) -> TensorPlacement:
        """Place value `name` by the layout rules (halo bytes `fill`, a value of `dtype`)."""
        kind = element_type(dtype)
        if kind is None:
            raise UnsupportedError(f"value {name!r} of type {dtype.name} cannot be placed")
        strides, size, offset = canonical_strides(dtype, shape, halo, spatial=name in self.spatial,
                                                  matrix=name in self.matrix, wide=name in self.wide)
        if halo:
            byte = int(np.array(fill).astype(dtype.numpy).view(np.uint8))
            address = self.add_segment(bytes([byte]) * size)
        else:
            address = self.allocate(size)
        placement = TensorPlacement(name, role, address + offset, shape, kind, strides)
        self.placements[name] = placement
        return placement

    def place_constant(self, name: str, dtype: DataType, data: np.ndarray) -> TensorPlacement:
        """Place a constant by the layout rules with its values in the memory image."""
        shape = tuple(int(d) for d in data.shape)
        strides, size, _ = canonical_strides(dtype, shape, spatial=name in self.spatial,
                                             matrix=name in self.matrix, wide=name in self.wide)
        kind = element_type(dtype)
        assert kind is not None
        buffer = np.zeros(max(size, 1), dtype=np.uint8)
        view = np.ndarray(shape, dtype=kind.numpy, buffer=buffer, strides=strides)
        view[...] = data.astype(kind.numpy)
        address = self.add_segment(buffer.tobytes())
        placement = TensorPlacement(name, TensorRole.CONSTANT, address, shape, kind, strides)
        self.placements[name] = placement
        return placement

    def alias(self, placement: TensorPlacement) -> TensorPlacement:
        """Record a placement that re-interprets bytes already placed (no new memory)."""
        self.placements[placement.name] = placement
        return placement

    @property
    def size(self) -> int:
        """Bytes of external memory the plan uses (from address 0)."""
        return max([self.next_free] + [p.end for p in self.placements.values()])


def element_count(shape: tuple[int, ...]) -> int:
    """Number of elements of a shape."""
    return math.prod(shape)
