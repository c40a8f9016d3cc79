"""Bind nodes to operator versions, as the ONNX versioning rules say.

A model imports operator sets as (domain, version) pairs; "" and "ai.onnx" name the same
default domain. A node binds to the highest since_version of its operator not above the
version its model (or function) imports for the node's domain, through
`systolic.reference.registry.resolve`; the node's `version` becomes that since_version.
"""

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence

from systolic.errors import ModelError, UnsupportedError
from systolic.ir import Attrs, AttrValue, Graph, Node
from systolic.reference import registry
from systolic.reference.ops.base import Op
from systolic.reference.signatures import check_arity

__all__ = [
    "bind_graph",
    "bind_graph_marking",
    "bind_version",
    "check_opsets",
    "supported_opsets_text",
    "unsupported_error",
]


def supported_opsets_text() -> str:
    """Return the supported operator sets as "ai.onnx 1-23, com.microsoft 1"."""
    parts = []
    for domain, (low, high) in registry.SUPPORTED_OPSETS.items():
        span = f"{low}" if low == high else f"{low}-{high}"
        parts.append(f"{domain or 'ai.onnx'} {span}")
    return ", ".join(parts)


def check_opsets(
    opsets: Iterable[tuple[str, int]],
    *,
    local_domains: Iterable[str] = (),
    used_domains: Collection[str] | None = None,
    where: str = "model",
) -> dict[str, int]:
    """Return the imported operator sets as {canonical domain: version}.

    Raises ModelError for a domain imported twice, UnsupportedError for a domain the tool does
    not implement (unless the model's own functions provide it) or a version out of range.
    A domain the tool does not implement that no node uses (`used_domains`, as the nodes
    spell them; None: every domain counts as used) is left out of the result instead
    (exporters import ai.onnx.ml by habit).
    """
    local = set(local_domains)
    used = None if used_domains is None else {
        registry.canonical_domain(d) for d in used_domains
    }
    imported: dict[str, int] = {}
    for raw_domain, version in opsets:
        domain = registry.canonical_domain(raw_domain)
        shown = domain or "ai.onnx"
        if domain in imported:
            raise ModelError(f"{where} imports opset domain {shown!r} twice: keep one")
        if domain in registry.SUPPORTED_OPSETS:
            low, high = registry.SUPPORTED_OPSETS[domain]
            if not low <= version <= high:
                raise UnsupportedError(
                    f"{where} imports opset {shown} version {version}, outside the supported versions "
                    f"{low}-{high}: convert the model (onnx.version_converter); supported "
                    f"opsets: {supported_opsets_text()}"
                )
        elif used is not None and domain not in used and domain not in local:
            continue
        elif domain not in local:
            raise UnsupportedError(
                f"{where} imports opset domain {shown!r} (version {version}), which this tool "
                f"does not implement; supported opsets: {supported_opsets_text()}"
            )
        imported[domain] = version
    return imported


def bind_version(node: Node, opsets: Mapping[str, int]) -> tuple[Node, type[Op]]:
    """Return the node with `version` set to the bound since_version, and the Op class,
    after checking the node's inputs and outputs against the operator's signature.

    A node that is already bound (version > 0) resolves at its own version, which yields the
    same operator again."""
    domain = registry.canonical_domain(node.domain)
    shown = domain or "ai.onnx"
    if node.version > 0:
        opset_version = node.version
    elif domain in opsets:
        opset_version = opsets[domain]
    else:
        raise ModelError(
            f"node {node.label!r} uses operator {shown}.{node.op_type} but the model does not "
            f"import operator set {shown!r}: add it to opset_import"
        )
    found = registry.resolve(domain, node.op_type, opset_version)
    if found is None:
        known = registry.versions_of(domain, node.op_type)
        detail = (
            f"the tool implements it only since versions {known}: convert the model to opset "
            f"{known[0]} or newer (onnx.version_converter)"
            if known
            else "neither the accelerator nor the host reference implements it, so it cannot "
            "run even on the host: replace it in the model or export with supported operators "
            "(see `systolic inspect MODEL`)"
        )
        raise UnsupportedError(
            f"node {node.label!r}: operator {shown}.{node.op_type}:{opset_version} is not "
            f"supported: {detail}"
        )
    since, cls = found
    check_arity(domain, node.op_type, since, node.own_inputs, node.outputs, node.label)
    return dataclasses.replace(node, domain=domain, version=since), cls


def bind_graph(graph: Graph, opsets: Mapping[str, int]) -> tuple[Graph, list[Op]]:
    """Bind every node; return the bound graph and one Op instance per node (attributes
    checked by the Op's constructor, which raises ModelError naming the node). Unsupported
    operators raise one UnsupportedError naming them all (`unsupported_error`)."""
    bound, ops, missing = bind_graph_marking(graph, opsets)
    if missing:
        raise unsupported_error(missing)
    return bound, [op for op in ops if op is not None]


def bind_graph_marking(
    graph: Graph, opsets: Mapping[str, int]
) -> tuple[Graph, list[Op | None], list[tuple[Node, UnsupportedError]]]:
    """Bind every node the tool supports; return the graph (unsupported nodes left unbound,
    version 0), the Op instances (None for those nodes) and each unsupported node with why."""
    nodes: list[Node] = []
    ops: list[Op | None] = []
    missing: list[tuple[Node, UnsupportedError]] = []
    for node in graph.nodes:
        node = _bind_subgraphs(node, opsets, missing)
        try:
            bound, cls = bind_version(node, opsets)
            op = cls(bound.attrs, bound.version, bound.label)
        except UnsupportedError as err:
            missing.append((node, err))
            nodes.append(node)
            ops.append(None)
            continue
        op.num_outputs = len(bound.outputs)
        ops.append(op)
        nodes.append(bound)
    return dataclasses.replace(graph, nodes=tuple(nodes)), ops, missing


def _bind_subgraphs(
    node: Node, opsets: Mapping[str, int], missing: list[tuple[Node, UnsupportedError]]
) -> Node:
    """Return `node` with the nodes of its subgraphs (If's branches) bound at the model's
    opsets; their unsupported nodes join `missing`."""
    if not node.subgraphs:
        return node
    attrs: dict[str, AttrValue] = {}
    for name, value in node.attrs.items():
        if isinstance(value, Graph):
            value, _, inner = bind_graph_marking(value, opsets)
            missing.extend(inner)
        attrs[name] = value
    return dataclasses.replace(node, attrs=Attrs(attrs))


def unsupported_error(missing: Sequence[tuple[Node, UnsupportedError]]) -> UnsupportedError:
    """Return one error for every unsupported node: the node's own message when there is
    one, else "unsupported operators: Foo (2 nodes), Bar (1 node); " and the first's."""
    if len(missing) == 1:
        return missing[0][1]
    counts: dict[str, int] = {}
    for node, _ in missing:
        domain = registry.canonical_domain(node.domain)
        key = f"{domain}.{node.op_type}" if domain else node.op_type
        counts[key] = counts.get(key, 0) + 1
    listing = ", ".join(f"{op} ({n} node{'s' if n > 1 else ''})" for op, n in counts.items())
    return UnsupportedError(f"unsupported operators: {listing}; {missing[0][1]}")
