"""fuse_qdq: DQ(a), DQ(b) -> Sub -> [Relu] -> Q becomes a QAdd with B's multiplier negated
(a - b of two computed tensors: FastViT's RepMixer, PoolFormer's pool(x) - x), within one
output step of onnx's reference and bit-exact on the model backend."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.pipeline import run_passes
from systolic.simulation.layer_check import check_layers

from .table_models import make, node, op_types, steps

AS, AZ = np.float32(0.04), np.uint8(120)
BS, BZ = np.float32(0.03), np.uint8(100)
YS, YZ = np.float32(0.05), np.uint8(128)
A_SHAPE = (1, 4, 5, 6)


def sub_model(b_shape, *, relu=False, swapped=False):  # type: ignore[no-untyped-def]
    """aq, bq (uint8) -> DQ -> Sub(a, b) (or Sub(b, a) `swapped`) -> [Relu] -> Q -> y."""
    constants = {"as": AS, "az": AZ, "bs": BS, "bz": BZ, "ys": YS, "yz": YZ}
    operands = ["bd", "ad"] if swapped else ["ad", "bd"]
    nodes = [node("DequantizeLinear", ["aq", "as", "az"], ["ad"], name="dq_a"),
             node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], name="dq_b"),
             node("Sub", operands, ["d"], name="sub")]
    if relu:
        nodes.append(node("Relu", ["d"], ["r"], name="act"))
    nodes.append(node("QuantizeLinear", ["r" if relu else "d", "ys", "yz"], ["y"], name="q"))
    y_shape = list(A_SHAPE)
    return make(nodes, [("aq", np.uint8, list(A_SHAPE)), ("bq", np.uint8, list(b_shape))],
                [("y", np.uint8, y_shape)], constants)


def _feed(r, b_shape):  # type: ignore[no-untyped-def]
    return {"aq": r.integers(0, 256, A_SHAPE).astype(np.uint8),
            "bq": r.integers(0, 256, b_shape).astype(np.uint8)}


@pytest.mark.parametrize("b_shape", [A_SHAPE, (6,)])
@pytest.mark.parametrize("relu", [False, True])
def test_a_difference_of_two_quantized_tensors_becomes_a_qadd(b_shape, relu):
    proto, model = sub_model(b_shape, relu=relu)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QAdd"]
    qadd = fused.graph.nodes[0]
    assert qadd.inputs[:2] == ("aq", "bq")
    assert qadd.attrs["multiplier_a"] > 0 > qadd.attrs["multiplier_b"]
    assert report.fate("sub").into == "systolic.QAdd 'sub'"
    r = np.random.default_rng(7)
    for _ in range(3):
        vs_onnx, vs_ours = steps(proto, model, fused, _feed(r, b_shape))
        assert np.abs(vs_onnx).max() <= 1 and np.abs(vs_ours).max() <= 1
        assert np.mean(vs_ours == 0) >= 0.99


def test_a_difference_runs_on_the_vector_unit_bit_exact():
    _, model = sub_model(A_SHAPE, relu=True)
    fused, _ = run_passes(model)
    compiled = compile_model(fused, ArrayConfig(rows=4, cols=4))
    assert [layer.unit for layer in compiled.layers if layer.op == "QAdd"] == [
        LayerUnit.VECTOR]
    assert check_layers(compiled, _feed(np.random.default_rng(8), A_SHAPE),
                        backend="model") is None


def test_a_first_operand_along_the_last_axis_is_not_swapped():
    """b [6] - a [1, 4, 5, 6]: QAdd broadcasts only its B, and a Sub is not commutative."""
    _, model = sub_model((6,), swapped=True)
    fused, report = run_passes(model)
    assert "QAdd" not in op_types(fused)
    assert "last axis" in report.note_of("sub")
