"""fuse_layernorm: the layer normalization forms (decomposed ReduceMean ... Div with Q/DQ
between the steps, its QOperator form with QLinearAdd of eps, Mul by Reciprocal, Mul(d, d),
LayerNormalization of opset 17) become systolic.QLayerNorm, within one output step of the
float normalization of the quantized input; a float model's chain is quantized first (the
normalized tensor calibrated, gamma and beta QMul and QAdd); a chain over an inner axis, one
whose inner value is read outside it and an eps beyond LAYERNORM's field stay on the host
with the reason."""

import numpy as np
import pytest

from systolic.mapper.passes.fuse_layernorm import eps_field
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.quant_params import NotFusable
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

U8 = np.uint8
H = 24
SHAPE = (2, 5, H)


def _mean(x: str, out: str, axes, opset: int):  # type: ignore[no-untyped-def]
    """ReduceMean over `axes`: an attribute below opset 18, the input "axes" from 18."""
    if opset >= 18:
        return node("ReduceMean", [x, "axes"], [out])
    return node("ReduceMean", [x], [out], axes=list(axes))


def _chain(x: str, out: str, *, square: str = "Pow", divide: str = "Div", axes=(-1,),
           qdq_variance: bool = False, qlinear_eps: bool = False,
           opset: int = 13) -> list:  # type: ignore[type-arg]
    """The decomposed normalization of `x` into `out` (constants named c2, eps ...)."""
    nodes = [_mean(x, "mean", axes, opset), node("Sub", [x, "mean"], ["d"])]
    nodes.append(node("Pow", ["d", "c2"], ["sq"]) if square == "Pow"
                 else node("Mul", ["d", "d"], ["sq"]))  # fmt: skip
    nodes.append(_mean("sq", "var", axes, opset))
    var = "var"
    if qdq_variance or qlinear_eps:
        nodes.append(node("QuantizeLinear", ["var", "sv", "zv"], ["var_q"]))
    if qlinear_eps:
        nodes += [node("QLinearAdd", ["var_q", "sv", "zv", "eps_q", "se", "ze", "sve", "zv"],
                       ["ve_q"], domain="com.microsoft"),
                  node("DequantizeLinear", ["ve_q", "sve", "zv"], ["ve"])]  # fmt: skip
    else:
        if qdq_variance:
            nodes += [node("DequantizeLinear", ["var_q", "sv", "zv"], ["var_dq"]),
                      node("DequantizeLinear", ["eps_q", "se", "ze"], ["eps_dq"])]  # fmt: skip
            var = "var_dq"
        nodes.append(node("Add", [var, "eps_dq" if qdq_variance else "eps"], ["ve"]))
    nodes.append(node("Sqrt", ["ve"], ["sd"]))
    if divide == "Div":
        nodes.append(node("Div", ["d", "sd"], [out]))
    else:
        nodes += [node("Reciprocal", ["sd"], ["rsd"]), node("Mul", ["rsd", "d"], [out])]
    return nodes


CONSTANTS = {"c2": np.float32(2.0), "eps": np.float32(1e-5), "sv": np.float32(0.02),
             "zv": U8(0), "eps_q": U8(1), "se": np.float32(1e-5), "ze": U8(0),
             "sve": np.float32(0.02)}  # fmt: skip


def _quantized(shape=SHAPE, eps=1e-5, **chain):  # type: ignore[no-untyped-def]
    nodes = [node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]), *_chain("xf", "n", **chain),
             node("QuantizeLinear", ["n", "sy", "zy"], ["y"])]  # fmt: skip
    constants = {**CONSTANTS, "sx": np.float32(0.05), "zx": U8(120), "sy": np.float32(1 / 32),
                 "zy": U8(128), "axes": np.array(chain.get("axes", (-1,)), np.int64),
                 "eps": np.float32(eps)}  # fmt: skip
    ms = chain.get("qlinear_eps", False)
    return make(nodes, [("x", U8, shape)], [("y", U8, shape)], constants, ms=ms,
                opset=chain.get("opset", 13))  # fmt: skip


def _feed(shape=SHAPE, seed=0):  # type: ignore[no-untyped-def]
    return {"x": np.random.default_rng(seed).integers(40, 230, shape).astype(U8)}


