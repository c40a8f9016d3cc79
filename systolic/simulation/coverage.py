"""How much of a run ran where, from its per-layer rows (`layer_rows`): the honest account
beside the cycle totals, which count the accelerator only.

- MACs on the array and on the host (host layers cost 0 accelerator cycles);
- elementwise work, as the elements produced by layers that are neither array nor layout
  layers, on the vector unit and on the host;
- how many layers run on the host, of all layers;
- the element-wise layers (activations, normalizations, softmax, element-wise arithmetic:
  every layer without MACs that is neither a layout op nor a number-format conversion) on
  the accelerator (vector unit, activation tables) and on the host, the share issue 13's
  target counts; `layer_kind` says which kind a row is;
- the bytes moved to and from the host around host layers: the placed tensors each host
  step reads and writes.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

from systolic.mapper.passes.report import DYNAMIC_SCALING
from systolic.simulation.report import LayerResult

__all__ = ["CONVERSION_OPS", "LAYOUT_OPS", "Coverage", "coverage", "layer_kind"]

LAYOUT_OPS = frozenset({
    "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Concat",
    "QLinearConcat", "Gather", "GatherND", "GatherElements", "Slice", "Split", "Resize",
    "Upsample", "Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth", "Shape", "Size",
    "ConstantOfShape", "Range", "NonZero", "Trilu", "TopK", "Compress", "ReverseSequence",
    "ScatterElements", "ScatterND", "Scatter", "CenterCropPad", "OneHot", "EyeLike", "Hardmax",
})  # fmt: skip
"""Operators that move or select elements, or compute shapes: layout work, not element-wise
arithmetic (QLinearConcat requantizes, but its work is the concatenation; Trilu, TopK and
Hardmax select elements, OneHot and EyeLike place ones)."""

CONVERSION_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                            "Cast"})
"""Number-format conversions (the graph's float or integer inputs and outputs to and from the
accelerator's 8-bit form). A host layer whose reason starts with `DYNAMIC_SCALING` is one too:
the dequantization of a dynamically quantized product with its run-time scale and zero point
(the activation scale is computed on the host, by design: docs/mapper.md)."""


def layer_kind(row: LayerResult) -> str:
    """Return "array" (a layer with MACs, wherever it runs), "layout", "conversion" (also a
    dynamic product's run-time dequantization) or "elementwise" (everything else: the work of
    the vector unit and the activation tables)."""
    if row.unit == "array" or row.macs:
        return "array"
    if row.note.startswith("layout") or row.op in LAYOUT_OPS:
        return "layout"
    if row.op in CONVERSION_OPS or row.note.startswith(DYNAMIC_SCALING):
        return "conversion"
    return "elementwise"


@dataclasses.dataclass(frozen=True)
class Coverage:
    """The account of one run; see the module docstring."""

    array_macs: int
    host_macs: int
    vector_elements: int
    host_elements: int
    host_layers: int
    layers: int
    host_bytes: int
    accelerator_elementwise_layers: int = 0
    host_elementwise_layers: int = 0

    @property
    def array_mac_share(self) -> float:
        """The fraction of MACs on the array (1 when the model has none)."""
        total = self.array_macs + self.host_macs
        return self.array_macs / total if total else 1.0

    @property
    def elementwise_layer_share(self) -> float:
        """The fraction of element-wise layers on the accelerator (1 when there are none)."""
        total = self.accelerator_elementwise_layers + self.host_elementwise_layers
        return self.accelerator_elementwise_layers / total if total else 1.0

    def to_json(self) -> dict[str, Any]:
        """The JSON report's `coverage` object."""
        return {
            "array_macs": self.array_macs,
            "host_macs": self.host_macs,
            "array_mac_fraction": round(self.array_mac_share, 6),
            "vector_elements": self.vector_elements,
            "host_elements": self.host_elements,
            "host_layers": self.host_layers,
            "layers": self.layers,
            "host_bytes": self.host_bytes,
            "accelerator_elementwise_layers": self.accelerator_elementwise_layers,
            "host_elementwise_layers": self.host_elementwise_layers,
            "elementwise_layer_fraction": round(self.elementwise_layer_share, 6),
        }

    def text(self, *, host_modelled: bool = False) -> str:
        """The one line `systolic simulate` prints (`host_modelled`: the totals include the
        host layers' estimated cycles, `systolic.simulation.host_cost`)."""
        return (
            f"coverage: {100 * self.array_mac_share:.1f}% of MACs on the array; "
            f"{self.accelerator_elementwise_layers} of "
            f"{self.accelerator_elementwise_layers + self.host_elementwise_layers} "
            "element-wise layers on the accelerator; "
            f"elementwise: {_count(self.vector_elements)} elements on the vector unit, "
            f"{_count(self.host_elements)} on the host; "
            f"{self.host_layers} of {self.layers} layers on the host "
            f"({_count(self.host_elements)} elements, {_bytes(self.host_bytes)} to/from the "
            "host); " + ("totals include the host's estimated cycles" if host_modelled
                         else "totals are accelerator cycles only")
        )


def coverage(rows: Sequence[LayerResult]) -> Coverage:
    """Return the account of the run whose per-layer rows are `rows`."""
    host = [row for row in rows if row.unit == "host"]
    elementwise = [row for row in rows if layer_kind(row) == "elementwise"]
    return Coverage(
        array_macs=sum(row.macs for row in rows if row.unit == "array"),
        host_macs=sum(row.macs for row in host),
        vector_elements=sum(row.elements for row in rows if row.unit == "vector"),
        host_elements=sum(row.elements for row in host),
        host_layers=len(host),
        layers=len(rows),
        host_bytes=sum(row.host_bytes for row in host),
        accelerator_elementwise_layers=sum(row.unit != "host" for row in elementwise),
        host_elementwise_layers=sum(row.unit == "host" for row in elementwise),
    )


def _count(value: int) -> str:
    for size, suffix in ((10**9, " G"), (10**6, " M"), (10**3, " k")):
        if value >= size:
            return f"{value / size:.1f}{suffix}"
    return str(value)


def _bytes(value: int) -> str:
    for size, suffix in ((10**9, " GB"), (10**6, " MB"), (10**3, " kB")):
        if value >= size:
            return f"{value / size:.1f}{suffix}"
    return f"{value} B"
