"""The frozen, typed graph IR that every pass and the reference work on.

`mapper.importer` is the only code that reads protobuf; it produces a `Model`. Everything here
is immutable: dataclasses are frozen, sequences are tuples, tensor data is a read-only numpy
array. `Graph.text()` gives a stable text form for tests and `systolic inspect`.
"""

import dataclasses
import enum
import functools
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Union

import numpy as np

__all__ = [
    "SYSTOLIC_DOMAIN",
    "AttrValue",
    "Attrs",
    "DataType",
    "Graph",
    "LazyTensor",
    "Model",
    "Node",
    "Tensor",
    "TensorType",
    "ValueInfo",
    "outer_names",
]


SYSTOLIC_DOMAIN = "systolic"
"""The domain of the fused integer operators (QConv, QMatMul, QAdd, pools) that the mapper
passes produce and the reference defines."""


class DataType(enum.IntEnum):
    """Element types, numbered as ONNX's TensorProto.DataType."""

    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20
    UINT4 = 21
    INT4 = 22
    FLOAT4E2M1 = 23
    FLOAT8E8M0 = 24
    UINT2 = 25
    INT2 = 26

    @property
    def short(self) -> str:
        """Short name used in the text form, for example "f32" or "u8"."""
        return _SHORT_NAMES.get(self, self.name.lower())

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype holding this type's values; raises KeyError where there is none."""
        return np.dtype(_NUMPY_TYPES[self])

    @property
    def has_numpy(self) -> bool:
        """True when values of this type can be held in a numpy array by this tool."""
        return self in _NUMPY_TYPES

    @classmethod
    def from_numpy(cls, dtype: np.dtype) -> "DataType":
        """Return the element type of numpy `dtype`."""
        for data_type, name in _NUMPY_TYPES.items():
            if np.dtype(name) == dtype:
                return data_type
        raise KeyError(f"no ONNX element type for numpy dtype {dtype}")


_SHORT_NAMES = {
    DataType.FLOAT: "f32",
    DataType.DOUBLE: "f64",
    DataType.FLOAT16: "f16",
    DataType.BFLOAT16: "bf16",
    DataType.UINT8: "u8",
    DataType.INT8: "i8",
    DataType.UINT16: "u16",
    DataType.INT16: "i16",
    DataType.UINT32: "u32",
    DataType.INT32: "i32",
    DataType.UINT64: "u64",
    DataType.INT64: "i64",
    DataType.BOOL: "bool",
    DataType.STRING: "str",
}

_NUMPY_TYPES = {
    DataType.FLOAT: "float32",
    DataType.DOUBLE: "float64",
    DataType.FLOAT16: "float16",
    DataType.UINT8: "uint8",
    DataType.INT8: "int8",
    DataType.UINT16: "uint16",
    DataType.INT16: "int16",
    DataType.UINT32: "uint32",
    DataType.INT32: "int32",
    DataType.UINT64: "uint64",
    DataType.INT64: "int64",
    DataType.BOOL: "bool",
    DataType.STRING: "object",
}

Dim = int | str | None
"""One dimension: a size, a symbolic dim_param name, or None when unknown."""


@dataclasses.dataclass(frozen=True)
class TensorType:
    """A tensor's element type and shape; `shape` is None when even the rank is unknown."""

    dtype: DataType
    shape: tuple[Dim, ...] | None

    def text(self) -> str:
        """Return the type as "f32[1,3,224,224]" (symbolic dims by name, unknown as "?")."""
        if self.shape is None:
            return f"{self.dtype.short}[*]"
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype.short}[{dims}]"

    @property
    def is_static(self) -> bool:
        """True when every dimension is a known integer."""
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)


@dataclasses.dataclass(frozen=True)
class ValueInfo:
    """A named, typed value: a graph input or output, or an intermediate with a known type."""

    name: str
    type: TensorType
    doc: str = ""

    def text(self) -> str:
        return f"%{self.name}: {self.type.text()}"


