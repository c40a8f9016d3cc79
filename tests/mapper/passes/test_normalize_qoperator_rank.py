"""normalize_qoperator: a QLinearMul or QLinearAdd whose constant operand has a lower rank than
the other (onnxruntime's QOperator form of a layer scale [C, 1, 1] times [N, C, H, W]: FastViT,
PoolFormer; a channels-first norm's shift [C, 1, 1]) broadcasts as its shape with leading 1s,
so it is a per-channel QMul or QAdd on the vector unit."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.graph_tools import constants_of
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model
from systolic.simulation.layer_check import check_layers

from .table_models import make, node, op_types
from .test_normalize_qoperator_tables import ort_run

SHAPE = (1, 4, 5, 5)
SCALE = np.array([200, 30, 128, 255], np.uint8).reshape(4, 1, 1)


def scale_model(constant_first, op_type="QLinearMul"):  # type: ignore[no-untyped-def]
    """aq [1, 4, 5, 5] times (plus) the constant cq [4, 1, 1] (com.microsoft) -> y."""
    constants = {"as": np.float32(0.04), "az": np.uint8(120), "cq": SCALE,
                 "cs": np.float32(0.01), "cz": np.uint8(0), "ys": np.float32(0.03),
                 "yz": np.uint8(50)}
    a, c = ["aq", "as", "az"], ["cq", "cs", "cz"]
    inputs = [*c, *a] if constant_first else [*a, *c]
    nodes = [node(op_type, [*inputs, "ys", "yz"], ["y"], domain="com.microsoft", name="op")]
    return make(nodes, [("aq", np.uint8, list(SHAPE))], [("y", np.uint8, list(SHAPE))],
                constants, opset=13, ms=True)


@pytest.mark.parametrize(("op_type", "fused_op"), [("QLinearMul", "QMul"),
                                                   ("QLinearAdd", "QAdd")])
@pytest.mark.parametrize("constant_first", [True, False])
def test_a_lower_rank_constant_is_per_channel(constant_first, op_type, fused_op):
    proto, model = scale_model(constant_first, op_type)
    fused, report = run_passes(model)
    assert op_types(fused) == [fused_op]
    assert report.fate("op").into == f"systolic.{fused_op} 'op'"
    qmul = fused.graph.nodes[0]
    assert qmul.inputs[0] == "aq"
    b = constants_of(fused.graph)[qmul.inputs[1]]
    assert b.shape == (1, 4, 1, 1) and np.array_equal(b.reshape(4), SCALE.reshape(4))
    feed = {"aq": np.random.default_rng(5).integers(0, 256, SHAPE).astype(np.uint8)}
    got = run_model(fused, feed)["y"].astype(int)
    assert np.abs(got - ort_run(proto, feed).astype(int)).max() <= 1
    assert np.abs(got - run_model(model, feed)["y"].astype(int)).max() <= 1
    compiled = compile_model(fused, ArrayConfig(rows=4, cols=4))
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    assert check_layers(compiled, feed, backend="model") is None
