"""What lowering one layer sees: the configuration, the graph, placements and constants.

`LayerContext` is the seam between the model compiler and the per-operator lowerings
(`lower_pool`, `lower_add`, the copies of layout operators, and the array lowerings
`lower_qconv` / `lower_qmatmul`): a lowering reads its operands' placements and constants from
the context, may add constant bytes (weights, params rows) to the memory image, and returns its
instructions (no HALT). A layer may use every on-chip memory: layers run in program order and
the hardware's hazard table orders a layer's first accesses after the previous layer's last.
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ModelError
from systolic.ir import DataType, Graph
from systolic.isa.program import TensorPlacement
from systolic.mapper.lowering.memory_plan import MemoryPlan

__all__ = ["LayerContext"]


@dataclasses.dataclass
class LayerContext:
    """The compiler's state offered to a lowering (see the module docstring).

    `overrides` replaces constants for this layer: when a Flatten of a channel-last tensor is
    re-interpreted instead of moved, the QMatMul reading it gets B with its rows permuted to
    the memory order (NHWC) of A.
    """

    config: ArrayConfig
    graph: Graph
    plan: MemoryPlan
    overrides: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def placement(self, name: str) -> TensorPlacement:
        """Return where value `name` lives in external memory."""
        try:
            return self.plan.placements[name]
        except KeyError:
            raise ModelError(f"value {name!r} has no place in external memory") from None

    def dtype(self, name: str) -> DataType:
        """Return the element type of value `name`."""
        tensor_type = self.graph.type_of(name)
        if tensor_type is None:
            raise ModelError(f"value {name!r} has no known type")
        return tensor_type.dtype

    def shape(self, name: str) -> tuple[int, ...]:
        """Return the static shape of value `name`."""
        tensor_type = self.graph.type_of(name)
        if tensor_type is None or not tensor_type.is_static or tensor_type.shape is None:
            raise ModelError(f"value {name!r} has no static shape; give the inputs fixed shapes")
        return tuple(int(d) for d in tensor_type.shape)  # type: ignore[arg-type]

    def constant(self, name: str) -> np.ndarray:
        """Return the values of constant `name` (with this layer's overrides)."""
        if name in self.overrides:
            return self.overrides[name]
        tensor = self.graph.initializer(name)
        if tensor is None:
            raise ModelError(f"value {name!r} must be a constant (an initializer)")
        return tensor.data

    def add_constant(self, data: bytes) -> int:
        """Put bytes into the memory image (weights, params rows); return their address."""
        return self.plan.add_segment(data)