@dataclasses.dataclass(frozen=True, eq=False)
class Tensor:
    """A constant tensor: an initializer or a tensor-valued attribute.

    `data` is a read-only numpy array of `dtype.numpy`; equality compares type, shape and values.
    """

    name: str
    dtype: DataType
    data: np.ndarray

    def __post_init__(self) -> None:
        if self.data.flags.writeable:
            frozen = self.data.copy()
            frozen.flags.writeable = False
            object.__setattr__(self, "data", frozen)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.data.shape)

    @property
    def size(self) -> int:
        """The number of elements (known without the values, also for a `LazyTensor`)."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """The bytes the values take (known without the values, also for a `LazyTensor`)."""
        return self.size * self.dtype.numpy.itemsize if self.dtype.has_numpy else int(
            self.data.nbytes)

    @property
    def type(self) -> TensorType:
        return TensorType(self.dtype, self.shape)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return (
            self.name == other.name
            and self.dtype == other.dtype
            and self.data.shape == other.data.shape
            and bool(np.array_equal(self.data, other.data, equal_nan=self.data.dtype.kind == "f"))
        )

    def __hash__(self) -> int:
        return hash((self.name, self.dtype, self.data.shape))

    def text(self) -> str:
        """Return "f32[3]{1, 2, 3}" for tensors of up to 8 elements, else just the type."""
        head = self.type.text()
        if self.size <= 8 and self.dtype != DataType.STRING:
            values = ", ".join(_scalar_text(v) for v in self.data.reshape(-1).tolist())
            return f"{head}{{{values}}}"
        return head


class LazyTensor(Tensor):
    """A constant whose values are decoded only when first read (`data`): its name, type,
    shape, size and byte size are known from the file's header. `load()` returns the values
    (a numpy array of `dtype.numpy` and `shape`; it may raise the importer's one-line errors)
    and is dropped once it has run. Equality, pickling and copies read the values; a pickled
    LazyTensor is a plain `Tensor`."""

    _shape: tuple[int, ...]
    _load: Callable[[], np.ndarray] | None

    def __init__(self, name: str, dtype: DataType, data: np.ndarray | None = None, *,
                 shape: tuple[int, ...] = (), load: Callable[[], np.ndarray] | None = None
                 ) -> None:  # (name, dtype, data: the signature dataclasses.replace calls)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", dtype)
        if data is not None:
            object.__setattr__(self, "_shape", tuple(int(d) for d in data.shape))
            object.__setattr__(self, "_load", None)
            self.__dict__["data"] = _frozen(data)
        else:
            if load is None:
                raise ValueError("a LazyTensor needs its data or a load function")
            object.__setattr__(self, "_shape", tuple(shape))
            object.__setattr__(self, "_load", load)

    @functools.cached_property
    def data(self) -> np.ndarray:
        """The values, decoded on first use (read-only)."""
        load = self._load
        if load is None:
            raise ValueError(f"tensor {self.name!r} has no values and no way to load them")
        values = _frozen(load())
        if tuple(values.shape) != self._shape:
            raise ValueError(f"tensor {self.name!r} decoded to shape {values.shape}, "
                             f"not its declared {self._shape}")
        self.__dict__["_load"] = None  # (frees what the loader holds: the tensor's message)
        return values

    @property
    def loaded(self) -> bool:
        """Whether the values have been decoded."""
        return "data" in self.__dict__

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    def __hash__(self) -> int:
        return hash((self.name, self.dtype, self.shape))

    def __reduce__(self) -> tuple[Any, ...]:
        return Tensor, (self.name, self.dtype, self.data)


def _frozen(values: np.ndarray) -> np.ndarray:
    if values.flags.writeable:
        values = values.copy()
        values.flags.writeable = False
    return values


AttrValue = Union[
    int,
    float,
    str,
    bytes,
    Tensor,
    "Graph",
    tuple[int, ...],
    tuple[float, ...],
    tuple[str, ...],
    tuple[Tensor, ...],
    tuple["Graph", ...],
]
"""An attribute value. ONNX STRING attributes are `str` when they decode as UTF-8, else bytes."""


class Attrs(Mapping[str, AttrValue]):
    """An immutable, name-sorted mapping of attribute names to values."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, AttrValue] | None = None) -> None:
        self._items: tuple[tuple[str, AttrValue], ...] = tuple(sorted((items or {}).items()))

    def __getitem__(self, key: str) -> AttrValue:
        for name, value in self._items:
            if name == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attrs):
            return self._items == other._items
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(name for name, _ in self._items))

    def __repr__(self) -> str:
        return f"Attrs({dict(self._items)!r})"

    def text(self) -> str:
        """Return "{name=value, ...}" in name order, or "" when there are none."""
        if not self._items:
            return ""
        return "{" + ", ".join(f"{n}={_attr_text(v)}" for n, v in self._items) + "}"