def _fates(report, op_type):  # type: ignore[no-untyped-def]
    return [f for f in report.fates if f.op_type.split(":")[0].endswith(op_type)]


@pytest.mark.parametrize("chain", [
    {}, {"qdq_variance": True}, {"qlinear_eps": True}, {"square": "Mul"},
    {"divide": "Reciprocal"}, {"axes": (2,)}, {"opset": 18},
], ids=["float-steps", "qdq-variance", "qlinear-eps", "mul-square", "reciprocal", "axis-2",
        "axes-input"])
def test_quantized_chain_becomes_qlayernorm_within_one_step(chain):  # type: ignore[no-untyped-def]
    _, model = _quantized(**chain)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QLayerNorm"]
    for op in ("ReduceMean", "Sub", "Sqrt", "Div", "Reciprocal", "QLinearAdd"):
        assert all(f.action == "fused" and "QLayerNorm" in f.into for f in _fates(report, op))
    (qln,) = fused.graph.nodes
    assert qln.attrs["eps"] == eps_field(1e-5, H, 0.05) and qln.attrs["x_zero_point"] == 120
    feed = _feed()
    diff = run_model(fused, feed)["y"].astype(int) - run_model(model, feed)["y"].astype(int)
    assert 0 < np.count_nonzero(run_model(fused, feed)["y"] - 128)
    if not (chain.get("qdq_variance") or chain.get("qlinear_eps")):  # the model's own
        assert np.abs(diff).max() <= 1  # quantized variance is coarser than the exact one


def test_an_inner_axis_stays_on_the_host_with_the_reason():  # type: ignore[no-untyped-def]
    _, model = _quantized(shape=(2, H, 5), axes=(1,))
    fused, report = run_passes(model)
    assert "QLayerNorm" not in op_types(fused)
    for op in ("ReduceMean", "Sub", "Sqrt", "Div"):
        for fate in _fates(report, op):
            assert fate.action == "host" and "not taken over the last axis" in fate.reason


def test_an_inner_value_read_elsewhere_keeps_the_chain_on_the_host():  # type: ignore[no-untyped-def]
    nodes = [node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]), *_chain("xf", "n"),
             node("QuantizeLinear", ["n", "sy", "zy"], ["y"]),
             node("QuantizeLinear", ["var", "sy", "zy"], ["v"])]  # fmt: skip
    constants = {**CONSTANTS, "sx": np.float32(0.05), "zx": U8(120), "sy": np.float32(1 / 32),
                 "zy": U8(128)}  # fmt: skip
    _, model = make(nodes, [("x", U8, SHAPE)], [("y", U8, SHAPE), ("v", U8, (2, 5, 1))],
                    constants, opset=13)  # fmt: skip
    fused, report = run_passes(model)
    assert "QLayerNorm" not in op_types(fused)
    (div,) = _fates(report, "Div")
    assert div.action == "host" and "'var' inside the layer normalization" in div.reason


def test_eps_beyond_the_field_is_refused():  # type: ignore[no-untyped-def]
    assert eps_field(1e-12, 64, 0.05) == 0
    assert eps_field(1e-5, 64, 0.05) == round(64 * 64 * 1e-5 / np.float32(0.05) ** 2)
    with pytest.raises(NotFusable, match="outside its 32-bit eps field"):
        eps_field(10.0, 4096, 0.001)


