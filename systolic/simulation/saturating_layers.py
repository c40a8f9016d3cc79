"""The layers of a model whose uint8 x int8 products onnxruntime saturates, and the model with
those products made exact.

A layer is a node onnxruntime computes with its saturating uint8 x int8 kernels: QLinearConv,
QLinearMatMul, MatMulInteger and com.microsoft QGemm with a uint8 activation and int8 weights
(not ConvInteger: onnxruntime 1.32's ConvInteger sums exactly, tested), and com.microsoft
DynamicQuantizeLSTM with int8 weights (`saturating_lstm`: W and R); with `fused`
(onnxruntime's default graph optimizations) also a Conv, Gemm or MatMul whose two operands
are DequantizeLinear outputs of a uint8 activation and of int8 weights, a QDQ group its
optimizer fuses into those kernels. `saturating_layers` takes their
operands from the reference executor running the model and keeps the layers with a pair sum
outside int16 (`onnxruntime_saturation`).

`desaturated_model` rewrites such layers' weights as uint8, w + 128 with zero point + 128:
every product (w - zero point) is the same, and onnxruntime then computes them with its exact
uint8 x uint8 kernels (a DynamicQuantizeLSTM gets both W and R rewritten: they share one
type). Whatever still differs from our outputs is not saturation.
"""

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from systolic.ir import Model, Node
from systolic.mapper.lowering.node_attrs import int_attr, ints_attr
from systolic.proto import DataType, ModelProto, TensorProto
from systolic.reference.executor import run_model
from systolic.reference.kernels.conv import resolve_auto_pad
from systolic.simulation.onnxruntime_saturation import conv_overflows, pair_sums_overflow
from systolic.simulation.saturating_lstm import LSTM_WEIGHTS, lstm_overflows

__all__ = ["SaturatingLayer", "desaturated_model", "node_overflows", "saturating_layers"]


@dataclasses.dataclass(frozen=True, eq=False)
class SaturatingLayer:
    """A layer with a pair sum outside int16, and its exact replacement: the node that reads
    the int8 weights (`reader`, named by its first output: the layer, or in a QDQ group the
    weights' DequantizeLinear) takes `weight` (w + 128, uint8) at input `weight_input` and
    `zero_point` (its zero point + 128, uint8) at input `zero_point_input`."""

    name: str
    reader: str
    weight_input: int
    zero_point_input: int
    weight: np.ndarray
    zero_point: np.ndarray


@dataclasses.dataclass(frozen=True)
class _Operands:
    """Where a layer's operands are: input positions of the activation, the weights and their
    zero points, and the product (`matmul`, `gemm` or `conv`)."""

    activation: int
    weight: int
    activation_zero_point: int
    weight_zero_point: int
    kind: str


_EXPLICIT = {
    ("", "MatMulInteger"): _Operands(0, 1, 2, 3, "matmul"),
    ("", "QLinearMatMul"): _Operands(0, 3, 2, 5, "matmul"),
    ("", "QLinearConv"): _Operands(0, 3, 2, 5, "conv"),
    ("com.microsoft", "QGemm"): _Operands(0, 3, 2, 5, "gemm"),
}
_FUSED = {"Conv": "conv", "Gemm": "gemm", "MatMul": "matmul"}
"""Default-domain float ops onnxruntime fuses with their DequantizeLinear operands."""


@dataclasses.dataclass(frozen=True)
class _Quantized:
    """A DequantizeLinear's integer input, its zero point (zeros shaped as its scale when
    omitted) and the DequantizeLinear (by first output)."""

    values: np.ndarray
    zero_point: np.ndarray
    reader: str


def saturating_layers(
    model: Model, inputs: Mapping[str, np.ndarray], *, fused: bool = True
) -> list[SaturatingLayer]:
    """Return the layers of `model` (module docstring) whose pair sums on `inputs` leave int16,
    in execution order."""
    finder = _Finder(model, fused)
    run_model(model, inputs, on_node=finder)
    return finder.layers


def node_overflows(node: Node, args: Sequence[np.ndarray | None]) -> bool:
    """True when `node`, an explicit integer layer (QLinearConv, QLinearMatMul, MatMulInteger,
    com.microsoft QGemm) with a uint8 activation and int8 weights, has a pair sum outside
    int16 on its inputs `args`."""
    product = _explicit(node, args)
    return product is not None and _saturates(node, product)


@dataclasses.dataclass(frozen=True)
class _Product:
    """A layer's integer product: its `kind`, operands and zero points, and where the weights
    are read (`reader`, by first output; input `positions` of the weights and zero point)."""

    kind: str
    activation: np.ndarray
    activation_zero_point: int
    weight: np.ndarray
    weight_zero_point: np.ndarray
    reader: str
    positions: tuple[int, int]


def _optional(args: Sequence[np.ndarray | None], index: int) -> np.ndarray | None:
    return args[index] if index < len(args) else None


def _scalar(zero_point: np.ndarray | None) -> int:
    return 0 if zero_point is None else int(zero_point.reshape(-1)[0])


def _explicit(node: Node, args: Sequence[np.ndarray | None]) -> _Product | None:
    operands = _EXPLICIT.get((node.domain, node.op_type))
    if operands is None:
        return None
    a, w = _optional(args, operands.activation), _optional(args, operands.weight)
    if a is None or w is None:
        return None
    w_zp = _optional(args, operands.weight_zero_point)
    return _Product(
        operands.kind, a, _scalar(_optional(args, operands.activation_zero_point)), w,
        np.zeros((), w.dtype) if w_zp is None else w_zp, node.outputs[0],
        (operands.weight, operands.weight_zero_point),
    )  # fmt: skip


