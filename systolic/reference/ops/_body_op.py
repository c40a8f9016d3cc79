"""The shared part of Loop and Scan: a `body` graph, the outer values it reads, its types
inferred and its runs."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import ModelError, UnsupportedError
from systolic.ir import Attrs, Graph, Node
from systolic.reference.ops.base import GRAPH_SERVICES, Op, TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning, infer_graph

__all__ = ["BodyOp"]


class BodyOp(Op):
    """An operator running its graph attribute `body` (`self.body`), which reads the outer
    values `self.captures` (`Node.captures`) by name after the node's own inputs."""

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        body = self.required_attr("body")
        if not isinstance(body, Graph):
            raise self.error("attribute 'body' must be a graph")
        self.body = body
        self.captures = Node(self.op_type, (), (), attrs=attrs).captures

    def infer_body(self, scope: dict[str, TensorInfo]) -> list[TensorInfo]:
        """Return the body's output types with its inputs and captures typed by `scope`;
        raise ShapeKnownWhenRunning when they depend on values known only when running."""
        try:
            results = infer_graph(self.body, scope)
        except (ModelError, UnsupportedError) as error:  # (a Slice by the iteration number: torch's x[i:i+1])
            raise ShapeKnownWhenRunning(self.error(
                f"the body's types depend on values known only when running ({error})"
            ).args[0]) from error
        if results is None:
            raise ShapeKnownWhenRunning(self.error("the body's output types cannot be "
                                                   "inferred").args[0])
        return results

    def check_carried(self, carried: Sequence[TensorInfo], given: Sequence[TensorInfo],
                      what: str) -> None:
        """Raise ShapeKnownWhenRunning when a `carried` value's type is not the one the body
        gives back for it (`given`, in the same order): `what` names one ("state")."""
        for index, (start, end) in enumerate(zip(carried, given, strict=False)):
            if start.dtype != end.dtype or start.shape != end.shape:
                raise ShapeKnownWhenRunning(self.error(
                    f"{what} {index} enters as {start.dtype.short}{list(start.shape)} but the "
                    f"body gives {end.dtype.short}{list(end.shape)}").args[0])

    def run_body(self, feeds: dict[str, np.ndarray],
                 scope: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Run the body once on `feeds` (its inputs by name), the captures in `scope`; return
        its outputs in order."""
        results = GRAPH_SERVICES.runner()(self.body, feeds, opsets={}, outer=scope)
        return [np.asarray(results[info.name]) for info in self.body.outputs]
