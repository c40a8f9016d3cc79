"""Convert ONNX protobuf messages (types, values, attributes, nodes, graphs) into the IR.

Only the structure is converted here; the checks that need the whole graph (SSA, order,
definitions) are in `mapper.graph_checks`, binding in `mapper.binding`, shapes in
`mapper.shape_inference`.
"""

import dataclasses
import math
from pathlib import Path

from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import (
    Attrs,
    AttrValue,
    DataType,
    Dim,
    Graph,
    LazyTensor,
    Node,
    Tensor,
    TensorType,
    ValueInfo,
)
from systolic.proto import (
    AttributeProto,
    AttributeType,
    GraphProto,
    NodeProto,
    SparseTensorProto,
    TensorProto,
    TypeProto,
    ValueInfoProto,
)
from systolic.proto.onnx_sparse import densify
from systolic.proto.onnx_tensors import (
    LAZY_FROM,
    declared_bytes,
    declared_element_bytes,
    declared_shape,
    lazy_loader,
    tensor_to_numpy,
)

__all__ = [
    "ReadContext",
    "convert_attribute",
    "convert_graph",
    "convert_node",
    "convert_subgraph",
    "convert_tensor",
    "convert_type",
]


@dataclasses.dataclass(frozen=True)
class ReadContext:
    """What converting needs besides the messages: where external data lives, and the memory
    limit, which holds for each tensor and for all decoded constants together (`held`: bytes
    by tensor, checked by `hold` before anything is decoded). `weightless`: float constants
    declared without data hold placeholder values (`tensor_to_numpy`) instead of being refused.
    `lazy` (`systolic inspect`): large initializers stored as raw or external data become
    `LazyTensor`s, checked now and decoded on first use; they are not held (nothing holds
    them until a run does, which counts them: `systolic.reference.executor`)."""

    base_dir: Path | None
    max_tensor_bytes: int
    held: dict[str, int] = dataclasses.field(default_factory=dict)
    weightless: bool = False
    lazy: bool = False

    def hold(self, where: str, size: int) -> None:
        """Count `size` bytes for `where` (once: holding the same tensor again changes
        nothing); raise ResourceError naming the largest constants when the total would
        exceed the limit."""
        self.hold_all({where: size})

    def hold_all(self, sizes: dict[str, int]) -> None:
        """`hold` every (where, size) of `sizes`, then check the total once (the message
        gives the whole total, not the part counted when the limit was passed)."""
        self.held.update(sizes)
        total = sum(self.held.values())
        # One tensor over the limit alone is refused by its own check, naming its shape.
        if total > self.max_tensor_bytes and max(self.held.values()) <= self.max_tensor_bytes:
            largest = sorted(self.held.items(), key=lambda item: -item[1])[:3]
            largest = [(name, size) for name, size in largest if size]
            named = ", ".join(f"{name} ({size} bytes)" for name, size in largest)
            raise ResourceError(
                f"the model's constants need {total} bytes together, more than the limit of "
                f"{self.max_tensor_bytes} (--max-memory); the largest: {named}: raise the "
                "limit or use a smaller model"
            )


def convert_tensor(
    proto: TensorProto, where: str, ctx: ReadContext, name: str | None = None
) -> Tensor:
    """Return `proto` as an IR Tensor (named `name`, default the proto's own name), counted
    against the context's memory limit before it is decoded."""
    ctx.hold(where, declared_bytes(proto, where))
    dtype, data = tensor_to_numpy(
        proto, where, base_dir=ctx.base_dir, max_bytes=ctx.max_tensor_bytes,
        weightless=ctx.weightless,
    )  # fmt: skip
    data.flags.writeable = False  # a fresh array: frozen in place, not copied by Tensor
    return Tensor(proto.name if name is None else name, dtype, data)


