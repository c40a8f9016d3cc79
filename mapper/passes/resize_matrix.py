"""The interpolation matrices of a linear Resize (or Upsample), one per resized axis.

Linear resampling is separable: along one axis, output element o is a weighted sum of (at most)
two input elements, the same weights for every position of the other axes. So resizing axis a
of X is a product with a constant matrix W_a [size_in, size_out] (column o holds output o's
weights): with a moved to the last position, Y = X @ W_a. The weights are those of the
reference kernel itself (`systolic.reference.kernels.resize`), read off by resizing an identity
matrix, so every coordinate_transformation_mode, scales or sizes, Upsample's rules and border
clamping come out exactly as the reference computes them.

`quantized_weights` makes W_a int8 with a power-of-two scale per column, exact for dyadic
weights (a 2x or 4x half_pixel or asymmetric upsampling: 1/4, 3/4, 1/8, ...) and each column
summing exactly to its scale's reciprocal (a constant image stays constant).
"""

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping

import numpy as np

from systolic.errors import SystolicError
from systolic.ir import Graph, Node
from systolic.mapper.passes.graph_tools import attr_str
from systolic.mapper.passes.quant_params import NotFusable
from systolic.reference.kernels.resize import resize
from systolic.reference.ops.op_resize import Resize, Upsample

__all__ = ["AxisResize", "linear_resize_axes", "quantized_weights"]

LINEAR_MODES = ("linear", "bilinear")  # Upsample-1 says bilinear


@dataclasses.dataclass(frozen=True)
class AxisResize:
    """One resized axis: `weights` [size_in, size_out] in float64, column o output o's."""

    axis: int
    weights: np.ndarray


def linear_resize_axes(node: Node, graph: Graph, constants: Mapping[str, np.ndarray], *,
                       end_transposed: bool = False) -> list[AxisResize]:
    """Return the resized axes of linear Resize/Upsample `node` with their matrices, in the
    order to apply them (the cheapest by `_cost`: an enlarging resize moves its inner axes
    before the larger output exists; with `end_transposed`, among the orders whose last step
    is off the last axis, when there is one, so a Transpose (a layout copy, which writes any
    layout) and not a QMatMul (rows contiguous only) writes the result). Raise NotFusable
    with the reason when `node` is not such a node of static shape and constant
    scales/sizes, when it crops (tf_crop_and_resize), or when it resizes no axis."""
    if node.domain != "" or node.op_type not in ("Resize", "Upsample"):
        raise NotFusable("not a Resize or Upsample")
    if attr_str(node, "mode", "nearest") not in LINEAR_MODES:
        raise NotFusable("not a linear Resize")
    if attr_str(node, "coordinate_transformation_mode", "") == "tf_crop_and_resize":
        raise NotFusable("tf_crop_and_resize writes extrapolation_value outside its box")
    found = graph.type_of(node.inputs[0])
    if found is None or found.shape is None or not found.is_static:
        raise NotFusable("the input's shape is not static")
    shape = tuple(int(d) for d in found.shape)  # type: ignore[arg-type]
    values = []
    for name in node.inputs[1:]:
        if name and name not in constants:
            raise NotFusable("its roi, scales or sizes are computed at run time")
        values.append(constants[name] if name else None)
    kind = Resize if node.op_type == "Resize" else Upsample
    try:
        op = kind(node.attrs, node.version, node.label)
        out_shape, scales, _ = op.plan(shape, values)
    except SystolicError as error:
        raise NotFusable(str(error)) from None
    if getattr(op, "antialias", False) and any(s < 1 for s in scales):
        raise NotFusable("an antialiased shrinking Resize")
    axes = []
    for axis, (size_in, size_out) in enumerate(zip(shape, out_shape, strict=True)):
        rows = resize(np.eye(size_in), (size_out, size_in), [scales[axis], np.float32(1)],
                      mode="linear", coordinate_mode=op.coordinate_mode)
        if size_in != size_out or not np.array_equal(rows, np.eye(size_in)):
            axes.append(AxisResize(axis, np.ascontiguousarray(rows.T)))
    if not axes:
        raise NotFusable("it resizes no axis (its output equals its input)")
    orders = list(itertools.permutations(axes))
    ending = [o for o in orders if o[-1].axis != len(shape) - 1]
    if end_transposed and ending:
        orders = ending
    return list(min(orders, key=lambda order: _cost(order, shape)))


def _cost(order: Iterable[AxisResize], shape: tuple[int, ...]) -> float:
    """The estimated cost of resizing `shape` along `order`: the elements every step off the
    last axis transposes (twice: in and back; a layout COPY moves about one per cycle) plus
    its MACs over 256 (a 16x16 array)."""
    sizes, cost = list(shape), 0.0
    for step in order:
        before = math.prod(sizes)
        sizes[step.axis] = step.weights.shape[1]
        after = math.prod(sizes)
        if step.axis != len(shape) - 1:
            cost += before + after
        cost += before * step.weights.shape[1] / 256
    return cost


def quantized_weights(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return int8 `weights` [K, N] (non-negative, each column summing to 1) and their
    float32 scale per column, a power of two 2^-k with k the largest keeping the column's
    peak within 127. Each column's integers sum to round(2^k * its sum) (the rounding
    remainder goes to its largest weight), so a constant input stays constant."""
    peaks = weights.max(axis=0)
    if np.any(peaks <= 0) or np.any(weights < 0):
        raise ValueError("interpolation weights must be non-negative, each column non-zero")
    shifts = np.array([math.floor(math.log2(127.0 / p)) for p in peaks], np.int64)
    factors = np.ldexp(1.0, shifts)
    q = np.rint(weights * factors)
    remainder = np.rint(weights.sum(axis=0) * factors) - q.sum(axis=0)
    top = weights.argmax(axis=0)
    q[top, np.arange(q.shape[1])] += remainder
    q = np.clip(q, -127, 127).astype(np.int8)
    return q, np.ldexp(np.float32(1), -shifts).astype(np.float32)