def _saturates(node: Node, product: _Product) -> bool:
    if product.activation.dtype != np.uint8 or product.weight.dtype != np.int8:
        return False
    return _overflows(node, product.kind, product.activation, product.activation_zero_point,
                      product.weight)  # fmt: skip


class _Finder:
    """The reference executor's node hook that collects the saturating layers."""

    def __init__(self, model: Model, fused: bool) -> None:
        self.fused = fused
        self.layers: list[SaturatingLayer] = []
        self.quantized: dict[str, _Quantized] = {}
        self.wanted = {
            name for node in model.graph.nodes
            if fused and node.domain == "" and node.op_type in _FUSED for name in node.inputs[:2]
        }  # fmt: skip

    def __call__(
        self, node: Node, args: list[np.ndarray | None], results: list[np.ndarray]
    ) -> None:
        if node.domain == "" and node.op_type == "DequantizeLinear":
            self._remember(node, args)
        if (node.domain, node.op_type) == ("com.microsoft", "DynamicQuantizeLSTM"):
            self._lstm(node, args, results)
            return
        product = _explicit(node, args) or self._fused(node)
        if product is None or not _saturates(node, product):
            return
        self.layers.append(SaturatingLayer(
            node.label, product.reader, *product.positions,
            (product.weight.astype(np.int16) + 128).astype(np.uint8),
            (product.weight_zero_point.astype(np.int16) + 128).astype(np.uint8),
        ))  # fmt: skip

    def _lstm(self, node: Node, args: list[np.ndarray | None], results: list[np.ndarray]) -> None:
        if not lstm_overflows(args, results, str(node.attrs.get("direction", "forward"))):
            return
        for weight, zero_point in LSTM_WEIGHTS:
            w, w_zp = _optional(args, weight), _optional(args, zero_point)
            assert w is not None and w_zp is not None  # lstm_overflows checked W and R
            self.layers.append(SaturatingLayer(
                node.label, node.outputs[0], weight, zero_point,
                (w.astype(np.int16) + 128).astype(np.uint8),
                (w_zp.astype(np.int16) + 128).astype(np.uint8),
            ))  # fmt: skip

    def _remember(self, node: Node, args: list[np.ndarray | None]) -> None:
        x, scale = args[0], args[1]
        if node.outputs[0] not in self.wanted or x is None or scale is None:
            return
        zero_point = _optional(args, 2)
        if zero_point is None:
            zero_point = np.zeros(scale.shape, x.dtype)
        self.quantized[node.outputs[0]] = _Quantized(x, zero_point, node.outputs[0])

    def _fused(self, node: Node) -> _Product | None:
        if not self.fused or node.domain != "" or node.op_type not in _FUSED:
            return None
        a, w = (self.quantized.get(name) for name in node.inputs[:2])
        if a is None or w is None:
            return None
        return _Product(_FUSED[node.op_type], a.values, _scalar(a.zero_point), w.values,
                        w.zero_point, w.reader, (0, 2))  # fmt: skip


def _overflows(node: Node, kind: str, a: np.ndarray, a_zp: int, w: np.ndarray) -> bool:
    if kind == "matmul":
        return pair_sums_overflow(a, w)
    if kind == "gemm":
        a_mat = a.T if int_attr(node, "transA", 0) else a
        w_mat = w.T if int_attr(node, "transB", 0) else w
        return pair_sums_overflow(a_mat, w_mat)
    rank = w.ndim - 2
    strides = ints_attr(node, "strides", (1,) * rank)
    dilations = ints_attr(node, "dilations", (1,) * rank)
    pads = resolve_auto_pad(
        str(node.attrs.get("auto_pad", "NOTSET")),
        a.shape[2:],
        w.shape[2:],
        strides,
        dilations,
        ints_attr(node, "pads", (0,) * (2 * rank)),
    )
    return conv_overflows(a, w, a_zp, group=int_attr(node, "group", 1), strides=strides,
                          pads=pads, dilations=dilations)  # fmt: skip


def desaturated_model(data: bytes, layers: Sequence[SaturatingLayer]) -> bytes:
    """Return the serialized model `data` with each layer's weights and weight zero point
    replaced by the uint8 ones (new initializers; other readers keep the originals)."""
    model = ModelProto()
    model.ParseFromString(data)
    graph = model.graph
    readers = {node.output[0]: node for node in graph.node if node.output}
    taken = {tensor.name for tensor in graph.initializer}
    taken.update(name for node in graph.node for name in (*node.input, *node.output))
    for layer in layers:
        node = readers.get(layer.reader)
        if node is None:
            continue
        for position, values, what in (
            (layer.weight_input, layer.weight, "weight"),
            (layer.zero_point_input, layer.zero_point, "zero_point"),
        ):
            name = _fresh(f"{layer.reader}_{what}_uint8", taken)
            graph.initializer.append(_uint8_tensor(name, values))
            while len(node.input) <= position:
                node.input.append("")
            node.input[position] = name
    return model.SerializeToString()


def _fresh(name: str, taken: set[str]) -> str:
    candidate, count = name, 1
    while candidate in taken:
        count += 1
        candidate = f"{name}_{count}"
    taken.add(candidate)
    return candidate


def _uint8_tensor(name: str, values: np.ndarray) -> TensorProto:
    tensor = TensorProto(name=name, data_type=DataType.UINT8, dims=list(values.shape))
    tensor.raw_data = np.ascontiguousarray(values, np.uint8).tobytes()
    return tensor
