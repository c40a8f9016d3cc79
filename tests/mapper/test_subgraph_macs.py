"""MACs inside subgraphs: an If's larger branch, a Loop's body times its trip count, a Scan's
body times its length; counted from imported models, with the note saying how."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.mapper.importer import load_model_bytes
from systolic.mapper.macs import node_macs, node_macs_noted
from systolic.mapper.report import model_report

from ..support.loop_scan_models import counted_loop, counter_loop, scan_sum, sliced_loop, while_loop


def _graph(model: onnx.ModelProto):
    return load_model_bytes(model.SerializeToString()).graph


def _if_model(big_first: bool) -> onnx.ModelProto:
    """x [2,3] -> If(c): one branch MatMul(x, W [3,5]) (30 MACs), the other MatMul(x, V [3,1])
    + zeros [1,5] (6 MACs); `big_first`: the 30-MAC branch is then_branch."""
    f = TensorProto.FLOAT
    big = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["b"])], "big", [],
                            [helper.make_tensor_value_info("b", f, [2, 5])])
    small = helper.make_graph([helper.make_node("MatMul", ["x", "V"], ["s1"]),
                               helper.make_node("Add", ["s1", "Z"], ["s"])], "small", [],
                              [helper.make_tensor_value_info("s", f, [2, 5])])
    then, other = (big, small) if big_first else (small, big)
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], "g",
        [helper.make_tensor_value_info("x", f, [2, 3]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", f, [2, 5])],
        [numpy_helper.from_array(np.ones((3, 5), np.float32), "W"),
         numpy_helper.from_array(np.ones((3, 1), np.float32), "V"),
         numpy_helper.from_array(np.zeros((1, 5), np.float32), "Z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize(("big_first", "name"), [(True, "then_branch"), (False, "else_branch")])
def test_if_counts_its_larger_branch(big_first: bool, name: str) -> None:
    graph = _graph(_if_model(big_first))
    macs, note = node_macs_noted(graph.nodes[0], graph.type_of)
    assert macs == 2 * 5 * 3
    each = "else_branch 30, then_branch 6" if name == "else_branch" else (
        "else_branch 6, then_branch 30")
    assert note == (f"MACs of the larger branch, {name} ({each}); which runs is known only "
                    "when running")


@pytest.mark.parametrize("trips", [1, 4])
def test_loop_counts_its_body_times_the_trip_count(trips: int) -> None:
    report = model_report(load_model_bytes(counted_loop(trips).SerializeToString()))
    (row,) = report["nodes"]
    assert row["macs"] == report["totals"]["macs"] == trips * 4 * 4
    assert row["macs_note"] == f"{trips} iterations of the body's 16 MACs (as counted for the first)"
    assert row["reason"].endswith(row["macs_note"])


def test_loop_trip_count_from_the_scan_output_without_values() -> None:
    graph = _graph(counted_loop(3))
    assert node_macs(graph.nodes[0], graph.type_of) == 3 * 16


def test_a_while_loop_says_its_trip_count_is_unknown() -> None:
    graph = _graph(while_loop())
    macs, note = node_macs_noted(graph.nodes[0], graph.type_of)
    assert macs == 0
    assert note == "0 MACs per iteration; the trip count is known only when running"


@pytest.mark.parametrize("input_axis", [0, 1])
def test_scan_counts_its_body_times_its_length(input_axis: int) -> None:
    graph = _graph(scan_sum(rows=5, width=4, input_axis=input_axis, matmul=True))
    macs, note = node_macs_noted(graph.nodes[0], graph.type_of)
    assert (macs, note) == (5 * 16, "5 steps of the body's 16 MACs")


def test_parameters_inside_subgraphs_are_counted() -> None:
    # outer: n0 (1 value); body: two, one, step (1 value each)
    assert model_report(load_model_bytes(while_loop().SerializeToString()))["totals"][
        "parameters"] == 4


def test_a_loop_slicing_by_its_iteration_number_counts_the_first_iteration() -> None:
    # torch's form: M and cond are Constant nodes, the body's Slice needs the iteration number
    (row,) = [r for r in model_report(load_model_bytes(sliced_loop(rows=4).SerializeToString())
                                      )["nodes"] if r["op_type"] == "Loop"]
    assert row["macs"] == 4 * (8 * 16 + 16 * 16)
    assert row["macs_note"] == "4 iterations of the body's 384 MACs (as counted for the first)"


def test_a_while_loop_decided_by_constants_counts_its_trips() -> None:
    graph = _graph(counter_loop(5))
    assert node_macs_noted(graph.nodes[0], graph.type_of, lambda name: (
        graph.initializer(name).data if graph.initializer(name) else None)) == (
        5 * 16, "5 iterations of the body's 16 MACs (as counted for the first)")
