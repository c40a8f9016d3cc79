"""Element-wise ops on rows longer than a spad_in quarter: the same pixels seen as shorter rows.

QAdd and QMul stage whole image rows in a quarter of spad_in (one scratchpad row per pixel),
so a row of more pixels than a quarter holds (an EEG model's 7,500 samples against a 16x16
array's 2,048-row quarters) was refused. When every operand's rows are contiguous (one row,
or rows one after the other: row_stride = width * pixel_stride), an image of H rows of W
pixels is the same memory as H * W / w rows of w pixels for any w dividing W (the widest
that fits a quarter; 1 at worst). The element-wise result
does not depend on how the pixels are grouped in rows, so the op runs on the folded maps
with the same instructions it uses for short rows.
"""

import dataclasses

from systolic.mapper.lowering.feature_map import FeatureMap

__all__ = ["fold_long_rows"]


def fold_long_rows(maps: list[FeatureMap], quarter: int) -> list[FeatureMap] | None:
    """`maps` (one geometry: the operands and result of one element-wise op) with rows of the
    widest width w <= `quarter` dividing their width, when their rows are longer than
    `quarter` pixels and contiguous; None when they are not (or fit already)."""
    first = maps[0]
    if first.width <= quarter or any(
            (m.height, m.width, m.channels) != (first.height, first.width, first.channels)
            or (m.height > 1 and m.row_stride != m.width * m.pixel_stride) for m in maps):
        return None
    width = max(w for w in range(1, quarter + 1) if first.width % w == 0)
    per_row = first.width // width
    return [dataclasses.replace(m, height=m.height * per_row, width=width,
                                row_stride=width * m.pixel_stride) for m in maps]
