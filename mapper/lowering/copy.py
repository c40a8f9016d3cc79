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

import itertools

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
    """Return the instructions of the copy described in the module docstring."""
    if not shape:
        shape, src_strides, dst_strides = (1,), (element,), (element,)
    rank = len(shape)
    lane_axis = next(
        (d for d in reversed(range(rank)) if dst_strides[d] == element and shape[d] > 1),
        rank - 1,
    )
    others = [d for d in range(rank) if d != lane_axis]
    inner0 = others[-1] if others else None
    inner1 = others[-2] if len(others) > 1 else None
    outer = others[:-2]
    half = (depth(config, Memory.SPAD_IN) - first_row) // 2
    size0 = shape[inner0] if inner0 is not None else 1
    size1 = shape[inner1] if inner1 is not None else 1
    code: list[Instruction] = []
    buffer = 0

    def stride(strides: tuple[int, ...], axis: int | None) -> int:
        return strides[axis] if axis is not None else 0

    # blocks of (i1 range, i0 range) of at most `half` rows each
    blocks: list[tuple[int, int, int, int]] = []
    if size0 <= half:
        step = max(1, half // size0)
        blocks = [(j, min(size1, j + step), 0, size0) for j in range(0, size1, step)]
    else:
        blocks = [(j, j + 1, i, min(size0, i + half)) for j in range(size1)
                  for i in range(0, size0, half)]  # fmt: skip
    lane_size = shape[lane_axis]
    for index in itertools.product(*(range(shape[d]) for d in outer)):
        src_base = src + sum(i * src_strides[d] for i, d in zip(index, outer, strict=True))
        dst_base = dst + sum(i * dst_strides[d] for i, d in zip(index, outer, strict=True))
        chunk = config.dim if dst_strides[lane_axis] == element else 1
        for c0 in range(0, lane_size, chunk):
            lanes = min(chunk, lane_size - c0)
            lane_src = src_strides[lane_axis]
            if lane_src == element or lanes == 1:
                pattern = {"run": lanes, "n_mid": 1, "stride_mid": 0}
            else:
                pattern = {"run": 1, "n_mid": lanes, "stride_mid": lane_src}
            for j0, j1, i0, i1 in blocks:
                rows = (j1 - j0) * (i1 - i0)
                spad_row = first_row + buffer * half
                buffer ^= 1
                s = src_base + c0 * lane_src + j0 * stride(src_strides, inner1)
                s += i0 * stride(src_strides, inner0)
                d = dst_base + c0 * dst_strides[lane_axis] + j0 * stride(dst_strides, inner1)
                d += i0 * stride(dst_strides, inner0)
                n0 = i1 - i0
                code.append(
                    Load(
                        LoadTarget.SPAD_IN,
                        row=spad_row,
                        count=rows,
                        ext=s,
                        n0=n0,
                        row_stride0=stride(src_strides, inner0) if n0 > 1 else 0,
                        row_stride1=stride(src_strides, inner1) if j1 - j0 > 1 else 0,
                        k0=0,
                        length=lanes,
                        flip_sign=flip_load,
                        stride_outer=0,
                        **pattern,
                    )
                )
                code.append(
                    Copy(
                        in_row=spad_row,
                        m=rows,
                        lanes=lanes,
                        ext=d,
                        n0=n0,
                        row_stride0=stride(dst_strides, inner0) if n0 > 1 else 0,
                        row_stride1=stride(dst_strides, inner1) if j1 - j0 > 1 else 0,
                        flip_sign=flip_store,
                        lut=lut,
                    )
                )
    return code
