"""MAC counts from shapes, against the arithmetic written out."""

from systolic.ir import Attrs, DataType, Node, TensorType
from systolic.mapper.macs import node_macs


def _types(**shapes: tuple[int, ...]) -> dict[str, TensorType]:
    return {name: TensorType(DataType.FLOAT, shape) for name, shape in shapes.items()}


def test_grouped_conv() -> None:
    types = _types(x=(1, 8, 10, 10), w=(16, 4, 3, 3), y=(1, 16, 8, 8))
    node = Node("Conv", ("x", "w"), ("y",), attrs=Attrs({"group": 2}))
    assert node_macs(node, types.get) == (1 * 16 * 8 * 8) * (4 * 3 * 3)


def test_qlinear_conv_uses_input_3_as_weight() -> None:
    types = _types(x=(1, 2, 5, 5), w=(3, 2, 1, 1), y=(1, 3, 5, 5))
    node = Node("QLinearConv", ("x", "s", "z", "w", "ws", "wz", "ys", "yz"), ("y",))
    assert node_macs(node, types.get) == 75 * 2


def test_gemm_with_and_without_transpose() -> None:
    types = _types(a=(7, 5), at=(5, 7), b=(5, 3), y=(7, 3))
    assert node_macs(Node("Gemm", ("a", "b"), ("y",)), types.get) == 7 * 3 * 5
    transposed = Node("Gemm", ("at", "b"), ("y",), attrs=Attrs({"transA": 1}))
    assert node_macs(transposed, types.get) == 7 * 3 * 5


def test_batched_matmul_and_qgemm() -> None:
    types = _types(a=(2, 4, 6), b=(6, 5), y=(2, 4, 5))
    assert node_macs(Node("MatMul", ("a", "b"), ("y",)), types.get) == 2 * 4 * 5 * 6
    types = _types(a=(4, 6), y=(4, 5))
    qgemm = Node("QGemm", ("a", "s", "z", "b", "bs", "bz"), ("y",), domain="com.microsoft")
    assert node_macs(qgemm, types.get) == 4 * 5 * 6


def test_other_ops_and_unknown_shapes_count_zero() -> None:
    types = _types(x=(4,), y=(4,))
    assert node_macs(Node("Relu", ("x",), ("y",)), types.get) == 0
    assert node_macs(Node("MatMul", ("a", "b"), ("y",)), {}.get) == 0


def test_conv_transpose_counts_every_input_element_times_its_scatter() -> None:
    # stride 2, kernel 3, 4 input channels, 2 groups of 3 output channels each
    types = _types(x=(1, 4, 5, 5), w=(4, 3, 3, 3), y=(1, 6, 11, 11))
    node = Node("ConvTranspose", ("x", "w"), ("y",), attrs=Attrs({"group": 2, "strides": (2, 2)}))
    assert node_macs(node, types.get) == (1 * 4 * 5 * 5) * (3 * 3 * 3)


def test_recurrent_layers_count_every_gate_of_every_step() -> None:
    seq, batch, features, hidden = 7, 3, 10, 6
    for op, gates in (("RNN", 1), ("GRU", 3), ("LSTM", 4)):
        types = _types(x=(seq, batch, features), w=(2, gates * hidden, features),
                       r=(2, gates * hidden, hidden), y=(seq, 2, batch, hidden))
        node = Node(op, ("x", "w", "r"), ("y",), attrs=Attrs({"direction": "bidirectional"}))
        assert node_macs(node, types.get) == seq * batch * 2 * gates * hidden * (features + hidden)
    batch_first = _types(x=(batch, seq, features), w=(1, 4 * hidden, features),
                         r=(1, 4 * hidden, hidden), y=(batch, seq, 1, hidden))
    node = Node("LSTM", ("x", "w", "r"), ("y",), attrs=Attrs({"layout": 1}))
    assert node_macs(node, batch_first.get) == seq * batch * 4 * hidden * (features + hidden)


def test_dynamic_quantize_lstm_reads_its_transposed_weights() -> None:
    seq, batch, features, hidden = 8, 1, 16, 32
    types = _types(x=(seq, batch, features), w=(1, features, 4 * hidden),
                   r=(1, hidden, 4 * hidden), y=(seq, 1, batch, hidden))
    node = Node("DynamicQuantizeLSTM", ("x", "w", "r"), ("y",), domain="com.microsoft")
    assert node_macs(node, types.get) == seq * batch * 4 * hidden * (features + hidden)


def test_recurrent_layer_with_unknown_sequence_counts_zero() -> None:
    types = {**_types(w=(1, 4, 3), r=(1, 4, 1), y=(1,)),
             "x": TensorType(DataType.FLOAT, (None, 1, 3))}
    assert node_macs(Node("LSTM", ("x", "w", "r"), ("y",)), types.get) == 0
