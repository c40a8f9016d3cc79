"""`systolic simulate` and `inspect` on small float models whose tail uses operators only the
host reference implements (issue 13: Einsum, TopK, Trilu, DepthToSpace, GroupNormalization,
ReduceL2, LpNormalization, ...): the convolution runs on the array, those operators run on
the host, the run exits 0 and is bit-exact against the reference."""

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from systolic.commands.cli import main

_R = np.random.default_rng(7)


def _const(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(value, name)


def _model(tail: list[onnx.NodeProto], outputs: list[tuple[str, int, list[int]]],
           extra: list[onnx.TensorProto], opset: int) -> onnx.ModelProto:
    """x (1x3x8x8) -> Conv 3x3 to 4 channels -> Relu -> `tail`."""
    weight = _const("W", (_R.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32))
    head = [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1], name="conv"),
            helper.make_node("Relu", ["c"], ["r"], name="relu")]
    graph = helper.make_graph(
        head + tail, "host_ops",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs], [weight, *extra])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model, full_check=True)
    return model


def attention_like() -> onnx.ModelProto:
    """A Gram matrix by Einsum, a causal mask by Trilu, the top 2 per row by TopK."""
    tail = [helper.make_node("Reshape", ["r", "shape"], ["f"], name="flat"),
            helper.make_node("Einsum", ["f", "f"], ["g"], equation="bcn,bdn->bcd", name="gram"),
            helper.make_node("Trilu", ["g"], ["t"], upper=0, name="causal"),
            helper.make_node("TopK", ["t", "k"], ["v", "i"], name="top")]
    extra = [_const("shape", np.array([1, 4, 64], np.int64)), _const("k", np.array([2], np.int64))]
    return _model(tail, [("v", onnx.TensorProto.FLOAT, [1, 4, 2]),
                         ("i", onnx.TensorProto.INT64, [1, 4, 2])], extra, opset=17)


def vision_like() -> onnx.ModelProto:
    """DepthToSpace (CRD), GroupNormalization, Celu, ReduceL2 over channels (axes as an
    input), LpNormalization and Round."""
    tail = [helper.make_node("DepthToSpace", ["r"], ["d"], blocksize=2, mode="CRD", name="d2s"),
            helper.make_node("GroupNormalization", ["d", "gs", "gb"], ["n"], num_groups=1,
                             name="gn"),
            helper.make_node("Celu", ["n"], ["e"], name="celu"),
            helper.make_node("ReduceL2", ["e", "axes"], ["l2"], keepdims=1, name="l2"),
            helper.make_node("LpNormalization", ["e"], ["p"], axis=-1, name="lp"),
            helper.make_node("Round", ["p"], ["y"], name="round")]
    extra = [_const("gs", np.array([1.5], np.float32)), _const("gb", np.array([0.1], np.float32)),
             _const("axes", np.array([-1], np.int64))]
    return _model(tail, [("y", onnx.TensorProto.FLOAT, [1, 1, 16, 16]),
                         ("l2", onnx.TensorProto.FLOAT, [1, 1, 16, 1])], extra, opset=21)


MODELS = {
    "attention": (attention_like, {"gram": "Einsum", "causal": "Trilu", "top": "TopK"}),
    "vision": (vision_like, {"d2s": "DepthToSpace", "gn": "GroupNormalization", "celu": "Celu",
                             "l2": "ReduceL2", "lp": "LpNormalization", "round": "Round"}),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_simulate_runs_the_new_operators_on_the_host(tmp_path: Path, name: str) -> None:
    make, host = MODELS[name]
    onnx.save(make(), tmp_path / "m.onnx")
    target = tmp_path / "report.json"
    status = main(["simulate", str(tmp_path / "m.onnx"), "--backend", "model", "--json",
                   str(target), "--quiet"])
    report = json.loads(target.read_text())
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    units = {lay["name"]: (lay["op"], lay["unit"]) for lay in report["layers"]}
    assert units["conv"] == ("QConv", "array")
    for node, op in host.items():
        assert units[node] == (op, "host"), node


@pytest.mark.parametrize("name", sorted(MODELS))
def test_inspect_shows_the_new_operators(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make, host = MODELS[name]
    onnx.save(make(), tmp_path / "m.onnx")
    assert main(["inspect", str(tmp_path / "m.onnx")]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()
            if line.split() and line.split()[0] in host}
    for node, op in host.items():
        assert rows[node][1].startswith(f"ai.onnx.{op}:") and "host" in rows[node], node
