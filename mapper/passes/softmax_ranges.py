"""The calibration range of a Softmax input, cut where SOFTMAX's exp table underflows.

An attention mask adds a large negative number (-10000, or float32's lowest) to the scores
of masked positions, so the input's plain (min, max) is dominated by the mask and its 8-bit
scale drowns the scores. SOFTMAX only sees distances below a row's maximum, and the exp table
E[d] = rhe(2^15 exp(-s d)) is 0 once exp(-distance) < 2^-16, a real distance beyond
`EXP_CUTOFF` = 16 ln 2: every value farther than that below its row's maximum contributes
exactly 0. So the low end of the range may rise to (the smallest row maximum seen) -
EXP_CUTOFF without changing what any calibration row computes: a value cut off saturates to
the lowest code, still at least EXP_CUTOFF below its row's maximum.
"""

import math
from collections.abc import Mapping, Sequence

import numpy as np

from systolic.ir import Graph, Model, Node
from systolic.mapper.passes.graph_tools import attr_int
from systolic.reference.executor import run_model
from systolic.reference.kernels.blas_threads import single_threaded_blas

__all__ = ["EXP_CUTOFF", "RowFloors", "softmax_row_floors"]

EXP_CUTOFF = 16 * math.log(2)
"""The real distance below a row's maximum beyond which the exp table holds 0."""


def _rows(node: Node, value: np.ndarray) -> np.ndarray:
    """Return `value` as the rows the Softmax normalises (2-D coercion before opset 13)."""
    rank = max(value.ndim, 1)
    if not node.version or node.version < 13:
        axis = attr_int(node, "axis", 1) % rank
        return value.reshape(int(np.prod(value.shape[:axis], dtype=np.int64)), -1)
    axis = attr_int(node, "axis", -1) % rank
    return np.moveaxis(value, axis, -1).reshape(-1, value.shape[axis])


class RowFloors:
    """An observer of reference runs (`run_model`'s `on_node`, or `calibrate`'s `also`) that
    collects, per input of `softmaxes` (by value name), the smallest row maximum seen minus
    EXP_CUTOFF: the lowest value its quantization range needs (`floors`).

    Given `graph`, also the floors of the two operands of an Add that makes such an input (an
    attention mask added to the scores), each operand not a graph output and read only by
    such Adds: floor(operand) = floor(sum) - max(other operand), the least over its Adds (a
    mask that every layer adds, as Gemma's eager attention does). Cutting an operand there
    is exact for each Softmax: a sum that reached the floor before still does (it saturates
    to the lowest code as before), and a sum above it had no operand below its cut. A mask
    of float's lowest value would otherwise need a range (and a requantization multiplier)
    of ~1e38."""

    def __init__(self, softmaxes: Sequence[Node], graph: Graph | None = None) -> None:
        self.wanted = {node.outputs: node for node in softmaxes}  # outputs name a node uniquely
        self.row_floors: dict[str, float] = {}
        self._sums = {node.inputs[0] for node in softmaxes}
        self._consumers = {} if graph is None else graph.consumers()
        self._outputs = set() if graph is None else {info.name for info in graph.outputs}
        self._operands: dict[str, tuple[str, str]] = {}  # sum -> its two operands
        self._highs: dict[str, float] = {}

    @property
    def floors(self) -> dict[str, float]:
        """The floors seen so far: the Softmax inputs', then their cut operands'."""
        found = dict(self.row_floors)
        operands = {name for pair in self._operands.values() for name in pair}
        for name in sorted(operands):
            floor = self._operand_floor(name)
            if floor is not None:
                found[name] = floor
        return found

    def constant_floors(self, names: Sequence[str]) -> dict[str, float]:
        """The floor of each constant of `names` whose every reader is an Add making a
        Softmax input seen here: the least of floor(sum) - max(other operand) over those Adds
        (a causal mask shared by every layer). Raising the constant's values to it is exact
        for each Softmax, as for a cut operand."""
        found: dict[str, float] = {}
        for name in names:
            floor = self._operand_floor(name)
            if floor is not None:
                found[name] = floor
        return found

    def _operand_floor(self, name: str) -> float | None:
        """min over the Adds reading `name` of floor(sum) - max(other operand), when every
        reader of `name` is such an Add seen with both figures and `name` is not a graph
        output; else None."""
        cuts = [self.row_floors[total] - self._highs[pair[1 - pair.index(name)]]
                for total, pair in self._operands.items()
                if name in pair and total in self.row_floors
                and pair[1 - pair.index(name)] in self._highs]
        readers = self._consumers.get(name, [])
        if not cuts or len(cuts) != len(readers) or name in self._outputs:
            return None
        return min(cuts)

    def __call__(self, node: Node, inputs: list[np.ndarray | None], _outputs: list[np.ndarray]
                 ) -> None:  # fmt: skip
        """Take the rows of `node`'s input when it is one of the Softmaxes, the maxima of
        the operands when it is an Add making one's input."""
        if (self._consumers and node.op_type == "Add" and node.outputs[0] in self._sums
                and len(node.inputs) == 2 and node.inputs[0] != node.inputs[1]):
            self._operands[node.outputs[0]] = (node.inputs[0], node.inputs[1])
            for name, value in zip(node.inputs, inputs, strict=True):
                if value is not None and value.size:
                    high = float(np.max(value))
                    self._highs[name] = max(self._highs.get(name, -math.inf), high)
        softmax = self.wanted.get(node.outputs)
        value = inputs[0] if inputs else None
        if softmax is None or value is None or value.size == 0:
            return
        lowest = float(np.min(_rows(softmax, np.asarray(value, np.float64)).max(axis=1)))
        name = node.inputs[0]
        self.row_floors[name] = min(self.row_floors.get(name, math.inf), lowest - EXP_CUTOFF)


def softmax_row_floors(model: Model, feeds: Sequence[Mapping[str, np.ndarray]],
                       softmaxes: Sequence[Node]) -> dict[str, float]:  # fmt: skip
    """Return, per input of `softmaxes` (by value name), the smallest row maximum over all
    `feeds` minus EXP_CUTOFF: the lowest value its quantization range needs. (Runs the model
    once per feed; `calibrate(..., also=RowFloors(softmaxes))` gets the same in its runs.)"""
    floors = RowFloors(softmaxes)
    if floors.wanted:
        with single_threaded_blas():
            for feed in feeds:
                run_model(model, feed, on_node=floors)
    return floors.floors
