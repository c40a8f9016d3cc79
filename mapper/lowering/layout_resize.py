"""Which Resize (and deprecated Upsample) nodes the layout lowering can run: the nearest ones.

A nearest Resize selects one input element per output element, so its addresses follow from
the reference operator like any layout op's (`layout.output_addresses`); the lowering runs it
when they form a strided view (a downsampling by an integer step) or repeat each element by
integer factors (`layout_repeat`). Which coordinate_transformation_mode and nearest_mode give
such a repetition is read off the addresses, not listed: asymmetric with floor or
round_prefer_floor, half_pixel and pytorch_half_pixel with either round_prefer mode do for an
integer factor; asymmetric with ceil or round_prefer_ceil and half_pixel with floor do not;
align_corners does for some sizes (4 -> 8) and not for others (4 -> 12).

A linear (bilinear) Resize is a weighted sum, not a selection: the passes make it QMatMuls
(`mapper/passes/linear_resize.py`); one that reaches the lowering stays on the host
(`resize_reason`).
"""

import math

from systolic.ir import Graph, Node
from systolic.mapper.passes.graph_tools import attr_str

__all__ = ["LINEAR_RESIZE", "RESAMPLING", "enlarging_resample", "resize_reason"]

RESAMPLING = frozenset({"Resize", "Upsample"})
"""The resampling operators: layout ops when nearest (Upsample: its coordinates truncated)."""

LINEAR_RESIZE = (
    "a linear Resize interpolates (weighted sums, not a selection of elements); the passes make "
    "it QMatMuls by constant interpolation matrices when a DequantizeLinear feeds it and one "
    "QuantizeLinear reads it (or in a float model, before quantization); this one did not "
    "qualify (an integer Resize of a QOperator export truncates as onnxruntime does, which a "
    "QMatMul's rounding would not reproduce; or a float result read by other nodes, or "
    "computed scales), so it runs on the host"
)
"""Why a linear Resize stays on the host."""


def resize_reason(node: Node) -> str | None:
    """Return why Resize or Upsample `node` cannot be a layout op (None for a nearest one
    whose elements all come from its input)."""
    mode = attr_str(node, "mode", "nearest")
    if mode != "nearest":
        interpolating = mode in ("linear", "bilinear")  # Upsample-1 says bilinear
        return LINEAR_RESIZE if interpolating else f"a {mode} {node.op_type} interpolates"
    if attr_str(node, "coordinate_transformation_mode", "") == "tf_crop_and_resize":
        return ("a tf_crop_and_resize Resize writes extrapolation_value outside its box, "
                "which is no input element")
    return None


def enlarging_resample(node: Node, graph: Graph) -> bool:
    """True for a nearest Resize/Upsample whose output has more elements than its input: it
    is never an alias of its input (a copy on the accelerator, or a host layer), so it may
    write its output straight into its slice of a Concat's output."""
    if node.domain != "" or node.op_type not in RESAMPLING or resize_reason(node) is not None:
        return False
    before, after = graph.type_of(node.inputs[0]), graph.type_of(node.outputs[0])
    if before is None or after is None or before.shape is None or after.shape is None:
        return False
    if not (before.is_static and after.is_static):
        return False
    return math.prod(after.shape) > math.prod(before.shape)  # type: ignore[arg-type]