@dataclasses.dataclass(frozen=True)
class Node:
    """One operator application.

    `domain` is canonical: "" for the default ONNX domain (also written "ai.onnx").
    `version` is the operator's since_version the node bound to (0 before binding).
    An omitted optional input is "" in `inputs`; an omitted optional output is "" in `outputs`.
    """

    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    domain: str = ""
    version: int = 0
    name: str = ""
    attrs: Attrs = dataclasses.field(default_factory=Attrs)
    doc: str = ""

    @property
    def op_id(self) -> str:
        """The operator as the IR spec writes it: "ai.onnx.Conv:11", "com.microsoft.QGemm:1"."""
        return f"{self.domain or 'ai.onnx'}.{self.op_type}:{self.version}"

    @property
    def label(self) -> str:
        """The node's name, or its first output when it has no name, for messages."""
        return self.name or (self.outputs[0] if self.outputs else self.op_type)

    @property
    def subgraphs(self) -> tuple[tuple[str, "Graph"], ...]:
        """The node's graph-valued attributes (If's branches) as (attribute name, graph)."""
        found: list[tuple[str, Graph]] = []
        for name, value in self.attrs.items():
            if isinstance(value, Graph):
                found.append((name, value))
            elif isinstance(value, tuple):
                found += [(name, item) for item in value if isinstance(item, Graph)]
        return tuple(found)

    @property
    def captures(self) -> tuple[str, ...]:
        """The outer-scope names the node's subgraphs read (`outer_names` of each, in
        attribute order, first use first). A node with subgraphs lists the values standing
        for them after its own inputs, in this order, so every graph tool sees the
        dependency: its operator's own inputs are `inputs[:len(inputs) - len(captures)]`,
        and the value of capture i is `inputs[len(inputs) - len(captures) + i]` (passes may
        rename those node inputs; the subgraphs keep their own names)."""
        names: dict[str, None] = {}
        for _, graph in self.subgraphs:
            names.update(dict.fromkeys(outer_names(graph)))
        return tuple(names)

    @property
    def own_inputs(self) -> tuple[str, ...]:
        """The operator's own inputs: `inputs` without the trailing captures."""
        return self.inputs[: len(self.inputs) - len(self.captures)]

    def text(self) -> str:
        outs = ", ".join(f"%{o}" if o else "_" for o in self.outputs)
        ins = ", ".join(f"%{i}" if i else "_" for i in self.inputs)
        op = self.op_type if not self.domain else f"{self.domain}.{self.op_type}"
        attrs = self.attrs.text()
        return f"{outs} = {op}:{self.version}({ins}){' ' + attrs if attrs else ''}"


