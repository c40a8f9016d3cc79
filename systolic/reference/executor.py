"""Run a graph of the frozen IR on numpy arrays with the reference operators.

Nodes run in graph order (the IR is topologically sorted). Each intermediate value is freed
as soon as its last consumer has run, so large models do not hold every activation, and the
bytes held at once are checked against a limit (`max_bytes`) after every node. By default
that limit is the current *memory budget*: `DEFAULT_MAX_LIVE_BYTES`, or what `memory_budget`
sets for the code it wraps (the command line sets the user's `--max-memory` for the whole
command, so every reference run inside it, calibration included, follows it).
"""

import contextlib
import contextvars
import enum
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import Graph, Model, Node, TensorType
from systolic.reference import registry
from systolic.reference.ops.base import GRAPH_SERVICES, Op

__all__ = [
    "BUDGET",
    "DEFAULT_MAX_LIVE_BYTES",
    "NodeHook",
    "current_budget",
    "make_op",
    "memory_budget",
    "release_schedule",
    "run_graph",
    "run_model",
]

DEFAULT_MAX_LIVE_BYTES = 8 << 30
"""The default limit on the bytes a run holds at once (8 GiB, like `--max-memory`)."""


class _Budget(enum.Enum):
    BUDGET = "the current memory budget"


BUDGET = _Budget.BUDGET
"""`max_bytes` default of `run_graph` and `run_model`: the current memory budget."""

_BUDGET: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "systolic_memory_budget", default=DEFAULT_MAX_LIVE_BYTES)


@contextlib.contextmanager
def memory_budget(limit: int | None) -> Iterator[None]:
    """Make `limit` (bytes held at once; None: no limit) the budget of every reference run
    inside the `with` block that does not pass its own `max_bytes`."""
    token = _BUDGET.set(limit)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def current_budget() -> int | None:
    """Return the memory budget in force (`memory_budget`; default DEFAULT_MAX_LIVE_BYTES)."""
    return _BUDGET.get()

NodeHook = Callable[[Node, list[np.ndarray | None], list[np.ndarray]], None]
"""Called after each node runs with the node, its inputs and its outputs."""


def make_op(node: Node, opsets: Mapping[str, int]) -> Op:
    """Instantiate the reference class for `node`: the version it is bound to (`node.version`)
    when set, else the highest one the imported opset allows."""
    domain = registry.canonical_domain(node.domain)
    imported = {registry.canonical_domain(d): v for d, v in opsets.items()}
    opset = node.version or imported.get(domain, 0)
    bound = registry.resolve(domain, node.op_type, opset) if opset else None
    if bound is None or (node.version and bound[0] != node.version):
        raise UnsupportedError(
            f"node {node.label!r}: operator {node.op_id if node.version else node.op_type} "
            f"(opset {opset} of domain {domain or 'ai.onnx'}) is not implemented by the "
            f"reference; it implements versions {registry.versions_of(domain, node.op_type)}"
        )
    version, cls = bound
    op = cls(node.attrs, version, node.label)
    op.num_outputs = len(node.outputs)
    return op


def release_schedule(graph: Graph) -> list[list[str]]:
    """Return, for each node, the values to drop once it has run: the inputs it is the last
    reader of and the outputs nobody reads, never a graph output."""
    wanted = {info.name for info in graph.outputs}
    last_use: dict[str, int] = {}
    for index, node in enumerate(graph.nodes):
        for name in (*node.outputs, *node.inputs):
            if name:
                last_use[name] = index
    schedule: list[list[str]] = [[] for _ in graph.nodes]
    for name, index in last_use.items():
        if name not in wanted:
            schedule[index].append(name)
    return [sorted(names) for names in schedule]


def _check_input(name: str, value: np.ndarray, expected: TensorType | None) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise ModelError(f"input {name!r} must be a numpy array, got {type(value).__name__}")
    if expected is None:
        return value
    if expected.dtype.has_numpy and value.dtype != expected.dtype.numpy:
        raise ModelError(f"input {name!r} has dtype {value.dtype}; the graph expects "
                         f"{expected.dtype.numpy} ({expected.text()})")
    if expected.shape is not None:
        fits = len(value.shape) == len(expected.shape) and all(
            not isinstance(want, int) or want == got
            for want, got in zip(expected.shape, value.shape, strict=True)
        )
        if not fits:
            raise ModelError(f"input {name!r} has shape {list(value.shape)}; the graph "
                             f"expects {expected.text()}")
    return value


class _Held:
    """The bytes of the values a run holds at once, checked against a limit."""

    def __init__(self, values: Mapping[str, np.ndarray], limit: int | None) -> None:
        self.values = values
        self.limit = limit
        self.total = sum(int(v.nbytes) for v in values.values())

    def check(self, after: str) -> None:
        if self.limit is None or self.total <= self.limit:
            return
        largest = sorted(self.values.items(), key=lambda item: -item[1].nbytes)[:3]
        named = ", ".join(f"{name!r} ({value.nbytes} bytes)" for name, value in largest)
        raise ResourceError(
            f"running the graph holds {self.total} bytes of tensors at once {after}, more than "
            f"the limit of {self.limit} (--max-memory); the largest: {named}: raise the limit "
            "or use smaller inputs"
        )


