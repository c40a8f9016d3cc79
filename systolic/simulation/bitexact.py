"""Compare accelerator-computed tensors with the reference executor's values, bit for bit.

`compare_layer(...)` reads one accelerator layer's outputs from the simulated memory (through
their placements, or the memory-order view of a permuted value) and returns the first
differing element as a `Mismatch`, naming the tile it belongs to:

- array layers (QConv, QMatMul): the output-channel block one array pass computes (the
  `cols` output channels / columns of a column tile) and the GEMM row (the output pixel
  `n, h, w` of a convolution, the row of a matrix product); output-stationary runs also name
  the row tile (`rows` GEMM rows per COMPUTE.OS);
- vector and layout layers: the channel and row of the element.

`compare_final_outputs(...)` then checks the model's outputs as they are read from memory at
the end (whoever wrote them: the accelerator, a host layer, or the input image) against the
reference, so an output that nothing wrote, or that a later step overwrote, is a mismatch.
"""

import math
from collections.abc import Mapping

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.program import LayerUnit, ProgramLayer
from systolic.mapper.lowering.compiled import CompiledModel, read_logical_value
from systolic.simulation.report import Mismatch

__all__ = ["compare_final_outputs", "compare_layer", "differing_indices", "tile_text"]


def tile_text(
    layer: ProgramLayer, shape: tuple[int, ...], index: tuple[int, ...], config: ArrayConfig
) -> str:
    """Describe the tile of output element `index` (of a tensor of `shape`) of `layer`."""
    if layer.unit is LayerUnit.ARRAY and len(shape) >= 2:
        if layer.op == "QConv":
            channel, channels = index[1], shape[1]
            pixel = (index[0], *index[2:])
            row = int(np.ravel_multi_index(pixel, (shape[0], *shape[2:])))
            where = (
                f"GEMM row {row} (output pixel n,{'h,w' if len(shape) == 4 else 'w'} = "
                f"{','.join(map(str, pixel))})"
            )
        else:
            channel, channels = index[-1], shape[-1]
            row = int(np.ravel_multi_index(index[:-1], shape[:-1])) if len(shape) > 1 else 0
            where = f"GEMM row {row}"
        block = channel // config.cols
        first, last = block * config.cols, min(channels, (block + 1) * config.cols) - 1
        text = (
            f"tile: output channels {first}..{last} (column tile {block} of "
            f"{math.ceil(channels / config.cols)}), {where}"
        )
        if config.dataflow is Dataflow.OS:
            text += f", row tile {row // config.rows} ({config.rows} rows each)"
        return text
    if len(shape) >= 3:
        return f"tile: channel {index[1]}, row {index[2]}"
    return "tile: the whole tensor"


def compare_layer(
    compiled: CompiledModel,
    layer: ProgramLayer,
    memory: np.ndarray,
    reference: Mapping[str, np.ndarray],
) -> Mismatch | None:
    """Return the first element of `layer`'s outputs that differs from the reference (NaN
    equals NaN)."""
    placed = {t.name: t for t in compiled.program.tensors}
    for name in layer.outputs:
        got = read_logical_value(compiled, memory, placed, name)
        want = reference.get(name)
        if got is None or want is None:
            continue
        if got.shape != want.shape:
            return Mismatch(layer.name, f"output {name!r} has shape {list(got.shape)}, the "
                            f"reference {list(want.shape)}", (), 0, 0)  # fmt: skip
        where = differing_indices(got, want)
        if not where.size:
            continue
        index = tuple(int(i) for i in where[0])
        tile = tile_text(layer, got.shape, index, compiled.config)
        if len(layer.outputs) > 1:
            tile = f"output {name!r}, {tile}"
        differing = f" ({len(where)} of {got.size} elements differ)"
        return Mismatch(layer.name, tile + differing, index, _number(want[index]),
                        _number(got[index]))  # fmt: skip
    return None


def differing_indices(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Return the indices (`np.argwhere` form) where `got` and `want` differ, NaN counting
    as equal to NaN: an identical NaN is not a mismatch."""
    same = got == want
    if got.dtype.kind in "fc" or want.dtype.kind in "fc":
        same |= np.isnan(got) & np.isnan(want)
    return np.argwhere(~same)


def _number(value: np.generic) -> int | float:
    return float(value) if np.issubdtype(value.dtype, np.floating) else int(value)


def compare_final_outputs(
    compiled: CompiledModel, outputs: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray]
) -> Mismatch | None:
    """Return the first element of the final outputs (read from memory) that differs from
    the reference executor's value; NaN equals NaN."""
    producers = {name: layer.name for layer in compiled.layers for name in layer.outputs}
    for name, got in outputs.items():
        want = reference.get(name)
        if want is None:
            continue
        want = np.asarray(want)
        layer = producers.get(name, f"graph output {name}")
        if got.shape != want.shape:
            return Mismatch(layer, f"final output {name!r} has shape {list(got.shape)}, the "
                            f"reference {list(want.shape)}", (), 0, 0)  # fmt: skip
        where = differing_indices(got, want.astype(got.dtype, copy=False))
        if not where.size:
            continue
        index = tuple(int(i) for i in where[0])
        tile = f"final output {name!r} ({len(where)} of {got.size} elements differ)"
        return Mismatch(layer, tile, index, _number(want[index]), _number(got[index]))
    return None
