"""Inline model-local functions (FunctionProto, IR version >= 8).

A node whose (domain, op_type, overload) names a function of the model is replaced by the
function's body: formal inputs and outputs become the caller's values, every other value and
node of the body gets a fresh name, attribute references (`ref_attr_name`) take the caller's
attribute (or the function's default, or are dropped), and the body's nodes bind with the
function's own opset_import. Functions may call other local functions, to any depth, but not
recursively; the size of the inlined graph is bounded (MAX_NODES).
"""

import dataclasses
from collections.abc import Mapping, Sequence

from systolic.errors import ModelError, ResourceError
from systolic.ir import Attrs, AttrValue, Node
from systolic.mapper.binding import bind_version, check_opsets
from systolic.proto import FunctionProto
from systolic.proto.onnx_graph import ReadContext, convert_attribute, convert_node

__all__ = [
    "MAX_NODES",
    "FunctionKey",
    "LocalFunction",
    "check_calls",
    "convert_function",
    "inline_calls",
]

FunctionKey = tuple[str, str, str]
"""(canonical domain, name, overload) of a model-local function."""


@dataclasses.dataclass(frozen=True)
class LocalFunction:
    """A model-local function: signature, attribute defaults, body and operator imports."""

    domain: str
    name: str
    overload: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attribute_names: frozenset[str]
    defaults: Attrs
    body: tuple[tuple[Node, Mapping[str, str], str], ...]
    """Each body node with its attribute references and the overload it calls."""
    opsets: Mapping[str, int]

    @property
    def key(self) -> FunctionKey:
        return (self.domain, self.name, self.overload)

    @property
    def label(self) -> str:
        return f"{self.domain}.{self.name}" + (f":{self.overload}" if self.overload else "")


