"""`GemmJob`: the matrix product Y = requant(A·B + bias) every array layer is lowered to.

A convolution (one group, or several groups packed block-diagonally) and a matrix product
both become a job: the rows of A are output pixels (or the flattened leading dimensions of a
matrix product), each gathered from external memory by a row pattern (`RowBlock`) and the
element pattern of the im2col address generation (`ElementWalk`); B is a constant K x N int
matrix (laid out in a weight image) or a computed K x N matrix read straight from its
placement (`ComputedWeights`: attention products, one batch entry of B); row i of Y is
written as N contiguous elements at the matching Y row. The schedules (`schedule.py`) tile
jobs onto the array.
"""

import dataclasses

import numpy as np

__all__ = ["ComputedWeights", "ElementWalk", "GemmJob", "RowBlock", "RowPiece", "split_rows"]


@dataclasses.dataclass(frozen=True)
class RowBlock:
    """`count` rows; row r lies at base + (r // n0) * stride1 + (r % n0) * stride0 (bytes)."""

    base: int
    count: int
    n0: int
    stride0: int
    stride1: int


@dataclasses.dataclass(frozen=True)
class RowPiece:
    """Rows of one tile that one LOAD or STORE row pattern reaches.

    `offset` is the first row's index inside the tile; the pattern fields are those of the
    instruction (docs/isa.md, "Address patterns").
    """

    offset: int
    count: int
    ext: int
    n0: int
    stride0: int
    stride1: int


@dataclasses.dataclass(frozen=True)
class ElementWalk:
    """The element pattern of A's rows: element k at row_base + offset(k) (docs/isa.md).

    `offset(k) = (k div (run·n_mid))·stride_outer + ((k div run) mod n_mid)·stride_mid +
    (k mod run)·operand_bytes`.
    """

    run: int
    n_mid: int
    stride_mid: int
    stride_outer: int


def split_rows(blocks: tuple[RowBlock, ...], start: int, stop: int) -> list[RowPiece]:
    """Return the row pieces that cover global rows [start, stop) of `blocks` (in order).

    Global rows number the blocks' rows one block after the other. A piece never crosses a
    block; a piece starting inside a pattern row (r % n0 != 0) covers only the rest of that row,
    so every piece is one row pattern starting at r0 = 0.
    """
    pieces: list[RowPiece] = []
    first = 0
    for block in blocks:
        low, high = max(start, first), min(stop, first + block.count)
        first += block.count
        r = low - (first - block.count)
        end = high - (first - block.count)
        while r < end:
            r1, r0 = divmod(r, block.n0)
            ext = block.base + r1 * block.stride1 + r0 * block.stride0
            offset = r + (first - block.count) - start
            if r0:
                count = min(end, (r1 + 1) * block.n0) - r
                pieces.append(RowPiece(offset, count, ext, count, block.stride0, 0))
            else:
                count = end - r
                pieces.append(RowPiece(offset, count, ext, block.n0, block.stride0, block.stride1))
            r += count
    return pieces


@dataclasses.dataclass(frozen=True)
class ComputedWeights:
    """A K x N matrix B computed by an earlier layer, read where it lies in external memory:
    element (k, n) at `address + k·row_stride + n·col_stride` (any non-negative strides, so a
    transposed view works). 8-bit values; `flip` is the weight LOAD's flip_sign (uint8 B with
    zero point 128 becomes int8 B − 128 exactly)."""

    address: int
    k: int
    n: int
    row_stride: int
    col_stride: int
    flip: bool


@dataclasses.dataclass(frozen=True, eq=False)
class GemmJob:
    """One matrix product for the array; see the module docstring.

    `a_rows` and `y_rows` have the same row counts block by block (and the same n0); `weights`
    is the K x N integer matrix B (any integer dtype; columns are Y's elements in order, zeros
    allowed), or a
    `ComputedWeights` for a B computed at run time; `bias`
    already holds the folded activation zero point; `multiplier`/`shift` are per column.
    `zero_point`, `lo`, `hi` are the STORE's (int8 domain); `flip_in`/`flip_out` the LOAD's
    and STORE's `flip_sign`; `lut` sets the STOREs' flag of that name (the output goes through
    the activation table a TABLE loaded first). With `raw` the STOREs write the int32
    accumulators plus bias instead (STORE.raw: 4-byte elements, no output stage; Y's rows are
    then int32). `label` names the layer in messages.
    """

    label: str
    a_rows: tuple[RowBlock, ...]
    y_rows: tuple[RowBlock, ...]
    walk: ElementWalk
    weights: np.ndarray | ComputedWeights
    bias: np.ndarray
    multiplier: np.ndarray
    shift: np.ndarray
    zero_point: int
    lo: int
    hi: int
    flip_in: bool
    flip_out: bool
    lut: bool = False
    raw: bool = False

    @property
    def k(self) -> int:
        """The reduction length K."""
        if isinstance(self.weights, ComputedWeights):
            return self.weights.k
        return int(self.weights.shape[0])

    @property
    def n(self) -> int:
        """The output columns N."""
        if isinstance(self.weights, ComputedWeights):
            return self.weights.n
        return int(self.weights.shape[1])

    @property
    def rows(self) -> int:
        """The rows of A (and Y)."""
        return sum(block.count for block in self.a_rows)
