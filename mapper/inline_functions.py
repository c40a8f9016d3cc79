"""Inline model-local functions (FunctionProto, IR version >= 8).

A node whose (domain, op_type, overload) names a function of the model is replaced by the
function's body: formal inputs and outputs become the caller's values, every other value and
node of the body gets a fresh name, attribute references (`ref_attr_name`) take the caller's
attribute (or the function's default, or are dropped), and the body's nodes bind with the
function's own opset_import. Functions may call other local functions, but not recursively.
"""

import dataclasses
from collections.abc import Mapping, Sequence

from systolic.errors import ModelError
from systolic.ir import Attrs, AttrValue, Node
from systolic.mapper.binding import bind_version, check_opsets
from systolic.proto import FunctionProto
from systolic.proto.onnx_graph import ReadContext, convert_attribute, convert_node

__all__ = ["FunctionKey", "LocalFunction", "convert_function", "inline_calls"]

FunctionKey = tuple[str, str, str]
"""(canonical domain, name, overload) of a model-local function."""

_MAX_DEPTH = 64


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


class _Inliner:
    def __init__(self, functions: Mapping[FunctionKey, LocalFunction], taken: set[str]) -> None:
        self.functions = functions
        self.taken = taken
        self.counter = 0

    def fresh_prefix(self, function: LocalFunction) -> str:
        while True:
            self.counter += 1
            prefix = f"{function.name}_{self.counter}__"
            if not any(name.startswith(prefix) for name in self.taken):
                return prefix

    def expand(self, node: Node, overload: str, stack: tuple[FunctionKey, ...]) -> list[Node]:
        """Return `node` itself, or its inlined body when it calls a local function."""
        key = (_canonical(node.domain), node.op_type, overload)
        function = self.functions.get(key)
        if function is None:
            return [node]
        if key in stack or len(stack) >= _MAX_DEPTH:
            raise ModelError(
                f"function {function.label} calls itself (through {len(stack)} calls): "
                "recursive functions cannot be inlined"
            )
        return self.inline(node, function, (*stack, key))

    def inline(
        self, call: Node, function: LocalFunction, stack: tuple[FunctionKey, ...]
    ) -> list[Node]:
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
        nodes: list[Node] = []
        for body_node, refs, overload in function.body:
            attrs = dict(body_node.attrs)
            for name, ref in refs.items():
                if ref in call.attrs:
                    attrs[name] = call.attrs[ref]
                elif ref in function.defaults:
                    attrs[name] = function.defaults[ref]
            outputs = []
            for name in body_node.outputs:
                if name and name not in rename:
                    rename[name] = prefix + name
                outputs.append(rename[name] if name else "")
            inputs = []
            for name in body_node.inputs:
                if name not in rename:
                    raise ModelError(
                        f"node {body_node.label!r} in function {function.label} reads {name!r}, "
                        "which is neither a function input nor computed earlier in its body"
                    )
                inputs.append(rename[name])
            self.taken.update(outputs)
            renamed = dataclasses.replace(
                body_node,
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                name=prefix + (body_node.name or body_node.op_type),
                attrs=Attrs(attrs),
            )
            for expanded in self.expand(renamed, overload, stack):
                if expanded is renamed:
                    bound, _ = bind_version(renamed, function.opsets)
                    nodes.append(bound)
                else:
                    nodes.append(expanded)
        return nodes


def inline_calls(
    nodes: Sequence[Node],
    overloads: Sequence[str],
    functions: Mapping[FunctionKey, LocalFunction],
    taken: set[str],
) -> tuple[Node, ...]:
    """Return the node list with every call to a local function replaced by its body.

    `taken` holds every value and node name already in the graph, so fresh names are new.
    """
    if not functions:
        return tuple(nodes)
    inliner = _Inliner(functions, set(taken))
    result: list[Node] = []
    for node, overload in zip(nodes, overloads, strict=True):
        result.extend(inliner.expand(node, overload, ()))
    return tuple(result)