def _canonical(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


def convert_function(
    proto: FunctionProto,
    ctx: ReadContext,
    model_opsets: Mapping[str, int],
    local_domains: Sequence[str],
) -> LocalFunction:
    """Return a FunctionProto as a LocalFunction; its opsets default to the model's."""
    where = f"function {proto.domain}.{proto.name}"
    if not proto.name:
        raise ModelError("a model-local function has no name: fix the model")
    own = check_opsets(
        ((o.domain, o.version) for o in proto.opset_import),
        local_domains=local_domains,
        where=where,
    )
    defaults: dict[str, AttrValue] = {}
    for attribute in proto.attribute_proto:
        defaults[attribute.name] = convert_attribute(
            attribute, f"default of attribute {attribute.name!r} of {where}", ctx
        )
    names = frozenset([*proto.attribute, *defaults])
    body = []
    for index, node_proto in enumerate(proto.node):
        node, refs = convert_node(node_proto, index, ctx)
        for ref in refs.values():
            if ref not in names:
                raise ModelError(
                    f"node {node.label!r} in {where} refers to attribute {ref!r}, which the "
                    "function does not declare"
                )
        body.append((node, refs, node_proto.overload))
    return LocalFunction(
        domain=_canonical(proto.domain),
        name=proto.name,
        overload=proto.overload,
        inputs=tuple(proto.input),
        outputs=tuple(proto.output),
        attribute_names=names,
        defaults=Attrs(defaults),
        body=tuple(body),
        opsets={**model_opsets, **own},
    )


MAX_NODES = 1_000_000
"""The most nodes a graph may have, as stored and once its functions are inlined (functions
that call each other two at a time grow exponentially with depth, so the size is computed
before anything is expanded). Later stages are linear in the node count, some worse."""


def _key(node: Node, overload: str) -> FunctionKey:
    return (_canonical(node.domain), node.op_type, overload)


def check_calls(
    nodes: Sequence[Node],
    overloads: Sequence[str],
    functions: Mapping[FunctionKey, LocalFunction],
) -> int:
    """Return how many nodes the graph has once every call is inlined. Raises ModelError when
    a function the graph calls calls itself (directly or through others), ResourceError when
    the inlined graph would exceed MAX_NODES. Iterative: any depth of nesting is fine."""
    size: dict[FunctionKey, int] = {}
    called = (_key(n, o) for n, o in zip(nodes, overloads, strict=True))
    for root in dict.fromkeys(k for k in called if k in functions):
        if root in size:
            continue
        path: list[FunctionKey] = [root]
        pending: list[list[FunctionKey]] = [_callees(functions[root], functions)]
        while path:
            if pending[-1]:
                callee = pending[-1].pop()
                if callee in path:
                    cycle = " -> ".join(functions[k].label for k in path[path.index(callee):])
                    raise ModelError(
                        f"function {functions[callee].label} calls itself (through {cycle} -> "
                        f"{functions[callee].label}): recursive functions cannot be inlined"
                    )
                if callee not in size:
                    path.append(callee)
                    pending.append(_callees(functions[callee], functions))
                continue
            done = path.pop()
            pending.pop()
            size[done] = sum(size.get(_key(n, o), 1) for n, _, o in functions[done].body)
    total = sum(size.get(_key(n, o), 1) for n, o in zip(nodes, overloads, strict=True))
    if total > MAX_NODES:
        raise ResourceError(
            f"inlining the model's local functions would make {total} nodes, more than the "
            f"{MAX_NODES} this tool handles: the functions call each other too often"
        )
    return total


def _callees(
    function: LocalFunction, functions: Mapping[FunctionKey, LocalFunction]
) -> list[FunctionKey]:
    return [_key(n, o) for n, _, o in function.body if _key(n, o) in functions]


@dataclasses.dataclass
class _Frame:
    """One function body being inlined: the call, its renaming and the next body node."""

    function: LocalFunction
    call: Node
    prefix: str
    rename: dict[str, str]
    index: int = 0


class _Inliner:
    def __init__(self, functions: Mapping[FunctionKey, LocalFunction], taken: set[str]) -> None:
        self.functions = functions
        self.prefixes: set[str] = set()
        for name in taken:
            self._take(name)
        self.counter = 0

    def _take(self, name: str) -> None:
        """Remember every prefix of `name` that ends in "__" (what a fresh prefix must avoid)."""
        end = name.find("__")
        while end >= 0:
            self.prefixes.add(name[: end + 2])
            end = name.find("__", end + 1)

    def fresh_prefix(self, function: LocalFunction) -> str:
        while True:
            self.counter += 1
            prefix = f"{function.name}_{self.counter}__"
            if prefix not in self.prefixes:
                self.prefixes.add(prefix)
                return prefix

    def expand(self, node: Node, overload: str, out: list[Node]) -> None:
        """Append `node` itself to `out`, or its inlined body when it calls a local function
        (calls inside the body are inlined too, with an explicit stack, not recursion)."""
        function = self.functions.get(_key(node, overload))
        if function is None:
            out.append(node)
            return
        frames = [self._frame(node, function)]
        while frames:
            frame = frames[-1]
            if frame.index == len(frame.function.body):
                frames.pop()
                continue
            body_node, refs, inner_overload = frame.function.body[frame.index]
            frame.index += 1
            renamed = self._renamed(frame, body_node, refs)
            callee = self.functions.get(_key(renamed, inner_overload))
            if callee is None:
                out.append(bind_version(renamed, frame.function.opsets)[0])
            else:
                frames.append(self._frame(renamed, callee))

    def _frame(self, call: Node, function: LocalFunction) -> _Frame:
        if len(call.inputs) > len(function.inputs) or len(call.outputs) > len(function.outputs):
            raise ModelError(
                f"node {call.label!r} calls {function.label} with {len(call.inputs)} inputs and "
                f"{len(call.outputs)} outputs; the function takes {len(function.inputs)} and "
                f"gives {len(function.outputs)}"
            )
        unknown = sorted(set(call.attrs) - function.attribute_names)
        if unknown:
            raise ModelError(
                f"node {call.label!r} passes attribute {unknown[0]!r}, which function "
                f"{function.label} does not declare"
            )
        prefix = self.fresh_prefix(function)
        rename: dict[str, str] = {"": ""}
        for index, formal in enumerate(function.inputs):
            rename[formal] = call.inputs[index] if index < len(call.inputs) else ""
        for index, formal in enumerate(function.outputs):
            actual = call.outputs[index] if index < len(call.outputs) else ""
            rename[formal] = actual or prefix + formal
        return _Frame(function, call, prefix, rename)

    def _renamed(self, frame: _Frame, body_node: Node, refs: Mapping[str, str]) -> Node:
        """Return a body node with the caller's attributes and values and fresh names."""
        function, rename = frame.function, frame.rename
        attrs = dict(body_node.attrs)
        for name, ref in refs.items():
            if ref in frame.call.attrs:
                attrs[name] = frame.call.attrs[ref]
            elif ref in function.defaults:
                attrs[name] = function.defaults[ref]
        outputs = []
        for name in body_node.outputs:
            if name and name not in rename:
                rename[name] = frame.prefix + name
            outputs.append(rename[name] if name else "")
        inputs = []
        for name in body_node.inputs:
            if name not in rename:
                raise ModelError(
                    f"node {body_node.label!r} in function {function.label} reads {name!r}, "
                    "which is neither a function input nor computed earlier in its body"
                )
            inputs.append(rename[name])
        for name in outputs:
            self._take(name)
        return dataclasses.replace(
            body_node,
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            name=frame.prefix + (body_node.name or body_node.op_type),
            attrs=Attrs(attrs),
        )


def inline_calls(
    nodes: Sequence[Node],
    overloads: Sequence[str],
    functions: Mapping[FunctionKey, LocalFunction],
    taken: set[str],
) -> tuple[Node, ...]:
    """Return the node list with every call to a local function replaced by its body.

    `taken` holds every value and node name already in the graph, so fresh names are new.
    Recursion and an inlined graph over MAX_NODES are refused first (`check_calls`).
    """
    if not functions:
        return tuple(nodes)
    check_calls(nodes, overloads, functions)
    inliner = _Inliner(functions, set(taken))
    result: list[Node] = []
    for node, overload in zip(nodes, overloads, strict=True):
        inliner.expand(node, overload, result)
    return tuple(result)
