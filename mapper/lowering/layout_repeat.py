"""Copies that repeat elements: a nearest Resize by integer factors as LOAD + COPY patterns.

An output axis of size `o` over an input axis of size `i` with `o = f * i` (f > 1) is split
into (i, f): output index a * f + b takes input index a. When the output's addresses, on
the split shape, are a strided view of the input (`layout.decide_view`), the f axes have source
stride 0: each source element is read once and written f times. `copy_repeated` loads the
source once per block of rows (`copy_strided` over the axes that are not repeats) and issues
one COPY per combination of repeat indices, each at its own destination offset: a channel-last
[N, C, H, W] map upsampled by (fh, fw) is LOAD of H x W pixel rows (C lanes each) and
fh * fw COPYs of them with the row pattern's strides multiplied by the factors. No new
instruction and no stride-0 element pattern: the LOAD and COPY patterns are the ordinary
strided ones.
"""

import dataclasses
import itertools

from systolic.config import ArrayConfig
from systolic.isa.instructions import Copy, Instruction
from systolic.mapper.lowering.copy import copy_strided

__all__ = ["copy_repeated", "expand_strides", "split_shape"]


def split_shape(out_shape: tuple[int, ...], in_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Return the output shape with each axis enlarged by an integer factor f > 1 split into
    (input size, f), or None when the ranks differ or no axis is enlarged so."""
    if len(out_shape) != len(in_shape):
        return None
    split: list[int] = []
    for o, i in zip(out_shape, in_shape, strict=True):
        split += [i, o // i] if o > i and o % i == 0 else [o]
    return tuple(split) if len(split) > len(out_shape) else None


def expand_strides(
    strides: tuple[int, ...], shape: tuple[int, ...], split: tuple[int, ...]
) -> tuple[int, ...]:
    """Return the strides of a placement of `shape` (`strides`) on its `split` shape: an
    axis split into (i, f) has strides (f * s, s)."""
    expanded: list[int] = []
    position = 0
    for size, stride in zip(shape, strides, strict=True):
        if split[position] == size:
            expanded.append(stride)
            position += 1
        else:
            factor = split[position + 1]
            expanded += [factor * stride, stride]
            position += 2
    return tuple(expanded)


def copy_repeated(
    config: ArrayConfig,
    shape: tuple[int, ...],
    src: int,
    src_strides: tuple[int, ...],
    dst: int,
    dst_strides: tuple[int, ...],
    *,
    element: int,
) -> list[Instruction]:
    """Return the instructions copying a tensor of `shape` as `copy_strided` does, where the
    axes of source stride 0 (size > 1) repeat each loaded row: one LOAD per block and one
    COPY per repeat offset (see the module docstring)."""
    repeats = [d for d, (size, stride) in enumerate(zip(shape, src_strides, strict=True))
               if stride == 0 and size > 1]  # fmt: skip
    if not repeats:
        return copy_strided(config, shape, src, src_strides, dst, dst_strides, element=element)
    kept = [d for d in range(len(shape)) if d not in repeats]
    base = copy_strided(config, tuple(shape[d] for d in kept), src,
                        tuple(src_strides[d] for d in kept), dst,
                        tuple(dst_strides[d] for d in kept), element=element)  # fmt: skip
    offsets = [sum(i * dst_strides[d] for i, d in zip(index, repeats, strict=True))
               for index in itertools.product(*(range(shape[d]) for d in repeats))]  # fmt: skip
    code: list[Instruction] = []
    for instruction in base:
        if isinstance(instruction, Copy):
            code += [dataclasses.replace(instruction, ext=instruction.ext + offset)
                     for offset in offsets]  # fmt: skip
        else:
            code.append(instruction)
    return code
