"""norm_row_order: a GroupNorm of one group or of G (Reshape to one row per sample -> InstanceNormalization
-> Reshape back, as torch exports it) after a conv reads its row in channel-last order through
Transposes: the integer graph computes the same integers, with views instead of host Reshapes."""

import dataclasses

import numpy as np
import pytest

from systolic.ir import SYSTOLIC_DOMAIN, DataType
from systolic.mapper.passes import pipeline
from systolic.mapper.passes.graph_tools import make_node, rename_inputs, replace_graph, tensor
from systolic.mapper.passes.norm_row_order import norm_row_order
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

C, H, W = 4, 3, 5


def _model(*, transposed=False, second_reader=False, groups=1):  # type: ignore[no-untyped-def]
    """Conv -> [Transpose] -> Reshape [1, 1, -1] -> InstanceNormalization -> Reshape back ->
    Conv (float); `second_reader`: the flattened row is a graph output too."""
    rng = np.random.default_rng(3)
    constants = {"w1": rng.normal(0, 0.3, (C, 2, 3, 3)).astype(np.float32),
                 "w2": rng.normal(0, 0.3, (C, C, 1, 1)).astype(np.float32),
                 "flat": np.array([1, groups, -1], np.int64),
                 "s": np.ones(groups, np.float32), "b": np.zeros(groups, np.float32),
                 "back": np.array([1, H, W, C] if transposed else [1, C, H, W], np.int64)}
    nodes = [node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1])]
    if transposed:
        nodes.append(node("Transpose", ["c"], ["ct"], perm=[0, 2, 3, 1]))
    nodes += [node("Reshape", ["ct" if transposed else "c", "flat"], ["r"]),
              node("InstanceNormalization", ["r", "s", "b"], ["n"], epsilon=1e-5),
              node("Reshape", ["n", "back"], ["gt" if transposed else "g"])]
    if transposed:
        nodes.append(node("Transpose", ["gt"], ["g"], perm=[0, 3, 1, 2]))
    nodes.append(node("Conv", ["g", "w2"], ["y"]))
    outputs = [("y", np.float32, (1, C, H, W))]
    if second_reader:
        outputs.append(("r", np.float32, (1, 1, C * H * W)))
    return make(nodes, [("x", np.float32, (1, 2, H, W))], outputs, constants, opset=17)[1]


def _feed():  # type: ignore[no-untyped-def]
    return {"x": np.random.default_rng(4).normal(0, 1, (1, 2, H, W)).astype(np.float32)}


@pytest.mark.parametrize(("groups", "transposes"), [(1, 2), (2, 4)])
def test_the_row_is_read_channel_last_with_the_same_result(monkeypatch, groups, transposes):  # type: ignore[no-untyped-def]
    model = _model(groups=groups)
    fused, report = pipeline.run_passes(model)
    assert op_types(fused).count("Transpose") == transposes and "QLayerNorm" in op_types(fused)
    reshapes = [n.name for n in fused.graph.nodes
                if n.op_type == "Reshape" and report.tracks(n.name)]  # the model's own two
    assert len(reshapes) == 2 and all(report.fate(name).action == "layout" for name in reshapes)
    monkeypatch.setattr(pipeline, "norm_row_order", lambda m, r: m)
    before, _ = pipeline.run_passes(model)
    assert "Transpose" not in op_types(before)
    np.testing.assert_array_equal(run_model(fused, _feed())["y"], run_model(before, _feed())["y"])


@pytest.mark.parametrize("variant", [{"transposed": True}, {"second_reader": True}])
def test_other_forms_stay(monkeypatch, variant):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(pipeline, "norm_row_order", lambda m, r: m)
    before, _ = pipeline.run_passes(_model(**variant))
    assert "QLayerNorm" in op_types(before) and "Reshape" in op_types(before)
    assert norm_row_order(before, PassReport()) is before


def _with_table(model):  # type: ignore[no-untyped-def]
    """`model` (an integer graph) with a QTable (a requantization, as a QOperator model has)
    between its QLayerNorm and the Reshape after it."""
    graph = model.graph
    norm = next(n for n in graph.nodes if n.op_type == "QLayerNorm")
    table = tensor("t", (np.arange(256) // 2 - 40).astype(np.int8))  # int8 domain
    qtable = make_node("QTable", (norm.outputs[0], "t"), ("requantized",), name="requantize",
                       domain=SYSTOLIC_DOMAIN, attrs={"to": int(DataType.UINT8)})
    nodes = []
    for n in graph.nodes:
        nodes.append(rename_inputs(n, {norm.outputs[0]: "requantized"}))
        if n is norm:
            nodes.append(qtable)
    return pipeline.finalize(dataclasses.replace(
        model, graph=replace_graph(graph, nodes, [table])))


def test_a_table_after_the_normalization_moves_with_it(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(pipeline, "norm_row_order", lambda m, r: m)
    before, _ = pipeline.run_passes(_model())
    tabled = _with_table(before)
    ordered = pipeline.finalize(norm_row_order(tabled, PassReport()))
    assert op_types(ordered).count("Transpose") == 2 and "QTable" in op_types(ordered)
    np.testing.assert_array_equal(run_model(ordered, _feed())["y"],
                                  run_model(tabled, _feed())["y"])