def convert_type(proto: TypeProto, where: str, *, require_rank: bool) -> TensorType:
    """Return a tensor type; sequence, map, optional, sparse and opaque types are unsupported.

    With `require_rank` (graph inputs and outputs) a missing shape is a ModelError. Without
    it (value_info, a subgraph's inputs and outputs: the IR lets nested subgraphs leave their
    types out) a missing type is `UNDEFINED` of unknown shape, for inference to settle."""
    kind = proto.WhichOneof("value")
    if kind is None and not require_rank:
        return TensorType(DataType.UNDEFINED, None)
    if kind != "tensor_type":
        described = {
            "sequence_type": "a sequence",
            "map_type": "a map",
            "optional_type": "an optional",
            "sparse_tensor_type": "a sparse tensor",
            "opaque_type": "an opaque value",
            None: "of no type",
        }.get(kind, str(kind))
        if kind is None:
            raise ModelError(f"{where} has no type: give it a tensor type with a shape")
        raise UnsupportedError(
            f"{where} is {described}; this tool supports only tensor inputs and outputs"
        )
    tensor = proto.tensor_type
    try:
        dtype = DataType(tensor.elem_type)
    except ValueError:
        raise UnsupportedError(
            f"{where} has unknown element type number {tensor.elem_type}"
        ) from None
    if dtype == DataType.UNDEFINED:
        raise ModelError(f"{where} has no element type: fix the model")
    if not tensor.HasField("shape"):
        if require_rank:
            raise ModelError(
                f"{where} has no shape; graph inputs and outputs must give at least their rank"
            )
        return TensorType(dtype, None)
    dims: list[Dim] = []
    for dim in tensor.shape.dim:
        which = dim.WhichOneof("value")
        if which == "dim_value":
            if dim.dim_value == -1:  # Paddle's exporter writes unknown sizes as -1
                dims.append(None)
                continue
            if dim.dim_value < 0:
                raise ModelError(f"{where} has negative dimension {dim.dim_value}")
            dims.append(int(dim.dim_value))
        elif which == "dim_param" and dim.dim_param:
            dims.append(dim.dim_param)
        else:
            dims.append(None)
    return TensorType(dtype, tuple(dims))


def convert_value_info(proto: ValueInfoProto, role: str, *, require_rank: bool) -> ValueInfo:
    """Return a graph input, output or value_info entry; `role` is "input", "output"..."""
    if not proto.name:
        raise ModelError(f"a graph {role} has no name: give every {role} a name")
    where = f"graph {role} {proto.name!r}"
    return ValueInfo(
        proto.name, convert_type(proto.type, where, require_rank=require_rank), proto.doc_string
    )


_SCALAR_FIELDS = {
    AttributeType.FLOAT: "f",
    AttributeType.INT: "i",
    AttributeType.STRING: "s",
    AttributeType.TENSOR: "t",
    AttributeType.GRAPH: "g",
    AttributeType.SPARSE_TENSOR: "sparse_tensor",
    AttributeType.TYPE_PROTO: "tp",
}
_LIST_FIELDS = {
    AttributeType.FLOATS: "floats",
    AttributeType.INTS: "ints",
    AttributeType.STRINGS: "strings",
    AttributeType.TENSORS: "tensors",
    AttributeType.GRAPHS: "graphs",
    AttributeType.SPARSE_TENSORS: "sparse_tensors",
    AttributeType.TYPE_PROTOS: "type_protos",
}


def _attribute_kind(proto: AttributeProto, where: str) -> int:
    if proto.type != AttributeType.UNDEFINED:
        return int(proto.type)
    # Before IR version 2 the kind was implied by the one value field that is set.
    for kind, field in _SCALAR_FIELDS.items():
        if proto.HasField(field):
            return int(kind)
    for kind, field in _LIST_FIELDS.items():
        if len(getattr(proto, field)):
            return int(kind)
    raise ModelError(f"{where} has no type and no value: fix the model")


SUBGRAPH_OPS = frozenset({("", "If"), ("", "Loop"), ("", "Scan")})
"""(domain, op_type) of the operators whose graph attributes are read: If's then_branch and
else_branch, Loop's and Scan's body. Other graph attributes are refused."""


def convert_attribute(
    proto: AttributeProto, where: str, ctx: ReadContext, op: tuple[str, str] = ("", "")
) -> AttrValue:
    """Return an attribute's value. Graph attributes are read only for the operators of
    `SUBGRAPH_OPS` (`op`: the node's canonical domain and op_type); type attributes are
    unsupported."""
    kind = _attribute_kind(proto, where)
    if kind == AttributeType.GRAPH and op in SUBGRAPH_OPS:
        return convert_subgraph(proto.g, where, ctx, takes_inputs=op != ("", "If"))
    if kind == AttributeType.FLOAT:
        return float(proto.f)
    if kind == AttributeType.INT:
        return int(proto.i)
    if kind == AttributeType.STRING:
        return _text(proto.s)
    if kind == AttributeType.TENSOR:
        return convert_tensor(proto.t, where, ctx, name=proto.t.name)
    if kind == AttributeType.SPARSE_TENSOR:
        return _densify(proto.sparse_tensor, where, ctx)
    if kind == AttributeType.FLOATS:
        return tuple(float(v) for v in proto.floats)
    if kind == AttributeType.INTS:
        return tuple(int(v) for v in proto.ints)
    if kind == AttributeType.STRINGS:
        values = [_text(v) for v in proto.strings]
        if any(isinstance(v, bytes) for v in values):
            raise UnsupportedError(f"{where} holds strings that are not UTF-8")
        return tuple(str(v) for v in values)
    if kind == AttributeType.TENSORS:
        return tuple(convert_tensor(t, f"{where}[{i}]", ctx) for i, t in enumerate(proto.tensors))
    if kind == AttributeType.SPARSE_TENSORS:
        return tuple(
            _densify(t, f"{where}[{i}]", ctx) for i, t in enumerate(proto.sparse_tensors)
        )
    if kind in (AttributeType.GRAPH, AttributeType.GRAPHS):
        raise UnsupportedError(
            f"{where} is a subgraph of a {op[1] or 'node'} node (control flow), which this tool "
            "supports only as If's branches and Loop's and Scan's body: fold or unroll it "
            "before importing"
        )
    if kind in (AttributeType.TYPE_PROTO, AttributeType.TYPE_PROTOS):
        raise UnsupportedError(f"{where} is a type attribute, which this tool does not support")
    raise ModelError(f"{where} has unknown attribute type number {kind}")


