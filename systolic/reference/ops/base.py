"""The contract of one version of one operator in the numpy reference.

An `Op` subclass implements one ONNX operator version (or a run of since_versions with the
same semantics, listed in `since_versions`). The importer binds each node to a class through
`registry.resolve` and makes an instance from the node's attributes; the instance then
- `infer`s output types and shapes from input types, shapes and any constant values, and
- `run`s on numpy arrays, with integer semantics (accumulator width, rounding, saturation)
  written out so they match the hardware bit for bit.
"""

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from systolic.errors import ModelError
from systolic.ir import Attrs, AttrValue, DataType

__all__ = ["GRAPH_SERVICES", "GraphServices", "Op", "TensorInfo"]


@dataclasses.dataclass(frozen=True, eq=False)
class TensorInfo:
    """What is known of a value while inferring shapes: its type, static shape, and its
    contents when they are known before running (constants and values folded from them)."""

    dtype: DataType
    shape: tuple[int, ...]
    value: np.ndarray | None = None

    @property
    def size(self) -> int:
        """Number of elements (a Python int: exact however large the declared shape)."""
        return math.prod(self.shape)


class Op:
    """One version of one ONNX operator.

    Class attributes
    ----------------
    domain:
        "" for the default ONNX domain, else for example "com.microsoft".
    op_type:
        The operator name, for example "Conv".
    since_versions:
        The operator versions (from the ONNX operator documentation) this class implements,
        ascending. A version that only widened the allowed types shares the class of the
        version before it.

    Instances are made by `Op(attrs, version, node_label)`; the constructor checks and parses
    attributes and raises `ModelError` naming the node for a missing or invalid one.
    """

    domain: ClassVar[str] = ""
    op_type: ClassVar[str]
    since_versions: ClassVar[tuple[int, ...]]

    num_outputs: int | None = None
    """How many outputs the node names, for operators whose outputs depend on it (Split);
    whoever makes the instance from a node sets it (`len(node.outputs)`)."""

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        self.attrs = attrs
        self.version = version
        self.node_label = node_label

    # -- attributes ----------------------------------------------------------------------------

    def attr(self, name: str, default: AttrValue | None = None) -> AttrValue | None:
        """Return attribute `name`, or `default` when the node does not set it."""
        return self.attrs.get(name, default)

    def required_attr(self, name: str) -> AttrValue:
        """Return attribute `name`; raise ModelError naming the node when it is missing."""
        if name not in self.attrs:
            raise self.error(f"required attribute {name!r} is missing")
        return self.attrs[name]

    def error(self, message: str) -> ModelError:
        """Return a ModelError whose message names this node and operator."""
        op = f"{self.domain or 'ai.onnx'}.{self.op_type}:{self.version}"
        return ModelError(f"node {self.node_label!r} ({op}): {message}")

    # -- the contract --------------------------------------------------------------------------

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        """Return the type and shape of every output (None stands for an omitted optional
        input). Raise ModelError when the inputs do not fit the operator."""
        raise NotImplementedError

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        """Compute the outputs from numpy inputs (None for an omitted optional input)."""
        raise NotImplementedError


@dataclasses.dataclass
class GraphServices:
    """How an operator with subgraphs (If) binds and runs its graphs: `make_op(node, opsets)`
    and `run_graph(graph, inputs, opsets=..., outer=...)` of `systolic.reference.executor`,
    which installs them when it is imported. The executor imports the operators, so they
    cannot import it; every operator instance is made by the executor, so they are installed
    before any operator runs."""

    make_op: Callable[..., Op] | None = None
    run_graph: Callable[..., dict[str, Any]] | None = None

    def bind(self) -> Callable[..., Op]:
        """Return `make_op`."""
        if self.make_op is None:
            raise RuntimeError("systolic.reference.executor has not installed make_op")
        return self.make_op

    def runner(self) -> Callable[..., dict[str, Any]]:
        """Return `run_graph`."""
        if self.run_graph is None:
            raise RuntimeError("systolic.reference.executor has not installed run_graph")
        return self.run_graph


GRAPH_SERVICES = GraphServices()
"""The executor's services for operators with subgraphs (see `GraphServices`)."""
