"""Resize mode cubic (float): equal to onnxruntime within float rounding for the coordinate
modes PyTorch and TensorFlow export, both cubic coefficients, with and without
exclude_outside, enlarging and shrinking; integers are refused in one clear line."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.errors import UnsupportedError
from systolic.mapper.importer import load_model_bytes
from systolic.reference.executor import run_model


def _model(shape, sizes, mode, a, exclude, dtype=TensorProto.FLOAT):  # type: ignore[no-untyped-def]
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic",
                            coordinate_transformation_mode=mode, cubic_coeff_a=a,
                            exclude_outside=exclude)
    graph = helper.make_graph(
        [node], "cubic", [helper.make_tensor_value_info("x", dtype, list(shape))],
        [helper.make_tensor_value_info("y", dtype, list(sizes))],
        [numpy_helper.from_array(np.array(sizes, np.int64), "sizes")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("mode", ["half_pixel", "pytorch_half_pixel", "align_corners",
                                  "asymmetric"])
@pytest.mark.parametrize(("a", "exclude"), [(-0.75, 0), (-0.5, 0), (-0.75, 1)])
@pytest.mark.parametrize("sizes", [(1, 2, 9, 13), (1, 2, 3, 4)])
def test_cubic_equals_onnxruntime(mode, a, exclude, sizes):  # type: ignore[no-untyped-def]
    shape = (1, 2, 5, 7)
    proto = _model(shape, sizes, mode, a, exclude)
    x = np.random.default_rng(3).normal(0, 1, shape).astype(np.float32)
    want = ort.InferenceSession(proto.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = run_model(load_model_bytes(proto.SerializeToString()), {"x": x})["y"]
    assert got.shape == tuple(sizes) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_cubic_of_integers_is_refused():
    proto = _model((1, 1, 4, 4), (1, 1, 8, 8), "half_pixel", -0.75, 0, TensorProto.UINT8)
    with pytest.raises(UnsupportedError,
                       match=r"mode 'cubic' of UINT8 is not implemented .*\(float only\)"):
        run_model(load_model_bytes(proto.SerializeToString()),
                  {"x": np.zeros((1, 1, 4, 4), np.uint8)})
