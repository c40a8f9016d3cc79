"""Our cycles for a SCALE-Sim topology (`systolic compare --topology in.csv`).

`topology_graph(layers, seed)` builds an integer graph with one independent layer per
topology row, with seeded random int8 weights, biases and inputs (cycle counts do not depend
on the values):

- a convolution row: systolic.QConv of an int8 (1, Channels, IFMAP H, IFMAP W) input with
  (Num Filter, Channels, Filter H, Filter W) weights, the row's stride, no padding (SCALE-Sim
  sizes include it) and group 1;
- a GEMM row (written by SCALE-Sim's M, N, K form or as a 1×1, stride 1 convolution of an M×1
  input, as `to_topology` writes a model's GEMMs): systolic.QMatMul of an (M, K) input with
  (K, N) weights, so a model's GEMM layer exported and read back compiles as it did.

Each layer reads its own graph input and writes its own graph output, and the layers run in
file order in one accelerator run. `topology_sweep` compiles the graph for every
configuration and reports per-layer and total cycles, utilization and ratio to ideal
(`ConfigResult`) like `sweep` does for a model. Layer names are the rows' names (a repeated
name gets "#2", "#3", ...).
"""

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from systolic.compare.layer_cycles import check_backend
from systolic.compare.points import IN_PROCESS, Engine
from systolic.compare.result import ConfigResult
from systolic.compare.sweep import sweep_graph
from systolic.compare.topology import MAX_LAYER_BYTES, TopologyLayer
from systolic.config import ArrayConfig
from systolic.errors import ResourceError
from systolic.ir import (
    SYSTOLIC_DOMAIN,
    Attrs,
    AttrValue,
    DataType,
    Graph,
    Node,
    Tensor,
    TensorType,
    ValueInfo,
)
from systolic.isa.requant import quantize_multiplier

__all__ = ["TopologyGraph", "is_gemm", "topology_graph", "topology_sweep"]



@dataclasses.dataclass(frozen=True)
class TopologyGraph:
    """The integer graph of a topology and the seeded random inputs its layers read."""

    graph: Graph
    inputs: Mapping[str, np.ndarray]


def is_gemm(layer: TopologyLayer) -> bool:
    """True for a row that is a GEMM: a 1×1, stride 1 convolution of an M×1 input."""
    return (layer.ifmap_w, layer.filter_h, layer.filter_w, layer.stride) == (1, 1, 1, 1)


def _unique_names(layers: Sequence[TopologyLayer]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for layer in layers:
        count = seen.get(layer.name, 0) + 1
        seen[layer.name] = count
        names.append(layer.name if count == 1 else f"{layer.name}#{count}")
    return names


def _requant_attrs(outputs: int, depth: int) -> dict[str, AttrValue]:
    multiplier, shift = quantize_multiplier(1.0 / (depth * 64.0))
    return {
        "multiplier": (multiplier,) * outputs,
        "shift": (shift,) * outputs,
        "y_zero_point": 0,
        "y_type": int(DataType.INT8),
    }


def topology_graph(layers: Sequence[TopologyLayer], seed: int = 0) -> TopologyGraph:
    """Return the integer graph of `layers` and its inputs (module docstring); ResourceError,
    before anything is allocated, when the layers' tensors together exceed the 4 GiB of the
    32-bit external address space (they all live in one accelerator run)."""
    total = sum(layer.tensor_bytes for layer in layers)
    if total > MAX_LAYER_BYTES:
        raise ResourceError(
            f"the topology's {len(layers)} layers take {total:,} bytes of inputs, weights, "
            f"biases and outputs together, more than the 4 GiB of the accelerator's 32-bit "
            f"external address space: compare fewer or smaller layers at a time"
        )
    rng = np.random.default_rng(seed)
    inputs: list[ValueInfo] = []
    outputs: list[ValueInfo] = []
    nodes: list[Node] = []
    constants: list[Tensor] = []
    values: dict[str, np.ndarray] = {}
    for index, (layer, name) in enumerate(zip(layers, _unique_names(layers), strict=True)):
        x, y, w, b = (f"t{index}_{part}" for part in ("x", "y", "w", "b"))
        m, n, k = layer.gemm_shape
        if is_gemm(layer):
            x_shape: tuple[int, ...] = (m, k)
            weights = rng.integers(-127, 128, (k, n), dtype=np.int8)
            attrs: dict[str, AttrValue] = {"a_zero_point": 0}
            op = "QMatMul"
        else:
            x_shape = (1, layer.channels, layer.ifmap_h, layer.ifmap_w)
            weights = rng.integers(
                -127, 128, (n, layer.channels, layer.filter_h, layer.filter_w), dtype=np.int8
            )
            attrs = {
                "strides": (layer.stride, layer.stride),
                "pads": (0, 0, 0, 0),
                "dilations": (1, 1),
                "group": 1,
                "x_zero_point": 0,
            }
            op = "QConv"
        attrs.update(_requant_attrs(n, k))
        values[x] = rng.integers(-128, 128, x_shape, dtype=np.int8)
        constants += [
            Tensor(w, DataType.INT8, weights),
            Tensor(b, DataType.INT32, rng.integers(-1000, 1000, n, dtype=np.int32)),
        ]
        inputs.append(ValueInfo(x, TensorType(DataType.INT8, x_shape)))
        outputs.append(ValueInfo(y, TensorType(DataType.INT8, None)))
        node = Node(op, (x, w, b), (y,), domain=SYSTOLIC_DOMAIN, version=1, name=name,
                    attrs=Attrs(attrs))  # fmt: skip
        nodes.append(node)
    graph = Graph("topology", tuple(inputs), tuple(outputs), tuple(nodes), tuple(constants))
    return TopologyGraph(graph, values)


def topology_sweep(
    layers: Sequence[TopologyLayer],
    configs: Sequence[ArrayConfig],
    *,
    backend: str = "model",
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    engine: Engine = IN_PROCESS,
) -> list[ConfigResult]:
    """Return the results of the topology's layers for every configuration, in order, on
    `engine` (`systolic.compare.points`)."""
    check_backend(backend)
    built = topology_graph(layers, seed)
    return sweep_graph(built.graph, built.inputs, configs, backend=backend, progress=progress,
                       engine=engine)  # fmt: skip