def _check_constants(graph: Graph, inputs: Mapping[str, np.ndarray], limit: int | None) -> None:
    """Refuse a run whose constants and inputs alone exceed `limit`, from their sizes, before
    any constant is decoded (a `LazyTensor` is decoded only when a run reads it)."""
    if limit is None:
        return
    sizes = {t.name: t.nbytes for t in graph.initializers}
    sizes.update((name, int(getattr(value, "nbytes", 0))) for name, value in inputs.items())
    total = sum(sizes.values())
    if total > limit:
        largest = sorted(sizes.items(), key=lambda item: -item[1])[:3]
        named = ", ".join(f"{name!r} ({size} bytes)" for name, size in largest)
        raise ResourceError(
            f"running the graph holds {total} bytes of tensors at once before the first node, "
            f"more than the limit of {limit} (--max-memory); the largest: {named}: raise the "
            "limit or use smaller inputs"
        )


def run_graph(
    graph: Graph,
    inputs: Mapping[str, np.ndarray],
    *,
    opsets: Mapping[str, int],
    on_node: NodeHook | None = None,
    max_bytes: int | None | _Budget = BUDGET,
    outer: Mapping[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Run `graph` and return its outputs by name.

    `outer` (a subgraph: If's branch) holds the values of the enclosing graphs the graph reads
    by name; they are read, never freed, and count against the enclosing run's budget only.

    `inputs` supplies every graph input that has no initializer (an initializer listed among
    the inputs is a default the caller may override). `opsets` maps domains ("" for ONNX) to
    imported versions, used for nodes not yet bound to a version. Raises ModelError for a
    missing, unknown, mistyped or misshapen input and for a value read before it is made,
    UnsupportedError for an operator or output the reference does not implement, and
    ResourceError when the values held at once (constants, inputs and the live intermediate
    values) exceed `max_bytes` (None: no limit; default: `current_budget()`), naming the
    largest.
    """
    limit = current_budget() if max_bytes is BUDGET else max_bytes
    _check_constants(graph, inputs, limit)
    values: dict[str, np.ndarray] = {t.name: t.data for t in graph.initializers}
    declared = {info.name: info.type for info in graph.inputs}
    for name, value in inputs.items():
        if name not in declared:
            known = ", ".join(repr(n) for n in declared) or "none"
            raise ModelError(f"{name!r} is not an input of graph {graph.name!r} (inputs: "
                             f"{known})")
        values[name] = _check_input(name, value, declared[name])
    for name in declared:
        if name not in values:
            raise ModelError(f"graph input {name!r} is missing: pass it to run the graph")

    ops = [make_op(node, opsets) for node in graph.nodes]
    releases = release_schedule(graph)
    held = _Held(values, limit)
    held.check("before the first node")
    scope = dict(outer or {})

    for index, (node, op) in enumerate(zip(graph.nodes, ops, strict=True)):
        args: list[np.ndarray | None] = []
        for name in node.inputs:
            if not name:
                args.append(None)
            elif name in values:
                args.append(values[name])
            elif name in scope:
                args.append(scope[name])
            else:
                raise ModelError(f"node {node.label!r} reads {name!r}, which no graph input, "
                                 "initializer or earlier node provides")
        results = op.run(args)
        for position, name in enumerate(node.outputs):
            if not name:
                continue
            if position >= len(results):
                raise UnsupportedError(
                    f"node {node.label!r} ({node.op_type}): output {position} ({name!r}) is "
                    "not computed by the reference; remove that output from the model"
                )
            if name in values:
                held.total -= int(values[name].nbytes)
            values[name] = results[position]
            held.total += int(values[name].nbytes)
        held.check(f"after node {node.label!r}")
        if on_node is not None:
            on_node(node, args, list(results))
        for name in releases[index]:
            if name in values:
                held.total -= int(values.pop(name).nbytes)

    values = {**scope, **values}
    missing = [info.name for info in graph.outputs if info.name not in values]
    if missing:
        raise ModelError(f"graph outputs {missing} are produced by no node or input")
    return {info.name: values[info.name] for info in graph.outputs}


def run_model(
    model: Model,
    inputs: Mapping[str, np.ndarray],
    *,
    on_node: NodeHook | None = None,
    max_bytes: int | None | _Budget = BUDGET,
) -> dict[str, np.ndarray]:
    """Run `model`'s main graph; see `run_graph`."""
    opsets = dict(model.opsets)
    return run_graph(model.graph, inputs, opsets=opsets, on_node=on_node, max_bytes=max_bytes)



GRAPH_SERVICES.make_op = make_op
GRAPH_SERVICES.run_graph = run_graph