def _hold_sparse(proto: SparseTensorProto, where: str, ctx: ReadContext) -> None:
    dims = [int(d) for d in proto.dims]
    if all(d >= 0 for d in dims):  # densify refuses negative dimensions
        per_element = declared_element_bytes(proto.values, f"{where} values")
        ctx.hold(where, math.prod(dims) * per_element)


def _densify(proto: SparseTensorProto, where: str, ctx: ReadContext) -> Tensor:
    """Densify a sparse tensor, its dense size counted against the limit first."""
    _hold_sparse(proto, where, ctx)
    return densify(proto, where, ctx.max_tensor_bytes, lambda t, w: convert_tensor(t, w, ctx))


def _text(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def convert_node(proto: NodeProto, index: int, ctx: ReadContext) -> tuple[Node, dict[str, str]]:
    """Return the node (unbound: version 0) and its attribute references.

    The references map attribute name -> `ref_attr_name`; they only occur in function bodies,
    where the caller decides; the caller of this function rejects them elsewhere.
    """
    label = proto.name or (proto.output[0] if proto.output else f"#{index}")
    if not proto.op_type:
        raise ModelError(f"node {label!r} has no op_type: fix the model")
    if not any(proto.output):
        raise ModelError(f"node {label!r} ({proto.op_type}) has no outputs")
    attrs: dict[str, AttrValue] = {}
    refs: dict[str, str] = {}
    for attribute in proto.attribute:
        where = f"attribute {attribute.name!r} of node {label!r} ({proto.op_type})"
        if not attribute.name:
            raise ModelError(f"node {label!r} ({proto.op_type}) has an attribute without a name")
        if attribute.name in attrs or attribute.name in refs:
            raise ModelError(f"{where} is given twice")
        if attribute.ref_attr_name:
            refs[attribute.name] = attribute.ref_attr_name
            continue
        op = ("" if proto.domain == "ai.onnx" else proto.domain, proto.op_type)
        attrs[attribute.name] = convert_attribute(attribute, where, ctx, op)
    node = Node(
        op_type=proto.op_type,
        inputs=_with_captures(proto, label, attrs),
        outputs=tuple(proto.output),
        domain="" if proto.domain == "ai.onnx" else proto.domain,
        name=proto.name,
        attrs=Attrs(attrs),
        doc=proto.doc_string,
    )
    return node, refs


def _with_captures(proto: NodeProto, label: str, attrs: dict[str, AttrValue]) -> tuple[str, ...]:
    """Return the node's inputs followed by the outer names its subgraphs read (`Node.captures`:
    the IR lists them so graph tools see the dependency). A node written back with them
    (a host step of a program file) already lists them."""
    inputs = tuple(proto.input)
    captures = Node(proto.op_type, inputs, (), attrs=Attrs(attrs)).captures
    if not captures and not any(isinstance(v, Graph) for v in attrs.values()):
        return inputs
    if proto.op_type != "If":
        return _body_op_inputs(inputs, captures, attrs)
    if len(inputs) == 1:
        return inputs + captures
    if inputs[1:] and len(inputs) == 1 + len(captures):
        return inputs
    raise ModelError(
        f"node {label!r} ({proto.op_type}) names {len(inputs)} inputs but the operator takes "
        "one (cond): fix the model"
    )


def _body_op_inputs(
    inputs: tuple[str, ...], captures: tuple[str, ...], attrs: dict[str, AttrValue]
) -> tuple[str, ...]:
    """Return a Loop's or Scan's inputs followed by its captures. Its own inputs are as many
    as its body's inputs (Scan-8: one more, sequence_lens); a node written back with its
    captures (a host step of a program file, where passes may have renamed them) already
    lists them: it names that many more inputs (when the count cannot tell, Scan-8 against a
    later Scan with one capture, the last input's name does)."""
    body = attrs.get("body")
    if not isinstance(body, Graph) or not captures:
        return inputs + captures
    base, extra = len(body.inputs), len(captures)
    own_counts = (base, base + 1) if "num_scan_inputs" in attrs else (base,)
    written = len(inputs) - extra in own_counts
    if written and (len(inputs) not in own_counts or inputs[-extra:] == captures):
        return inputs
    return inputs + captures


def convert_subgraph(
    proto: GraphProto, where: str, ctx: ReadContext, *, takes_inputs: bool = False
) -> Graph:
    """Return a graph attribute (If's branch, Loop's or Scan's body): its signature, constants
    and nodes, unchecked. Its inputs and outputs need a type but not a shape; a subgraph of If
    takes no inputs (`takes_inputs` False)."""
    if len(proto.input) and not takes_inputs:
        raise ModelError(
            f"{where} declares {len(proto.input)} input(s); an If branch takes none (it reads "
            "outer values by name): fix the model"
        )
    graph, overloads = convert_graph(proto, ctx, require_rank=False)
    if any(overloads):
        raise UnsupportedError(f"{where} calls a model-local function, which subgraphs cannot")
    return graph


def _initializers(proto: GraphProto, ctx: ReadContext) -> list[Tensor]:
    """Decode the graph's initializers, dense and sparse, after holding all of their
    declared sizes: constants that together exceed the limit are refused before any is
    decoded (with `ctx.lazy`, large ones are left to decode on first use and not held)."""
    dense, sizes = [], {}
    for index, tensor in enumerate(proto.initializer):
        if not tensor.name:
            raise ModelError(f"initializer #{index} has no name: give every initializer a name")
        where = f"initializer {tensor.name!r}"
        size = declared_bytes(tensor, where)
        if not (ctx.lazy and size >= LAZY_FROM):
            sizes[where] = size
        dense.append((tensor, where))
    ctx.hold_all(sizes)
    sparse = []
    for sparse_tensor in proto.sparse_initializer:
        if not sparse_tensor.values.name:
            raise ModelError("a sparse initializer has no name: name its values tensor")
        where = f"sparse initializer {sparse_tensor.values.name!r}"
        _hold_sparse(sparse_tensor, where, ctx)
        sparse.append((sparse_tensor, where))
    return [_initializer(tensor, where, ctx) for tensor, where in dense] + [
        _densify(sparse_tensor, where, ctx) for sparse_tensor, where in sparse
    ]


def _initializer(proto: TensorProto, where: str, ctx: ReadContext) -> Tensor:
    """`convert_tensor`, or with `ctx.lazy` a `LazyTensor` when `lazy_loader` allows one."""
    load = lazy_loader(proto, where, base_dir=ctx.base_dir, max_bytes=ctx.max_tensor_bytes) if (
        ctx.lazy) else None
    if load is None:
        return convert_tensor(proto, where, ctx)
    ctx.held[where] = 0  # (not decoded: held by no one yet)
    return LazyTensor(proto.name, DataType(proto.data_type),
                      shape=declared_shape(proto, where), load=load)


def convert_graph(
    proto: GraphProto, ctx: ReadContext, *, require_rank: bool = True
) -> tuple[Graph, tuple[str, ...]]:
    """Return the main graph (or, without `require_rank`, a subgraph), unchecked and unbound
    (signature, constants, nodes as stored), and the `overload` each node calls (for
    model-local functions; usually "")."""
    inputs = tuple(
        convert_value_info(v, "input", require_rank=require_rank) for v in proto.input
    )
    outputs = tuple(
        convert_value_info(v, "output", require_rank=require_rank) for v in proto.output
    )
    value_info = tuple(
        convert_value_info(v, "value_info", require_rank=False) for v in proto.value_info
    )
    initializers = _initializers(proto, ctx)
    nodes = []
    for index, node_proto in enumerate(proto.node):
        node, refs = convert_node(node_proto, index, ctx)
        if refs:
            first = next(iter(refs))
            raise ModelError(
                f"attribute {first!r} of node {node.label!r} refers to a function attribute "
                f"{refs[first]!r} outside a function body: fix the model"
            )
        nodes.append(node)
    graph = Graph(
        name=proto.name,
        inputs=inputs,
        outputs=outputs,
        nodes=tuple(nodes),
        initializers=tuple(initializers),
        value_info=value_info,
        doc=proto.doc_string,
    )
    return graph, tuple(node.overload for node in proto.node)