@dataclasses.dataclass(frozen=True)
class Graph:
    """A computation graph in topological order, in single static assignment form.

    `inputs` are the values a caller supplies (an initializer listed among the ONNX inputs
    appears here *and* in `initializers`: the initializer is the input's default).
    `value_info` holds the inferred types of intermediate values, in node order.
    """

    name: str
    inputs: tuple[ValueInfo, ...]
    outputs: tuple[ValueInfo, ...]
    nodes: tuple[Node, ...]
    initializers: tuple[Tensor, ...] = ()
    value_info: tuple[ValueInfo, ...] = ()
    doc: str = ""

    def initializer(self, name: str) -> Tensor | None:
        """Return the initializer called `name`, or None."""
        return self._initializers_by_name.get(name)

    def type_of(self, name: str) -> TensorType | None:
        """Return the known type of value `name` (input, output, initializer or intermediate)."""
        return self._types_by_name.get(name)

    @functools.cached_property
    def _initializers_by_name(self) -> dict[str, Tensor]:
        """The initializers by name, the first of a name winning (built once, on first use)."""
        index: dict[str, Tensor] = {}
        for tensor in self.initializers:
            index.setdefault(tensor.name, tensor)
        return index

    @functools.cached_property
    def _types_by_name(self) -> dict[str, TensorType]:
        """Each value's type: inputs, intermediate values, outputs, then initializers, the
        first listing of a name winning (built once, on first use)."""
        index: dict[str, TensorType] = {}
        for info in (*self.inputs, *self.value_info, *self.outputs):
            index.setdefault(info.name, info.type)
        for tensor in self.initializers:
            index.setdefault(tensor.name, tensor.type)
        return index

    def producers(self) -> dict[str, Node]:
        """Map each value name to the node that produces it."""
        return {out: node for node in self.nodes for out in node.outputs if out}

    def consumers(self) -> dict[str, list[Node]]:
        """Map each value name to the nodes that read it, in node order."""
        users: dict[str, list[Node]] = {}
        for node in self.nodes:
            for name in node.inputs:
                if name:
                    users.setdefault(name, []).append(node)
        return users

    def text(self) -> str:
        """Return the stable text form: signature, constants, then one node per line."""
        lines = [f"graph {self.name!r} ("]
        lines += [f"  {info.text()}" for info in self.inputs]
        lines.append(") -> (")
        lines += [f"  {info.text()}" for info in self.outputs]
        lines.append(") {")
        lines += [f"  const %{t.name}: {t.text()}" for t in self.initializers]
        lines += [f"  {node.text()}" for node in self.nodes]
        lines.append("}")
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Model:
    """A whole model: metadata, the operator sets it imports, and its main graph."""

    ir_version: int
    opsets: tuple[tuple[str, int], ...]
    graph: Graph
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    model_version: int = 0
    doc: str = ""
    metadata: tuple[tuple[str, str], ...] = ()
    host_reasons: tuple[tuple[str, str], ...] = ()
    """(node name, why it runs on the host), set by the mapper passes on the integer graph
    they return, for the compiler's host layers."""

    def opset(self, domain: str) -> int | None:
        """Return the imported version of `domain` ("" and "ai.onnx" are the same), or None."""
        canonical = "" if domain == "ai.onnx" else domain
        for name, version in self.opsets:
            if name == canonical:
                return version
        return None

    @property
    def model_version_text(self) -> str:
        """model_version as SemVer "MAJOR.MINOR.PATCH" when its upper four bytes are non-zero
        (64-bit packing: 16-bit MAJOR, 16-bit MINOR, 32-bit PATCH), else as a plain number."""
        version = self.model_version & 0xFFFF_FFFF_FFFF_FFFF
        if version >> 32:
            return f"{version >> 48}.{(version >> 32) & 0xFFFF}.{version & 0xFFFF_FFFF}"
        return str(version)

    def text(self) -> str:
        opsets = ", ".join(f"{d or 'ai.onnx'}:{v}" for d, v in self.opsets)
        return f"model ir_version={self.ir_version} opsets=[{opsets}]\n{self.graph.text()}"


def outer_names(graph: Graph) -> tuple[str, ...]:
    """Return the names `graph` reads without defining them (values of the outer scopes it
    is nested in), in order of first use: node inputs, then graph outputs. A nested node's
    captures are among its inputs, so names read deeper down count too."""
    defined = {info.name for info in graph.inputs} | {t.name for t in graph.initializers}
    defined.update(name for node in graph.nodes for name in node.outputs if name)
    found: dict[str, None] = {}
    for node in graph.nodes:
        found.update(dict.fromkeys(n for n in node.inputs if n and n not in defined))
    found.update(dict.fromkeys(i.name for i in graph.outputs if i.name not in defined))
    return tuple(found)


def _scalar_text(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes):
        return repr(value)
    return str(value)


def _attr_text(value: AttrValue) -> str:
    if isinstance(value, Tensor):
        return value.text()
    if isinstance(value, Graph):
        return f"<graph {value.name!r}: {len(value.nodes)} nodes>"
    if isinstance(value, tuple):
        return "[" + ", ".join(_attr_text(v) for v in value) + "]"
    if isinstance(value, str):
        return repr(value)
    return _scalar_text(value)
