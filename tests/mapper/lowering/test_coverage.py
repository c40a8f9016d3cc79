"""`node_units` and `systolic inspect`'s unit column on the 12 models of tests/models: every
Conv/Gemm/MatMul goes to the array, pools and adds to the vector unit, the graph's own
Quantize/Dequantize to the host, and a Softmax to the host with its reason; a LayerNorm's
chain to the vector unit (QLayerNorm), or to the host with the LayerNorm's reason."""

import json
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from onnx import helper

from systolic.commands.cli import main
from systolic.config import ArrayConfig
from systolic.mapper.importer import load_model
from systolic.mapper.lowering.coverage import node_units

MODELS = Path(__file__).parents[2] / "models"
FILES = sorted(p for p in MODELS.glob("*.onnx") if not p.name.startswith("attn_"))

ARRAY_OPS = {"Conv", "Gemm", "MatMul", "QLinearConv", "QGemm", "QLinearMatMul"}
VECTOR_OPS = {"MaxPool", "AveragePool", "GlobalAveragePool", "QLinearGlobalAveragePool", "Add",
              "QLinearAdd"}  # fmt: skip
FUSED_OPS = {"Relu", "Clip", "BatchNormalization"}  # fused into the array or vector op before


def _inspect_rows(
    path: Path, capsys: pytest.CaptureFixture[str], *options: str
) -> list[dict[str, str]]:
    assert main(["inspect", str(path), "--json", "-", *options]) == 0
    rows: list[dict[str, str]] = json.loads(capsys.readouterr().out)["nodes"]
    return rows


