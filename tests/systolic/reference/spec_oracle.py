"""Test helper: the ONNX specification as the oracle for the integer products, on any CPU.

onnxruntime's results depend on the CPU it runs on (its uint8 x int8 kernels saturate int16
pair sums without VNNI, see `systolic.simulation.onnxruntime_saturation`); the specification
does not. Ground truth here is:

- for default-domain operators, onnx's `ReferenceEvaluator` (the spec's own reference
  implementation), run on a one-node model (`spec_outputs`) or a whole file
  (`spec_model_outputs`);
- for the com.microsoft operators the quantizer emits (QGemm, QLinearAdd,
  QLinearGlobalAveragePool), small numpy kernels written from their documented definitions
  (onnxruntime's docs/ContribOperators.md), in exact arithmetic: the real value computed in
  float64 from the float32 scales and rounded once, half to even.

The definitions of the requantizing operators (QLinearConv, QLinearMatMul, QGemm) name no
float32 intermediate, while we (like onnxruntime) compute the multiplier and the product in
float32 and onnx's reference computes the product in float64: both are right, and differ only
where the exact value lies within float32 rounding of a half-integer. So `check_spec` takes
their exact accumulators from the specification (MatMulInteger, ConvInteger) and accepts
either neighbour there (`assert_requantized`).
"""

import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

__all__ = [
    "CONTRIB_OPS",
    "SPEC_OPS",
    "assert_requantized",
    "check_spec",
    "qgemm_real",
    "spec_model_outputs",
    "spec_outputs",
]

MS = "com.microsoft"
SPEC_OPS = {("", "MatMulInteger"), ("", "QLinearMatMul"), ("", "ConvInteger"),
            ("", "QLinearConv"), (MS, "QGemm")}  # fmt: skip
"""The operators `check_spec` compares: the integer products (onnxruntime saturates all of
them but ConvInteger on CPUs without VNNI)."""

TIE_WINDOW = 2.0**-20
"""Relative distance from a half-integer within which float32 arithmetic (a few roundings of
2**-24 each) may round the other way."""


def _f64(x: np.ndarray | None) -> np.ndarray:
    return np.zeros(()) if x is None else np.asarray(x, np.float64)


