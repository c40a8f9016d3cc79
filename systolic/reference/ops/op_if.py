"""If: run one of two subgraphs, chosen by a boolean scalar.

The node's inputs are `cond` followed by its captures (`Node.captures`: the outer values the
branches read by name, listed by the importer so graph tools see them); capture i's value is
input 1 + i, bound to the branches' own name for it. `then_branch` runs when cond is true,
`else_branch` otherwise; both take no inputs and have as many outputs as the node.

Inference: with cond's value known, the chosen branch's output types; unknown, the types both
branches agree on (a branch whose nodes reject the shapes cannot be the one that runs: then
the other's types), a ModelError when their element types or ranks differ, and
`ShapeKnownWhenRunning` when only sizes do (shapes here are static: the output keeps its
declared type). Running executes the chosen branch with the reference executor, on the host.
"""

from collections.abc import Sequence

import numpy as np

from systolic.errors import ModelError
from systolic.ir import Attrs, DataType, Graph, Node
from systolic.reference.ops.base import GRAPH_SERVICES, Op, TensorInfo

__all__ = ["OPS", "If", "ShapeKnownWhenRunning", "infer_graph"]


class ShapeKnownWhenRunning(ModelError):
    """The branches agree on an output's element type and rank but not its sizes, and cond is
    known only when running: the output's shape is too (shape inference leaves it, and what
    follows, to the declared types)."""


def infer_graph(graph: Graph, scope: dict[str, TensorInfo],
                known: dict[str, TensorInfo] | None = None) -> list[TensorInfo] | None:
    """Infer `graph`'s output types from the outer values `scope` (its nodes bound); None
    when some output depends on a value of unknown shape. `known`, when given, receives the
    scope and every value inferred (the MAC count of a subgraph reads its nodes' types)."""
    make_op = GRAPH_SERVICES.bind()  # the executor's (it imports the operators)
    known = {} if known is None else known
    known.update(scope)
    for tensor in graph.initializers:
        known[tensor.name] = TensorInfo(tensor.dtype, tensor.shape, tensor.data)
    for node in graph.nodes:
        if any(name and name not in known for name in node.inputs):
            continue  # an input of unknown shape: so are the outputs
        args = [known[name] if name else None for name in node.inputs]
        try:
            results = make_op(node, {}).infer(args)
        except ShapeKnownWhenRunning:
            continue
        for name, info in zip(node.outputs, results, strict=False):
            if name:
                known[name] = info
    if any(info.name not in known for info in graph.outputs):
        return None
    return [known[info.name] for info in graph.outputs]


class If(Op):
    """If-1, -11, -13, -16, -19, -21, -23 (later versions widen the types of the outputs,
    which the reference holds as tensors only)."""

    op_type = "If"
    since_versions = (1, 11, 13, 16, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.branches: dict[bool, Graph] = {}
        for flag, name in ((True, "then_branch"), (False, "else_branch")):
            branch = self.required_attr(name)
            if not isinstance(branch, Graph):
                raise self.error(f"attribute {name!r} must be a graph")
            self.branches[flag] = branch
        then, other = self.branches[True], self.branches[False]
        if len(then.outputs) != len(other.outputs):
            raise self.error(f"then_branch has {len(then.outputs)} outputs but else_branch "
                             f"{len(other.outputs)}: both must give the node's outputs")
        self.captures = Node(self.op_type, (), (), attrs=attrs).captures

    def _scope(self, values: Sequence[object]) -> dict[str, object]:
        """Bind each capture's branch name to the node input standing for it."""
        if len(values) != 1 + len(self.captures):
            raise self.error(f"has {len(values)} inputs; expected cond and "
                             f"{len(self.captures)} outer values the branches read")
        return dict(zip(self.captures, values[1:], strict=True))

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        cond = inputs[0]
        assert cond is not None
        if cond.size != 1 or cond.dtype != DataType.BOOL:
            raise self.error(f"cond must be one bool, got {cond.dtype.short}{list(cond.shape)}")
        scope = {name: info for name, info in self._scope(inputs).items()
                 if isinstance(info, TensorInfo)}  # fmt: skip
        if cond.value is not None:
            chosen = bool(cond.value.reshape(-1)[0])
            results = infer_graph(self.branches[chosen], scope)
            if results is None:
                raise self.error(f"the {'then' if chosen else 'else'}_branch's output types "
                                 "cannot be inferred")
            return results
        then, other = self._infer_branch(True, scope), self._infer_branch(False, scope)
        if isinstance(then, ModelError) and isinstance(other, ModelError):
            raise then
        if isinstance(then, ModelError) or isinstance(other, ModelError):
            # A branch that cannot take these shapes is not the one that runs (silero-vad's
            # 8 kHz branch given a 16 kHz frame): the output types are the other's.
            runnable = other if isinstance(then, ModelError) else then
            if runnable is None or isinstance(runnable, ModelError):
                raise self.error("a branch's output types cannot be inferred")
            return runnable
        if then is None or other is None:
            raise self.error("a branch's output types cannot be inferred")
        for index, (a, b) in enumerate(zip(then, other, strict=True)):
            if a.dtype == b.dtype and a.shape == b.shape:
                continue
            message = (f"output {index} is {a.dtype.short}{list(a.shape)} in then_branch but "
                       f"{b.dtype.short}{list(b.shape)} in else_branch, and cond is known only "
                       "when running")
            if a.dtype == b.dtype and len(a.shape) == len(b.shape):
                raise ShapeKnownWhenRunning(self.error(message).args[0])
            raise self.error(f"{message}: the branches must agree on type and rank")
        return [TensorInfo(a.dtype, a.shape) for a in then]

    def _infer_branch(self, flag: bool, scope: dict[str, TensorInfo]
                      ) -> list[TensorInfo] | None | ModelError:
        """Return the branch's output types (None: unknown), or the error its nodes raise."""
        try:
            return infer_graph(self.branches[flag], scope)
        except ModelError as error:
            return error

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        run_graph = GRAPH_SERVICES.runner()
        cond = inputs[0]
        assert cond is not None
        branch = self.branches[bool(np.asarray(cond).reshape(-1)[0])]
        scope = {k: v for k, v in self._scope(inputs).items() if isinstance(v, np.ndarray)}
        results = run_graph(branch, {}, opsets={}, outer=scope)
        return [results[info.name] for info in branch.outputs]


OPS = (If,)
