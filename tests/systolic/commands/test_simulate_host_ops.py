"""`systolic simulate` and `inspect` on small float models whose tail uses operators only the
host reference implements (issue 13: Einsum, TopK, Trilu, DepthToSpace, GroupNormalization,
ReduceL2, LpNormalization, the element-wise and trigonometric ones, STFT and DFT, ...): the
convolution runs on the array, those operators run on the host, the run exits 0 and is
bit-exact against the reference."""

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


def elementwise_like() -> onnx.ModelProto:
    """The element-wise host operators in a chain (values kept inside each one's domain),
    then Hardmax, MeanVarianceNormalization, RMSNormalization, LpPool, Mean and IsInf."""
    tail = [helper.make_node("Softsign", ["r"], ["e_a"], name="softsign"),
            helper.make_node("Shrink", ["e_a"], ["e_b"], lambd=0.1, bias=0.05, name="shrink"),
            helper.make_node("ThresholdedRelu", ["e_b"], ["e_c"], alpha=0.01, name="thresh"),
            helper.make_node("Atan", ["e_c"], ["e_d"], name="atan"),
            helper.make_node("Cosh", ["e_d"], ["e_e"], name="cosh"),
            helper.make_node("Acosh", ["e_e"], ["e_f"], name="acosh"),
            helper.make_node("Asin", ["e_a"], ["e_g"], name="asin"),
            helper.make_node("Atanh", ["e_a"], ["e_h"], name="atanh"),
            helper.make_node("Mean", ["e_f", "e_g", "e_h"], ["m"], name="mean"),
            helper.make_node("Hardmax", ["m"], ["hm"], axis=1, name="hardmax"),
            helper.make_node("MeanVarianceNormalization", ["m"], ["mv"], axes=[0, 2, 3],
                             name="mvn"),
            helper.make_node("RMSNormalization", ["mv", "scale"], ["rms"], name="rms"),
            helper.make_node("LpPool", ["rms"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                             name="lppool"),
            helper.make_node("IsInf", ["hm"], ["inf"], name="isinf")]
    extra = [_const("scale", np.linspace(0.5, 1.5, 8).astype(np.float32))]
    return _model(tail, [("y", onnx.TensorProto.FLOAT, [1, 4, 4, 4]),
                         ("inf", onnx.TensorProto.BOOL, [1, 4, 8, 8])], extra, opset=23)


def audio_like() -> onnx.ModelProto:
    """An audio front end after the convolution: STFT of each channel's flattened map with a
    Hann window made by HannWindow, power by ReduceSumSquare, mel bands by a MatMul with
    MelWeightMatrix, and a one-sided DFT of the result."""
    tail = [helper.make_node("Reshape", ["r", "signal_shape"], ["s"], name="signal"),
            helper.make_node("HannWindow", ["n_fft"], ["w"], name="hann"),
            helper.make_node("STFT", ["s", "hop", "w"], ["spec"], onesided=1, name="stft"),
            helper.make_node("ReduceSumSquare", ["spec", "last"], ["pow"], keepdims=0,
                             name="power"),
            helper.make_node("MelWeightMatrix", ["mels", "n_fft", "rate", "low", "high"],
                             ["mel"], name="melmat"),
            helper.make_node("MatMul", ["pow", "mel"], ["bands"], name="bands"),
            helper.make_node("Unsqueeze", ["bands", "last"], ["b3"], name="b3"),
            helper.make_node("DFT", ["b3"], ["y"], onesided=1, name="dft")]
    ints = {"signal_shape": [4, 64, 1], "n_fft": 16, "hop": 8, "last": [-1], "mels": 4,
            "rate": 16000}
    extra = [_const(k, np.array(v, np.int64)) for k, v in ints.items()]
    extra += [_const("low", np.array(0.0, np.float32)), _const("high", np.array(8000.0, np.float32))]
    return _model(tail, [("y", onnx.TensorProto.FLOAT, [4, 7, 3, 2])], extra, opset=20)


def layout_like() -> onnx.ModelProto:
    """SpaceToDepth, ScatterElements, ReverseSequence, Compress, CastLike, Sign, ReduceL1,
    ReduceLogSumExp, RoiAlign, GlobalLpPool, OneHot of an ArgMax, and Tan, Acos, Sinh,
    Asinh on the convolution's output; indices, lengths, conditions and regions are
    constants, as exporters write them."""
    grid = _R.integers(0, 16, (1, 2, 4, 4)).astype(np.int64)
    tail = [helper.make_node("SpaceToDepth", ["r"], ["sd"], blocksize=2, name="s2d"),
            helper.make_node("ScatterElements", ["sd", "idx", "upd"], ["sc"], axis=1,
                             reduction="add", name="scatter"),
            helper.make_node("Reshape", ["sc", "square"], ["sq"], name="square"),
            helper.make_node("ReverseSequence", ["sq", "lens"], ["rv"], name="reverse"),
            helper.make_node("Compress", ["rv", "keep"], ["cp"], axis=0, name="compress"),
            helper.make_node("CastLike", ["cp", "like"], ["cl"], name="castlike"),
            helper.make_node("Sign", ["cl"], ["sg"], name="sign"),
            helper.make_node("ReduceL1", ["sg", "one"], ["l1"], keepdims=0, name="l1"),
            helper.make_node("ReduceLogSumExp", ["rv", "one"], ["lse"], name="lse"),
            helper.make_node("RoiAlign", ["sd", "rois", "batch"], ["ra"], output_height=2,
                             output_width=2, name="roialign"),
            helper.make_node("GlobalLpPool", ["ra"], ["gl"], name="glp"),
            helper.make_node("ArgMax", ["r"], ["am"], axis=1, keepdims=0, name="argmax"),
            helper.make_node("OneHot", ["am", "depth", "onoff"], ["oh"], name="onehot"),
            helper.make_node("Softsign", ["r"], ["ss"], name="softsign"),
            helper.make_node("Tan", ["ss"], ["tn"], name="tan"),
            helper.make_node("Acos", ["ss"], ["ac"], name="acos"),
            helper.make_node("Sinh", ["ac"], ["sh"], name="sinh"),
            helper.make_node("Asinh", ["sh"], ["ash"], name="asinh")]
    extra = [_const("idx", grid), _const("upd", np.full((1, 2, 4, 4), 0.25, np.float32)),
             _const("square", np.array([16, 16], np.int64)),
             _const("lens", np.arange(16, dtype=np.int64)),
             _const("keep", np.arange(16) % 3 == 0), _const("like", np.zeros(1, np.float64)),
             _const("one", np.array([1], np.int64)),
             _const("rois", np.array([[0, 0, 3, 3], [0.5, 1, 2, 3.5]], np.float32)),
             _const("batch", np.zeros(2, np.int64)), _const("depth", np.array(4, np.int64)),
             _const("onoff", np.array([0, 1], np.float32))]
    outputs = [("l1", onnx.TensorProto.DOUBLE, [6]), ("lse", onnx.TensorProto.FLOAT, [16, 1]),
               ("gl", onnx.TensorProto.FLOAT, [2, 16, 1, 1]),
               ("oh", onnx.TensorProto.FLOAT, [1, 8, 8, 4]),
               ("tn", onnx.TensorProto.FLOAT, [1, 4, 8, 8]),
               ("ash", onnx.TensorProto.FLOAT, [1, 4, 8, 8])]
    return _model(tail, outputs, extra, opset=18)


MODELS = {
    "attention": (attention_like, {"causal": "Trilu", "top": "TopK"}),
    "elementwise": (elementwise_like, {
        "softsign": "Softsign", "shrink": "Shrink", "thresh": "ThresholdedRelu",
        "atan": "Atan", "cosh": "Cosh", "acosh": "Acosh", "asin": "Asin", "atanh": "Atanh",
        "mean": "Mean", "hardmax": "Hardmax", "mvn": "MeanVarianceNormalization",
        "rms": "RMSNormalization", "lppool": "LpPool", "isinf": "IsInf"}),
    "audio": (audio_like, {"stft": "STFT", "power": "ReduceSumSquare", "dft": "DFT"}),
    "layout": (layout_like, {
        "s2d": "SpaceToDepth", "scatter": "ScatterElements", "reverse": "ReverseSequence",
        "compress": "Compress", "castlike": "CastLike", "sign": "Sign", "l1": "ReduceL1",
        "lse": "ReduceLogSumExp", "roialign": "RoiAlign", "glp": "GlobalLpPool",
        "onehot": "OneHot", "tan": "Tan", "acos": "Acos", "sinh": "Sinh", "asinh": "Asinh"}),
    "vision": (vision_like, {"d2s": "DepthToSpace", "celu": "Celu", "l2": "ReduceL2",
                             "lp": "LpNormalization", "round": "Round"}),
}


def _simulate(tmp_path: Path, model: onnx.ModelProto) -> dict[str, tuple[str, str]]:
    """Run `systolic simulate` on the model backend; require exit 0 and a bit-exact run and
    return {layer name: (op, unit)}."""
    onnx.save(model, tmp_path / "m.onnx")
    target = tmp_path / "report.json"
    status = main(["simulate", str(tmp_path / "m.onnx"), "--backend", "model", "--json",
                   str(target), "--quiet"])
    report = json.loads(target.read_text())
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    return {lay["name"]: (lay["op"], lay["unit"]) for lay in report["layers"]}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_simulate_runs_the_new_operators_on_the_host(tmp_path: Path, name: str) -> None:
    make, host = MODELS[name]
    units = _simulate(tmp_path, make())
    assert units["conv"] == ("QConv", "array")
    for node, op in host.items():
        assert units[node] == (op, "host"), node


def test_group_normalization_leaves_the_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The vision model's GroupNormalization (opset 21, constant scale and bias) is rewritten
    by `group_norm` into a layer normalization with a per-channel scale and shift: no host
    layer computes it, a QLayerNorm on the vector unit does, and `inspect` says so."""
    units = _simulate(tmp_path, vision_like())
    assert ("GroupNormalization", "host") not in units.values()
    assert units["gn_instance_norm"] == ("QLayerNorm", "vector")
    assert main(["inspect", str(tmp_path / "m.onnx")]) == 0
    row = next(line.split() for line in capsys.readouterr().out.splitlines()
               if line.split() and line.split()[0] == "gn")
    assert row[1] == "ai.onnx.GroupNormalization:21" and row[4] == "vector", row


def test_the_gram_einsum_runs_on_the_array(tmp_path: Path) -> None:
    """The attention model's two-operand Einsum is lowered to a MatMul (`einsum_matmul`) of
    two computed operands: a QMatMul on the array, not a host layer."""
    units = _simulate(tmp_path, attention_like())
    assert units["gram"] == ("QMatMul", "array")


def test_audio_constants_fold_and_the_mel_projection_runs_on_the_array(tmp_path: Path) -> None:
    """HannWindow and MelWeightMatrix of constant sizes fold to constants (no layer), so
    the MatMul by the mel matrix is a weight product on the array."""
    units = _simulate(tmp_path, audio_like())
    assert units["bands"] == ("QMatMul", "array")
    assert "hann" not in units and "melmat" not in units


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


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_float_reference_agrees_with_onnxruntime(name: str) -> None:
    """The host operators' float results against onnxruntime's on the whole model: equal
    integers and booleans, floats within float32 rounding (the STFT/DFT chain a little
    more)."""
    ort = pytest.importorskip("onnxruntime")
    from systolic.mapper.importer import load_model_bytes
    from systolic.reference.executor import run_model

    model = MODELS[name][0]()
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    ours = run_model(load_model_bytes(model.SerializeToString()), {"x": x})
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for output, want in zip(session.get_outputs(), session.run(None, {"x": x}), strict=True):
        got = ours[output.name]
        assert (got.shape, got.dtype) == (want.shape, want.dtype), output.name
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=5e-5, err_msg=output.name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=output.name)