def _saturate(t: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    info = np.iinfo(zero_point.dtype)
    return np.clip(np.rint(t) + _f64(zero_point), info.min, info.max).astype(zero_point.dtype)


def qgemm_real(a, a_scale, a_zp, b, b_scale, b_zp, c=None, *, alpha=1.0, trans_a=0, trans_b=0):
    """Return QGemm's real output Y = alpha·a_scale·b_scale·((A' - a_zp)(B' - b_zp) + C)
    ([M, N], float64): C is int32 with scale alpha·a_scale·b_scale and zero point 0."""
    a_mat = (a.T if trans_a else a).astype(np.int64) - _f64(a_zp).astype(np.int64)
    b_mat = (b.T if trans_b else b).astype(np.int64) - _f64(b_zp).astype(np.int64)
    acc = a_mat @ b_mat + (0 if c is None else c.astype(np.int64))
    return acc * (float(alpha) * _f64(a_scale) * _f64(b_scale))


class QGemm(OpRun):
    """com.microsoft QGemm: `qgemm_real`, then y = saturate(round(Y / y_scale) + y_zp), or Y
    as float32 without y_scale."""

    op_domain = MS

    def _run(self, a, a_scale, a_zp, b, b_scale, b_zp=None, c=None, y_scale=None, y_zp=None,
             alpha=1.0, transA=0, transB=0):  # ONNX attribute names
        real = qgemm_real(a, a_scale, a_zp, b, b_scale, b_zp, c, alpha=alpha, trans_a=transA,
                          trans_b=transB)  # fmt: skip
        if y_scale is None:
            return (real.astype(np.float32),)
        return (_saturate(real / _f64(y_scale), y_zp),)


class QLinearAdd(OpRun):
    """com.microsoft QLinearAdd: C = saturate(round((A_scale(A - A_zp) + B_scale(B - B_zp))
    / C_scale) + C_zp), broadcasting A and B."""

    op_domain = MS

    def _run(self, a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp=None):
        real = _f64(a_scale) * (_f64(a) - _f64(a_zp)) + _f64(b_scale) * (_f64(b) - _f64(b_zp))
        zero = np.zeros((), a.dtype) if c_zp is None else c_zp
        return (_saturate(real / _f64(c_scale), zero),)


class QLinearGlobalAveragePool(OpRun):
    """com.microsoft QLinearGlobalAveragePool: Y = saturate(round(X_scale / Y_scale ·
    mean(X - X_zp)) + Y_zp) over the spatial axes (channels first unless channels_last)."""

    op_domain = MS

    def _run(self, x, x_scale, x_zp, y_scale, y_zp, channels_last=0):
        axes = tuple(range(1, x.ndim - 1)) if channels_last else tuple(range(2, x.ndim))
        mean = np.mean(_f64(x) - _f64(x_zp), axis=axes, keepdims=True)
        return (_saturate(mean * _f64(x_scale) / _f64(y_scale), y_zp),)


CONTRIB_OPS = [QGemm, QLinearAdd, QLinearGlobalAveragePool]


def _one_node_model(op_type, inputs, attrs, opset, domain) -> onnx.ModelProto:
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    node = helper.make_node(op_type, names, ["out0"], domain=domain or None, **dict(attrs))
    graph = helper.make_graph(
        [node], "spec",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
         for n, x in zip(names, inputs, strict=True) if x is not None],
        [helper.make_tensor_value_info("out0", onnx.TensorProto.UNDEFINED, None)],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def _lift_1d_conv(op_type, inputs, attrs):
    """A 1-D convolution as a 2-D one with a unit height axis. onnx 1.23.2's reference
    QLinearConv and ConvInteger lay a per-channel w_scale or w_zero_point along axes (0, 2, 3)
    or (1, 2, 3), which is right for 2-D only."""
    lifted = list(inputs)
    for i in (0, 3 if op_type == "QLinearConv" else 1):
        lifted[i] = inputs[i][:, :, None, :]
    two_d = dict(attrs)
    for name, pad in (("strides", 1), ("dilations", 1), ("kernel_shape", 1)):
        if name in two_d:
            two_d[name] = [pad, *two_d[name]]
    if "pads" in two_d:
        begin, end = two_d["pads"]
        two_d["pads"] = [0, begin, 0, end]
    return lifted, two_d


def spec_outputs(op_type: str, inputs: Sequence[np.ndarray | None],
                 attrs: Mapping[str, Any] | None = None, *, opset: int,
                 domain: str = "") -> list[np.ndarray]:  # fmt: skip
    """Return the specification's outputs for a one-node model (module docstring)."""
    inputs = [None if x is None else np.asarray(x) for x in inputs]
    attrs = dict(attrs or {})
    lifted = op_type in ("QLinearConv", "ConvInteger") and inputs[0].ndim == 3
    if lifted:
        inputs, attrs = _lift_1d_conv(op_type, inputs, attrs)
    model = _one_node_model(op_type, inputs, attrs, opset, domain)
    feeds = {f"in{i}": x for i, x in enumerate(inputs) if x is not None}
    outputs = list(ReferenceEvaluator(model, new_ops=CONTRIB_OPS).run(None, feeds))
    return [y[:, :, 0, :] for y in outputs] if lifted else outputs


def assert_requantized(ours: np.ndarray, real: np.ndarray, zero_point: np.ndarray) -> None:
    """Check ours = saturate(round_half_to_even(real) + zero_point), accepting the other
    neighbour where `real` lies within `TIE_WINDOW` (relative) of a half-integer."""
    assert ours.dtype == zero_point.dtype and ours.shape == real.shape
    want = _saturate(real, zero_point)
    other = _saturate(np.where(np.rint(real) > real, np.floor(real), np.ceil(real)), zero_point)
    tie = np.abs(np.abs(real - np.floor(real)) - 0.5) <= TIE_WINDOW * np.maximum(1, np.abs(real))
    wrong = (ours != want) & ~(tie & (ours == other))
    assert not wrong.any(), (
        f"{np.count_nonzero(wrong)} of {ours.size} elements differ from the specification, "
        f"first at {np.argwhere(wrong)[0].tolist()}: ours {ours[wrong][0]}, spec {want[wrong][0]}"
    )


def _check_qgemm(inputs, attrs, ours: np.ndarray) -> None:
    padded = list(inputs) + [None] * (9 - len(inputs))
    real = qgemm_real(*padded[:7], alpha=attrs.get("alpha", 1.0),
                      trans_a=attrs.get("transA", 0), trans_b=attrs.get("transB", 0))  # fmt: skip
    y_scale, y_zp = padded[7:9]
    if y_scale is None:
        np.testing.assert_allclose(ours, real, rtol=1e-6, atol=0)
    else:
        assert_requantized(ours, real / _f64(y_scale), np.asarray(y_zp))


def _requantizing_real(op_type, inputs, attrs, opset):
    """The exact real value of QLinearMatMul or QLinearConv before rounding: the spec's
    integer accumulator (MatMulInteger, ConvInteger; plus the bias) times the scales."""
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale = inputs[:7]
    if op_type == "QLinearMatMul":
        (acc,) = spec_outputs("MatMulInteger", [a, b, a_zp, b_zp], opset=10)
        return acc * (_f64(a_scale) * _f64(b_scale) / _f64(y_scale))
    (acc,) = spec_outputs("ConvInteger", [a, b, a_zp, b_zp], attrs, opset=10)
    channels = (1, -1, *([1] * (acc.ndim - 2)))
    bias = inputs[8] if len(inputs) > 8 and inputs[8] is not None else np.zeros(1, np.int32)
    scale = _f64(a_scale) * _f64(b_scale).reshape(-1) / _f64(y_scale)
    return (acc + bias.astype(np.int64).reshape(channels)) * scale.reshape(channels)


def check_spec(op_type: str, inputs: Sequence[np.ndarray | None], attrs: Mapping[str, Any],
               ours: np.ndarray, *, opset: int, domain: str = "") -> bool:  # fmt: skip
    """Compare our output with the specification's for the operators in `SPEC_OPS`
    (MatMulInteger, ConvInteger: bit-exact with the ReferenceEvaluator; the requantizing
    ones: `assert_requantized`, module docstring). Returns False, comparing nothing, for any
    other operator."""
    if (domain, op_type) not in SPEC_OPS:
        return False
    if domain == MS:
        _check_qgemm(inputs, dict(attrs), ours)
    elif op_type in ("QLinearMatMul", "QLinearConv"):
        real = _requantizing_real(op_type, inputs, attrs, opset)
        assert_requantized(ours, real, np.asarray(inputs[7]))
    else:
        (want,) = spec_outputs(op_type, inputs, attrs, opset=opset)
        assert ours.dtype == want.dtype and ours.shape == want.shape
        np.testing.assert_array_equal(ours, want, err_msg="differs from the ONNX specification")
    return True


SPEC_MODEL_OPSET = 19
"""onnx 1.23.2's reference implements QuantizeLinear and DequantizeLinear from version 19 on
(not 13); a model importing an older default opset is run with this one, which changes nothing
for the operators of our models (19 adds float8 types and Q/DQ's saturate attribute)."""


@functools.cache
def _evaluator(path: str) -> ReferenceEvaluator:
    model = onnx.load(path)
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            opset.version = max(opset.version, SPEC_MODEL_OPSET)
    return ReferenceEvaluator(model, new_ops=CONTRIB_OPS)


def spec_model_outputs(path: str | os.PathLike[str],
                       feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:  # fmt: skip
    """Run the ONNX file at `path` with the ReferenceEvaluator and the contrib kernels."""
    return list(_evaluator(os.fspath(path)).run(None, dict(feeds)))
