"""Which vector layers run interleaved with the array layer before them, and how.

A QAdd or a windowed pool (QMaxPool, QAveragePool smaller than its input) that directly
follows, in graph order, the QConv / QMatMul producing one of its inputs is interleaved with
it (`interleave`): the producer is lowered with a smaller scratchpad (`Overlap.producer`:
`spad_kib` lowered by whole KiB), the vector layer stages its operands in the spad_in rows
this frees (`Overlap.window`), its blocks in row-major order (the order a convolution stores
its pixels in), and each block goes into the producer's stream once its operand is stored.
The vector layer's own instructions then belong to the producer's layer (the vector layer
keeps none, its reason starting with `INTERLEAVED`). With `--dataflow both` the blocks are
interleaved into each dataflow's lowering of the producer before the chooser times them
(`DataflowChooser.refine`): the choice sees what will run.
"""

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from systolic.config import ArrayConfig
from systolic.ir import SYSTOLIC_DOMAIN, Graph, Node
from systolic.isa.instructions import Instruction
from systolic.isa.memories import Memory, depth
from systolic.mapper.lowering.interleave import WriterMap, blocks_of, interleave
from systolic.mapper.lowering.node_attrs import ints_attr
from systolic.mapper.lowering.vector_tiles import SpadWindow

__all__ = ["INTERLEAVED", "Overlap", "merge", "plan_overlap"]

INTERLEAVED = "interleaved with the instructions of"
"""How the reason of a vector layer interleaved with its producer begins."""

BLOCK_ROWS = 2
"""Image rows of output per block of an interleaved vector layer (at most; one row when the
window for two would take more than its share of spad_in)."""

_MAX_SHARE = 4
"""The window takes at most 1 / `_MAX_SHARE` of spad_in (else the layers run one after the
other), except a window of one output row, which may take up to 1 / `_ROW_SHARE`."""

_ROW_SHARE = 3
"""(A 64x64 array's spad_in holds 2,048 rows: the light ResNet-50's max pool needs 672 for
its one-row blocks, more than a quarter; below a third.)"""


@dataclasses.dataclass(frozen=True)
class Overlap:
    """The plan of one interleaving: the vector node, the producer's configuration and the
    vector layer's spad_in window."""

    vector: Node
    producer: ArrayConfig
    window: SpadWindow


def _shape(graph: Graph, name: str) -> tuple[int, ...] | None:
    found = graph.type_of(name)
    if found is None or found.shape is None or not found.is_static:
        return None
    return tuple(int(d) for d in found.shape)  # type: ignore[arg-type]


def _window_rows(vector: Node, graph: Graph, block_rows: int) -> int | None:
    """Return the spad_in rows the vector node's blocks of `block_rows` output rows need, or
    None when it is not interleaved (not a QAdd or a windowed pool of an image map)."""
    if vector.domain != SYSTOLIC_DOMAIN:
        return None
    if vector.op_type == "QAdd":
        shape = _shape(graph, vector.outputs[0])
        if shape is None or len(shape) != 4:
            return None
        return 4 * block_rows * shape[3]  # two buffers of A and B
    if vector.op_type in ("QMaxPool", "QAveragePool"):
        shape = _shape(graph, vector.inputs[0])
        kernel = ints_attr(vector, "kernel_shape", ())
        if shape is None or len(shape) != 4 or len(kernel) != 2 or kernel[0] >= shape[2]:
            return None
        stride = ints_attr(vector, "strides", (1, 1))[0]
        return 2 * (stride * (block_rows - 1) + kernel[0]) * shape[3]  # two buffers
    return None


def plan_overlap(node: Node, following: Node | None, graph: Graph, config: ArrayConfig
                 ) -> Overlap | None:
    """Return how array node `node` and the node after it interleave, or None when they do
    not (module docstring)."""
    if following is None or not node.outputs:
        return None
    reads = following.inputs[:2] if following.op_type == "QAdd" else following.inputs[:1]
    if node.outputs[0] not in reads:
        return None
    full = depth(config, Memory.SPAD_IN)
    fitting = [rows for block_rows in range(BLOCK_ROWS, 0, -1)
               if (rows := _window_rows(following, graph, block_rows)) is not None
               and rows * (_MAX_SHARE if block_rows > 1 else _ROW_SHARE) <= full]  # fmt: skip
    if not fitting:
        return None
    rows = fitting[0]
    rows_per_kib = full / config.spad_kib
    kib = -(-rows // max(1, int(rows_per_kib)))
    producer = dataclasses.replace(config, spad_kib=config.spad_kib - kib)
    first = depth(producer, Memory.SPAD_IN)
    return Overlap(following, producer, SpadWindow(first, full - first))


def merge(producer: Sequence[Instruction], lower: Callable[[int | None], list[Instruction]],
          config: ArrayConfig) -> list[Instruction] | None:
    """Return the producer's instructions with the vector layer's blocks interleaved
    (`interleave.interleave`), or None when the producer's writes are too scattered to map.

    `lower(band)` lowers the vector layer in bands of `band` output rows (`vector_tiles`);
    of the two orders row blocks outermost (bands of one block) and channel blocks outermost
    (one band), the one whose blocks can go earliest is taken (the least sum over blocks of
    the newest producer instruction each block and the blocks before it wait for): a
    convolution storing every channel of a few pixels at a time wants the first, one
    storing one channel block of every pixel at a time the second. The second is not
    lowered when no block of the first waits longer than for its own operand. (Bands in
    between score better by that sum on the light ResNet-50 but run slower.)"""
    written = WriterMap(producer, config)  # (built once for both orders)
    if written.too_wide:
        return None
    best: tuple[int, list[list[Instruction]], list[int]] | None = None
    for band in (1, None):
        blocks = blocks_of(lower(band))
        writers = written.newest(blocks)
        waits = np.maximum.accumulate(np.asarray(writers, dtype=np.int64)) if writers else _NONE
        if best is None or int(waits.sum()) < best[0]:
            best = (int(waits.sum()), blocks, writers)
        if (waits == writers).all():  # (no block waits longer than for its own operand)
            break
    assert best is not None
    return interleave(producer, best[1], best[2])

_NONE = np.zeros(0, dtype=np.int64)
