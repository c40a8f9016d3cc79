"""Move a tensor between two strided placements with LOAD + COPY (layout operators).

`copy_strided` copies a logical tensor of `shape` whose element i lies at `src + sum(i_d *
src_strides[d])` to `dst + sum(i_d * dst_strides[d])`. One axis becomes the lanes of a
scratchpad row (the one contiguous in the destination, in chunks of `dim`), gathered from the
source with the LOAD element pattern (contiguous run or one element every stride); the two
innermost other axes are walked by the row pattern, any further axes by separate
instructions. Blocks of rows alternate between the two halves of spad_in (of its rows from
`first_row` on, when the rows before hold something else: an activation table). With `lut`
every COPY maps its elements through the activation table (a QTable's standalone pass).
"""

import dataclasses
import itertools
from collections.abc import Iterator
from typing import NamedTuple

from systolic.config import ArrayConfig
from systolic.isa.instructions import Copy, Instruction, Load, LoadTarget
from systolic.isa.memories import Memory, depth

__all__ = ["copy_strided"]


def copy_strided(
    config: ArrayConfig,
    shape: tuple[int, ...],
    src: int,
    src_strides: tuple[int, ...],
    dst: int,
    dst_strides: tuple[int, ...],
    *,
    element: int,
    flip_load: bool = False,
    flip_store: bool = False,
    lut: bool = False,
    first_row: int = 0,
) -> list[Instruction]:
    """Return the instructions of the copy described in the module docstring: per block of
    rows one LOAD into spad_in and one COPY out of it, in the order of the source's axes."""
    if not shape:
        shape, src_strides, dst_strides = (1,), (element,), (element,)
    axes = _choose_axes(shape, dst_strides, element)
    half = (depth(config, Memory.SPAD_IN) - first_row) // 2
    blocks = _row_blocks(axes.size(shape, axes.inner0), axes.size(shape, axes.inner1), half)
    chunk = config.dim if dst_strides[axes.lane] == element else 1
    code: list[Instruction] = []
    buffer = 0
    for src_base, dst_base in _outer_bases(shape, axes.outer, src, src_strides, dst, dst_strides):
        for c0 in range(0, shape[axes.lane], chunk):
            lanes = min(chunk, shape[axes.lane] - c0)
            gather = _lane_gather(src_strides[axes.lane], lanes, element)
            for block in blocks:
                spad_row = first_row + buffer * half
                buffer ^= 1
                load_rows = _row_pattern(src_base, src_strides, axes, block, c0)
                copy_rows = _row_pattern(dst_base, dst_strides, axes, block, c0)
                code.append(Load(LoadTarget.SPAD_IN, row=spad_row, count=block.rows, k0=0,
                                 length=lanes, flip_sign=flip_load, stride_outer=0,
                                 **gather, **load_rows))  # fmt: skip
                code.append(Copy(in_row=spad_row, m=block.rows, lanes=lanes,
                                 flip_sign=flip_store, lut=lut, **copy_rows))  # fmt: skip
    return code


@dataclasses.dataclass(frozen=True)
class _Axes:
    """Where each axis of the tensor goes: `lane` becomes a row's lanes, `inner0`/`inner1`
    the row pattern's inner and outer loop (None when the tensor has too few axes), and the
    `outer` axes are walked by separate instructions."""

    lane: int
    inner0: int | None
    inner1: int | None
    outer: tuple[int, ...]

    @staticmethod
    def size(shape: tuple[int, ...], axis: int | None) -> int:
        """Return the extent of `axis` (1 for None)."""
        return shape[axis] if axis is not None else 1

    @staticmethod
    def stride(strides: tuple[int, ...], axis: int | None) -> int:
        """Return the stride of `axis` (0 for None)."""
        return strides[axis] if axis is not None else 0


def _choose_axes(shape: tuple[int, ...], dst_strides: tuple[int, ...], element: int) -> _Axes:
    """Return the axes: the lanes are the last axis contiguous in the destination (with more
    than one index), else the last axis; the row pattern takes the two innermost others."""
    rank = len(shape)
    lane_axis = next(
        (d for d in reversed(range(rank)) if dst_strides[d] == element and shape[d] > 1),
        rank - 1,
    )
    others = [d for d in range(rank) if d != lane_axis]
    inner0 = others[-1] if others else None
    inner1 = others[-2] if len(others) > 1 else None
    return _Axes(lane_axis, inner0, inner1, tuple(others[:-2]))


class _Block(NamedTuple):
    """Rows (j, i) for j in [j0, j1) of the pattern's outer axis, i in [i0, i1) of its inner."""

    j0: int
    j1: int
    i0: int
    i1: int

    @property
    def rows(self) -> int:
        """Return the number of scratchpad rows the block fills."""
        return (self.j1 - self.j0) * (self.i1 - self.i0)


def _row_blocks(size0: int, size1: int, half: int) -> list[_Block]:
    """Return the blocks covering `size1` x `size0` rows, at most `half` rows each: whole
    inner runs side by side when one fits, else pieces of one inner run."""
    if size0 <= half:
        step = max(1, half // size0)
        return [_Block(j, min(size1, j + step), 0, size0) for j in range(0, size1, step)]
    return [_Block(j, j + 1, i, min(size0, i + half)) for j in range(size1)
            for i in range(0, size0, half)]  # fmt: skip


def _outer_bases(
    shape: tuple[int, ...],
    outer: tuple[int, ...],
    src: int,
    src_strides: tuple[int, ...],
    dst: int,
    dst_strides: tuple[int, ...],
) -> Iterator[tuple[int, int]]:
    """Yield (source, destination) address of every index of the `outer` axes, in order."""
    for index in itertools.product(*(range(shape[d]) for d in outer)):
        src_base = src + sum(i * src_strides[d] for i, d in zip(index, outer, strict=True))
        dst_base = dst + sum(i * dst_strides[d] for i, d in zip(index, outer, strict=True))
        yield src_base, dst_base


def _lane_gather(lane_stride: int, lanes: int, element: int) -> dict[str, int]:
    """Return the LOAD element pattern that gathers `lanes` lanes `lane_stride` bytes apart:
    one contiguous run, or one element every stride."""
    if lane_stride == element or lanes == 1:
        return {"run": lanes, "n_mid": 1, "stride_mid": 0}
    return {"run": 1, "n_mid": lanes, "stride_mid": lane_stride}


def _row_pattern(
    base: int, strides: tuple[int, ...], axes: _Axes, block: _Block, c0: int
) -> dict[str, int]:
    """Return the row pattern {ext, n0, row_stride0, row_stride1} reaching `block`'s rows
    from lane `c0` on, in a tensor of `strides` whose outer index starts at `base`."""
    stride0, stride1 = axes.stride(strides, axes.inner0), axes.stride(strides, axes.inner1)
    ext = base + c0 * strides[axes.lane] + block.j0 * stride1
    ext += block.i0 * stride0
    n0 = block.i1 - block.i0
    return {"ext": ext, "n0": n0, "row_stride0": stride0 if n0 > 1 else 0,
            "row_stride1": stride1 if block.j1 - block.j0 > 1 else 0}  # fmt: skip
