"""unroll_loop: a Loop of constant trip count (cond absent or a constant true passed on)
becomes its body's copies in the main graph (the Loop gone, results unchanged, every opset
form of the scan outputs' Unsqueeze); a Loop whose condition or trip count is known only when
running, or whose trip count is too large, stays, noted for the host."""

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from systolic.ir import Model
from systolic.mapper.importer import load_model_bytes
from systolic.mapper.passes.fold_constants import fold_constants
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.report import FOLDED, PassReport
from systolic.mapper.passes.unroll_loop import MAX_TRIPS, unroll_loop
from systolic.reference.executor import run_model

from ...support.loop_scan_models import counted_loop, counter_loop, sliced_loop, while_loop


def _load(model: onnx.ModelProto) -> Model:
    return name_nodes(load_model_bytes(model.SerializeToString()))


def _unrolled(model: Model) -> tuple[Model, PassReport]:
    report = PassReport((node.name, node.op_id) for node in model.graph.nodes)
    result = unroll_loop(model, report)
    return (result if result is model else finalize(result)), report


@pytest.mark.parametrize("opset", [11, 13, 17])
@pytest.mark.parametrize("trips", [1, 3])
def test_a_counted_loop_becomes_its_body_copies(opset: int, trips: int) -> None:
    original = _load(counted_loop(trips, opset=opset))
    unrolled, report = _unrolled(original)
    ops = [node.op_type for node in unrolled.graph.nodes]
    assert "Loop" not in ops and ops.count("MatMul") == trips
    assert report.fate("yf").action == FOLDED  # type: ignore[union-attr]
    rng = np.random.default_rng(trips)
    feeds = {name: rng.standard_normal((1, 4)).astype(np.float32) for name in ("x", "y0")}
    before, after = run_model(original, feeds), run_model(unrolled, feeds)
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value)


def test_a_condition_known_only_when_running_keeps_the_loop() -> None:
    original = _load(while_loop(with_trips=True))
    unrolled, report = _unrolled(original)
    assert unrolled is original
    assert "condition is known only when running" in (report.note_of("sf") or "")


def test_too_many_trips_keep_the_loop() -> None:
    proto = counted_loop(3)
    trips = next(t for t in proto.graph.initializer if t.name == "M")
    trips.CopyFrom(numpy_helper.from_array(np.array(MAX_TRIPS + 1, np.int64), "M"))
    proto.graph.output[1].type.tensor_type.shape.dim[0].dim_value = MAX_TRIPS + 1
    original = _load(proto)
    unrolled, report = _unrolled(original)
    assert unrolled is original
    assert f"not in [1, {MAX_TRIPS}]" in (report.note_of("yf") or "")


def test_a_body_condition_from_a_constant_node_is_unrolled() -> None:
    proto = counted_loop(2)
    body = proto.graph.node[0].attribute[0].g
    identity = next(n for n in body.node if n.op_type == "Identity")
    identity.CopyFrom(onnx.helper.make_node("Constant", [], ["cond_out"],
                                            value=numpy_helper.from_array(np.array(True))))
    unrolled, _ = _unrolled(_load(proto))
    assert [n.op_type for n in unrolled.graph.nodes].count("MatMul") == 2


def test_torch_s_sliced_loop_is_unrolled_after_folding() -> None:
    # M and cond are Constant nodes (folded first); the body's condition is an Identity of
    # the main graph's true; the Loop's output has no declared type
    original = _load(sliced_loop(rows=3))
    report = PassReport((node.name, node.op_id) for node in original.graph.nodes)
    folded = fold_constants(original, report)
    unrolled = finalize(unroll_loop(folded, report))
    ops = [node.op_type for node in unrolled.graph.nodes]
    assert "Loop" not in ops and ops.count("MatMul") == 6
    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((3, 8)).astype(np.float32),
             "h0": rng.standard_normal((1, 16)).astype(np.float32)}
    np.testing.assert_array_equal(run_model(unrolled, feeds)["y"],
                                  run_model(original, feeds)["y"])


@pytest.mark.parametrize("huge_trip", [True, False])
@pytest.mark.parametrize("n", [1, 4])
def test_a_while_loop_whose_condition_is_known_before_running(huge_trip: bool, n: int) -> None:
    # tf2onnx's form: M is int64's maximum (or absent), a counter carried from 0 decides
    original = _load(counter_loop(n, huge_trip=huge_trip))
    unrolled, _ = _unrolled(original)
    ops = [node.op_type for node in unrolled.graph.nodes]
    assert "Loop" not in ops and ops.count("MatMul") == n
    feeds = {"h0": np.random.default_rng(n).standard_normal((1, 4)).astype(np.float32)}
    before, after = run_model(original, feeds), run_model(unrolled, feeds)
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value)
    assert int(after["kf"]) == n


def test_a_while_loop_longer_than_the_limit_stays() -> None:
    original = _load(counter_loop(MAX_TRIPS + 1))
    unrolled, report = _unrolled(original)
    assert unrolled is original
    assert f"after more than {MAX_TRIPS} iterations" in (report.note_of("kf") or "")