def test_the_twelve_models_are_covered() -> None:
    assert len(FILES) == 12


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_unit_column(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _inspect_rows(path, capsys)
    graph = onnx.load(path).graph
    outputs = {o.name for o in graph.output}
    assert len(rows) == len(graph.node)
    for row, node in zip(rows, graph.node, strict=True):
        where = (node.op_type, row["unit"], row["reason"])
        assert row["reason"], where
        if node.op_type in ARRAY_OPS:
            assert row["unit"] == "array", where
        elif node.op_type in VECTOR_OPS:
            assert row["unit"] == "vector", where
        elif node.op_type in FUSED_OPS:
            assert row["unit"] in ("array", "vector"), where
        elif node.op_type == "Flatten":
            assert row["unit"] == "vector" and row["reason"].startswith("layout: "), where
        elif (
            node.op_type == "QuantizeLinear"
            and node.input[0] in {i.name for i in graph.input}
            or node.op_type == "DequantizeLinear"
            and node.output[0] in outputs
        ):
            assert row["unit"] == "host", where
        else:  # weight dequantization and the Q/DQ pairs the fused ops absorb
            assert node.op_type in ("QuantizeLinear", "DequantizeLinear"), where
            assert row["unit"] in ("array", "vector", "none"), where


@pytest.mark.parametrize("form", ["float", "qdq"])
def test_attention_products_go_to_the_array(form: str, capsys: pytest.CaptureFixture[str]) -> None:
    """attn: every MatMul (projections, Q·K^T and scores·V with both factors computed, the
    batched constant-weight product) on the array; Softmax (between DequantizeLinear and
    QuantizeLinear) on the vector unit (SOFTMAX)."""
    rows = _inspect_rows(MODELS / f"attn_{form}.onnx", capsys, "--array", "4x4")
    units = {(r["name"], r["op"]): r["unit"] for r in rows}
    matmuls = [unit for (_, op), unit in units.items() if op == "ai.onnx.MatMul:13"]
    assert matmuls == ["array"] * 7
    assert [unit for (_, op), unit in units.items() if op == "ai.onnx.Softmax:13"] == ["vector"]


def test_softmax_goes_to_the_host_with_a_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Softmax whose float result is the graph output (no QuantizeLinear) stays on the host,
    and says so."""
    model = onnx.load(MODELS / "mlp_qdq.onnx")
    final = model.graph.output[0].name
    for node in model.graph.node:
        node.output[:] = ["logits" if o == final else o for o in node.output]
    model.graph.node.append(helper.make_node("Softmax", ["logits"], [final], name="softmax"))
    path = tmp_path / "mlp_softmax.onnx"
    onnx.save(model, path)
    rows = _inspect_rows(path, capsys)
    softmax = rows[-1]
    assert (softmax["name"], softmax["unit"]) == ("softmax", "host")
    assert softmax["reason"] == (
        f"the softmax result is not quantized by one QuantizeLinear ({final!r} is a graph "
        "output): it runs in float on the host"
    )
    assert [r["unit"] for r in rows if r["op"] == "ai.onnx.Gemm:13"] == ["array"] * 3


def test_a_model_the_mapper_refuses_is_all_host(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.BFLOAT16, [2, 3])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BFLOAT16, [2, 3])],
    )
    path = tmp_path / "bfloat16.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    ((unit, reason),) = node_units(load_model(path), ArrayConfig())
    assert unit == "host"
    assert reason.startswith("the mapper cannot map this model: ")
    assert "BFLOAT16" in reason


def test_a_symbolic_batch_does_not_change_the_units(tmp_path: Path) -> None:
    """A dynamic batch (as torch exports write) maps like batch 1: the Conv goes to the array."""
    weights = onnx.numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", 3, 8, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n", 4, 8, 8])],
        initializer=[weights],
    )
    path = tmp_path / "dynamic.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    ((unit, reason),) = node_units(load_model(path), ArrayConfig())
    assert (unit, reason) == ("array", "fused into systolic.QConv 'conv'")


def test_a_quantized_sigmoid_after_a_conv_is_vector_work_in_its_stores(tmp_path: Path) -> None:
    from .qdq_models import conv_sigmoid_qdq

    path = tmp_path / "conv_sigmoid.onnx"
    onnx.save(conv_sigmoid_qdq(), path)
    model = load_model(path)
    units = dict(zip((n.name for n in model.graph.nodes), node_units(model, ArrayConfig()),
                     strict=True))  # fmt: skip
    assert units["conv"][0] == "array"
    unit, reason = units["sigmoid"]
    assert unit == "vector"
    assert reason == ("fused into systolic.QTable 'sigmoid', itself fused into the STOREs of "
                      "'conv' (STORE with lut)")  # fmt: skip


def _layernorm_model(axis: int, shape: tuple[int, ...]) -> onnx.ModelProto:
    """DQ -> decomposed LayerNorm over `axis` (Q/DQ of the variance between) -> Q."""
    def mean(x: str, out: str, name: str) -> onnx.NodeProto:
        return helper.make_node("ReduceMean", [x], [out], name=name, axes=[axis])

    nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"], name="dq"),
             mean("xf", "mean", "mean"), helper.make_node("Sub", ["xf", "mean"], ["d"], name="sub"),
             helper.make_node("Mul", ["d", "d"], ["sq"], name="square"), mean("sq", "var", "var"),
             helper.make_node("Add", ["var", "eps"], ["ve"], name="add"),
             helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
             helper.make_node("Div", ["d", "sd"], ["n"], name="div"),
             helper.make_node("QuantizeLinear", ["n", "sy", "zy"], ["y"], name="q")]  # fmt: skip
    constants = {"sx": np.float32(0.05), "zx": np.uint8(120), "eps": np.float32(1e-5),
                 "sy": np.float32(1 / 32), "zy": np.uint8(128)}  # fmt: skip
    graph = helper.make_graph(
        nodes, "ln", [helper.make_tensor_value_info("x", onnx.TensorProto.UINT8, shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.UINT8, shape)],
        [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("axis", [-1, 1])
def test_a_layernorm_runs_on_the_vector_unit_or_says_why_not(axis: int, tmp_path: Path) -> None:
    path = tmp_path / "ln.onnx"
    onnx.save(_layernorm_model(axis, (2, 16, 5) if axis == 1 else (2, 5, 16)), path)
    model = load_model(path)
    units = dict(zip((n.name for n in model.graph.nodes), node_units(model, ArrayConfig()),
                     strict=True))  # fmt: skip
    chain = ("mean", "sub", "square", "var", "add", "sqrt", "div")
    for name in chain + (("q",) if axis == -1 else ()):  # a refused chain's Q stays a Q
        unit, reason = units[name]
        if axis == -1:
            assert (unit, reason) == ("vector", "fused into systolic.QLayerNorm 'div'")
        else:  # Div's own host reason (a float division) gives way to the LayerNorm's
            assert unit == "host" and reason.startswith("LayerNorm: the mean is not taken "
                                                         "over the last axis")  # fmt: skip