def test_an_eps_beyond_the_field_keeps_the_chain_on_the_host_with_the_reason():  # type: ignore[no-untyped-def]
    _, model = _quantized(eps=1e5)  # H^2 eps / s_x^2 = 576e5 / 0.0025 > 2^32
    fused, report = run_passes(model)
    assert "QLayerNorm" not in op_types(fused)
    (div,) = _fates(report, "Div")
    assert div.action == "host" and "outside its 32-bit eps field" in div.reason
    assert dict(fused.host_reasons)[div.node] == div.reason


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.reshape(-1).astype(np.float64), b.reshape(-1).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _float_model(form: str, axis: int = -1, unit: bool = False):  # type: ignore[no-untyped-def]
    """MatMul -> layer normalization (with gamma and beta; `unit`: 1 and 0) -> MatMul, float."""
    rng = np.random.default_rng(1)
    constants = {"w1": rng.standard_normal((H, H)).astype(np.float32) / 4,
                 "w2": rng.standard_normal((H, 8)).astype(np.float32) / 4,
                 "gamma": (1 + rng.standard_normal(H) / 3).astype(np.float32),
                 "beta": (rng.standard_normal(H) / 3).astype(np.float32)}  # fmt: skip
    if unit:
        constants |= {"gamma": np.ones(H, np.float32), "beta": np.zeros(H, np.float32)}
    if form == "LayerNormalization":
        norm = [node("LayerNormalization", ["h", "gamma", "beta"], ["a"], axis=axis,
                     epsilon=1e-5)]  # fmt: skip
        opset = 17
    else:
        norm = [*_chain("h", "n"), node("Mul", ["n", "gamma"], ["g"]),
                node("Add", ["g", "beta"], ["a"])]  # fmt: skip
        constants |= {"c2": np.float32(2.0), "eps": np.float32(1e-5)}
        opset = 13
    nodes = [node("MatMul", ["x", "w1"], ["h"]), *norm, node("MatMul", ["a", "w2"], ["y"])]
    return make(nodes, [("x", np.float32, (1, 6, H))], [("y", np.float32, (1, 6, 8))],
                constants, opset=opset)  # fmt: skip


@pytest.mark.parametrize("form", ["decomposed", "LayerNormalization"])
def test_float_layernorm_is_quantized_and_fused(form):  # type: ignore[no-untyped-def]
    _, model = _float_model(form)
    rng = np.random.default_rng(7)
    feeds = [{"x": rng.standard_normal((1, 6, H)).astype(np.float32)} for _ in range(4)]
    fused, _ = run_passes(model, calibration=feeds)
    assert op_types(fused) == ["QuantizeLinear", "QMatMul", "QLayerNorm", "QMul", "QAdd",
                               "QMatMul", "DequantizeLinear"]
    want, got = run_model(model, feeds[0])["y"], run_model(fused, feeds[0])["y"]
    assert _cosine(want, got) > 0.995


def test_layernormalization_over_an_inner_axis_stays_on_the_host():  # type: ignore[no-untyped-def]
    _, model = _float_model("LayerNormalization", axis=1)
    fused, report = run_passes(model)
    assert "QLayerNorm" not in op_types(fused) and "LayerNormalization" in op_types(fused)
    (norm,) = _fates(report, "LayerNormalization")
    assert norm.action == "host" and "not over the last axis alone" in norm.reason



@pytest.mark.parametrize("unit", [False, True])
def test_qdq_layernormalization_from_onnxruntime_is_fused(tmp_path, unit):  # type: ignore[no-untyped-def]
    """onnxruntime's QDQ quantizer keeps LayerNormalization float between DQ(x) and Q(y),
    gamma and beta read through DequantizeLinear: split, its normalized value and gamma's
    result calibrated (layernorm_island), it becomes QLayerNorm, QMul and QAdd; with gamma 1
    and beta 0 (an untrained norm, timm's initialisation) no split is needed: LayerNorm(x, 1)
    becomes QLayerNorm alone."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    from systolic.mapper.importer import load_model

    proto, float_model = _float_model("LayerNormalization", unit=unit)
    rng = np.random.default_rng(9)
    feeds = [{"x": rng.standard_normal((1, 6, H)).astype(np.float32)} for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = iter(feeds)

        def get_next(self):  # type: ignore[no-untyped-def]
            return next(self.feeds, None)

    (tmp_path / "f.onnx").write_bytes(proto.SerializeToString())
    quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), Reader(),
                    quant_format=QuantFormat.QDQ)  # fmt: skip
    model = load_model(str(tmp_path / "q.onnx"))
    assert "LayerNormalization" in op_types(model)
    fused, _ = run_passes(model, calibration=feeds)
    affine = [] if unit else ["QMul", "QAdd"]
    assert op_types(fused) == ["QuantizeLinear", "QMatMul", "QLayerNorm", *affine,
                               "QMatMul", "DequantizeLinear"]
    want, got = run_model(float_model, feeds[0])["y"], run_model(fused, feeds[0])["y"]
    assert _cosine(want, got) > 0.99
