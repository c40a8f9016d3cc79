"""dequantize_after_layout: op(DQ(u)) = DQ(op(u)) for Split, nearest Resize and Gather of
computed indices, so they select integers; hand-made QDQ graphs (Split with and without split
sizes, opset 13 and 18; Resize nearest by scales and by sizes) through the passes, the
compiler and the cycle model, bit-exact with the model as written."""

from pathlib import Path

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.program import LayerUnit
from systolic.mapper.importer import load_model
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compile_model import plan_layers
from systolic.mapper.passes.dequantize_after_layout import (
    COMPUTED_INDICES,
    PER_ELEMENT_INDICES,
    dequantize_after_layout,
)
from systolic.mapper.passes.eliminate_dead import eliminate_dead
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model
from systolic.simulation.runner import simulate

from .model_builder import build, node

S, Z = np.float32(0.02), np.uint8(120)
OTHER = np.float32(0.03)  # a different output scale: a requantization
SHAPE = [1, 6, 4, 4]


def _qdq_front(constants):  # type: ignore[no-untyped-def]
    constants.update({"s": S, "z": Z, "s2": OTHER})
    return [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in"),
            node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in")]


def split_model(*, opset=13, sizes=(2, 4), scales=(S, S), extra_reader=False):  # type: ignore[no-untyped-def]
    """x -> Q -> DQ -> Split(axis 1) -> Q per part (scale `scales[k]`) -> outputs."""
    constants: dict[str, np.ndarray] = {}
    nodes = _qdq_front(constants)
    parts = len(scales)
    inputs = ["xd"]
    attrs: dict[str, object] = {"axis": 1}
    if sizes is not None:
        constants["sizes"] = np.array(sizes, np.int64)
        inputs.append("sizes")
    elif opset >= 18:
        attrs["num_outputs"] = parts
    nodes.append(node("Split", inputs, [f"f{k}" for k in range(parts)], name="split", **attrs))
    outputs = []
    widths = sizes or [SHAPE[1] // parts] * parts
    for k, scale in enumerate(scales):
        name = "s" if scale == S else "s2"
        nodes.append(node("QuantizeLinear", [f"f{k}", name, "z"], [f"y{k}"], name=f"q{k}"))
        outputs.append((f"y{k}", np.uint8, [1, widths[k], 4, 4]))
    if extra_reader:
        nodes.append(node("Relu", ["f0"], ["r"], name="relu"))
        outputs.append(("r", np.float32, [1, widths[0], 4, 4]))
    return build(nodes, [("x", np.float32, SHAPE)], outputs, constants, opset=opset)


def resize_model(*, scales=None, sizes=None, mode="nearest", out_scale=S, **attrs):  # type: ignore[no-untyped-def]
    """x -> Q -> DQ -> Resize -> Q -> y."""
    constants: dict[str, np.ndarray] = {"roi": np.zeros(0, np.float32)}
    nodes = _qdq_front(constants)
    constants["scales"] = np.array(scales if scales is not None else [], np.float32)
    inputs = ["xd", "roi", "scales"]
    if sizes is not None:
        constants["sizes"] = np.array(sizes, np.int64)
        inputs.append("sizes")
    out = list(sizes) if sizes is not None else [int(d * f) for d, f in zip(SHAPE, scales)]
    nodes += [node("Resize", inputs, ["f"], name="resize", mode=mode, **attrs),
              node("QuantizeLinear", ["f", "s" if out_scale == S else "s2", "z"], ["y"],
                   name="q_out")]
    return build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, out)], constants)


def rewritten(model):  # type: ignore[no-untyped-def]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    result = finalize(eliminate_dead(dequantize_after_layout(model, report), report))
    return result, report


def _inputs(seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).uniform(-3, 3, SHAPE).astype(np.float32)}


def same_outputs(a, b) -> None:  # type: ignore[no-untyped-def]
    for seed in range(2):
        expected = run_model(b, _inputs(seed))
        for name, value in run_model(a, _inputs(seed)).items():
            np.testing.assert_array_equal(value, expected[name])


def on_the_accelerator(model, op: str):  # type: ignore[no-untyped-def]
    """Run the whole mapper at 16x16 and the cycle model: bit-exact with the model as
    written; return `op`'s layer."""
    integer, _ = run_passes(model)
    compiled = compile_model(integer, ArrayConfig(rows=16, cols=16))
    for seed in range(2):
        outputs = simulate(compiled, _inputs(seed), backend="model")
        for name, value in run_model(model, _inputs(seed)).items():
            np.testing.assert_array_equal(outputs[name], value)
    return next(layer for layer in compiled.layers if layer.op == op)


@pytest.mark.parametrize(("opset", "sizes"), [(13, (2, 4)), (13, None), (18, (1, 5)),
                                              (18, None)])
def test_a_split_of_dequantized_integers_selects_the_integers(opset, sizes):  # type: ignore[no-untyped-def]
    model = split_model(opset=opset, sizes=sizes)
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == ["QuantizeLinear", "Split"]
    assert report.fate("split").action == "layout"
    assert report.fate("q0").action == report.fate("q1").action == "removed"
    same_outputs(result, model)
    layer = on_the_accelerator(model, "Split")
    assert layer.unit is LayerUnit.LAYOUT


def test_a_part_of_other_parameters_is_requantized():
    model = split_model(scales=(S, OTHER))
    result, _ = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == [
        "QuantizeLinear", "Split", "DequantizeLinear", "QuantizeLinear"]
    same_outputs(result, model)
    assert on_the_accelerator(model, "Split").unit is LayerUnit.LAYOUT


def test_a_part_also_read_by_a_float_op_is_dequantized_for_it():
    model = split_model(extra_reader=True)
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == [
        "QuantizeLinear", "Split", "DequantizeLinear", "Relu"]
    assert report.fate("split").action == "layout"
    same_outputs(result, model)


def test_a_part_read_by_float_ops_only_is_not_moved():
    """Without a QuantizeLinear reader nothing would run on integers: the op stays float."""
    constants: dict[str, np.ndarray] = {}
    nodes = [*_qdq_front(constants), node("Split", ["xd"], ["f0", "f1"], name="split", axis=1),
             node("Relu", ["f0"], ["r0"]), node("Relu", ["f1"], ["r1"])]
    model = build(nodes, [("x", np.float32, SHAPE)],
                  [("r0", np.float32, [1, 3, 4, 4]), ("r1", np.float32, [1, 3, 4, 4])],
                  constants)  # fmt: skip
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == [n.op_type for n in model.graph.nodes]
    assert "no output is read by a QuantizeLinear" in report.note_of("split")


@pytest.mark.parametrize("form", [
    {"scales": [1, 1, 2, 2], "coordinate_transformation_mode": "asymmetric",
     "nearest_mode": "floor"},
    {"sizes": [1, 6, 8, 12], "coordinate_transformation_mode": "half_pixel",
     "nearest_mode": "round_prefer_floor"},
    {"scales": [1, 1, 2, 2], "out_scale": OTHER},  # Resize-13 defaults, requantized
])  # fmt: skip
def test_a_nearest_resize_selects_the_integers(form):  # type: ignore[no-untyped-def]
    model = resize_model(**form)
    result, report = rewritten(model)
    assert "Resize" in [n.op_type for n in result.graph.nodes]
    assert report.fate("resize").action == "layout"
    same_outputs(result, model)
    assert on_the_accelerator(model, "Resize").unit is LayerUnit.LAYOUT


def test_a_nearest_resize_that_does_not_repeat_runs_on_the_host_on_integers():
    model = resize_model(scales=[1, 1, 2, 2], coordinate_transformation_mode="asymmetric",
                         nearest_mode="ceil")
    layer = on_the_accelerator(model, "Resize")
    assert layer.unit is LayerUnit.HOST
    assert "repeating its elements by integer factors" in layer.reason


def test_a_linear_resize_stays_float():
    model = resize_model(scales=[1, 1, 2, 2], mode="linear")
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == [n.op_type for n in model.graph.nodes]
    assert report.note_of("resize") == "only a nearest Resize selects input elements"


def gather_model():  # type: ignore[no-untyped-def]
    """An embedding lookup: DQ(table) -> Gather(ids, a graph input) -> Q -> y."""
    rng = np.random.default_rng(4)
    constants = {"table": rng.integers(0, 256, (20, 8)).astype(np.uint8), "s": S, "z": Z}
    nodes = [node("DequantizeLinear", ["table", "s", "z"], ["td"], name="dq_table"),
             node("Gather", ["td", "ids"], ["g"], name="gather"),
             node("QuantizeLinear", ["g", "s", "z"], ["y"], name="q_out")]
    return build(nodes, [("ids", np.int64, [1, 5])], [("y", np.uint8, [1, 5, 8])], constants)


def test_a_gather_of_computed_indices_selects_rows_of_the_integer_table():
    model = gather_model()
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == ["Gather"]
    assert report.note_of("gather") == COMPUTED_INDICES
    ids = {"ids": np.array([[3, 0, 19, 7, 3]], np.int64)}
    np.testing.assert_array_equal(run_model(result, ids)["y"], run_model(model, ids)["y"])


def test_a_gather_of_a_float_table_by_computed_indices_notes_the_missing_indexed_load():
    rng = np.random.default_rng(4)
    nodes = [node("Gather", ["table", "ids"], ["y"], name="gather")]
    model = build(nodes, [("ids", np.int64, [1, 5])], [("y", np.float32, [1, 5, 8])],
                  {"table": rng.standard_normal((20, 8)).astype(np.float32)})
    result, report = rewritten(model)
    assert result.graph.nodes == model.graph.nodes
    assert report.note_of("gather") == COMPUTED_INDICES


def test_a_gather_elements_of_constant_indices_selects_the_integers():
    """DeBERTa's relative positions: x -> Q -> DQ -> GatherElements(constant indices) -> Q."""
    constants: dict[str, np.ndarray] = {}
    nodes = _qdq_front(constants)
    constants["idx"] = np.random.default_rng(5).integers(0, 4, (1, 6, 4, 3)).astype(np.int64)
    nodes += [node("GatherElements", ["xd", "idx"], ["g"], name="gather_elements", axis=3),
              node("QuantizeLinear", ["g", "s", "z"], ["y"], name="q_out")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, [1, 6, 4, 3])], constants)
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == ["QuantizeLinear", "GatherElements"]
    assert report.note_of("gather_elements") == PER_ELEMENT_INDICES
    x = {"x": np.random.default_rng(6).normal(0, 1, SHAPE).astype(np.float32)}
    np.testing.assert_array_equal(run_model(result, x)["y"], run_model(model, x)["y"])


def test_integer_split_and_resize_are_recorded_as_layout():
    constants = {"sizes": np.array([2, 4], np.int64), "scales": np.array([1, 1, 2, 2], np.float32)}
    nodes = [node("Split", ["x", "sizes"], ["a", "b"], name="split", axis=1),
             node("Resize", ["b", "", "scales"], ["y"], name="resize", mode="nearest")]
    model = build(nodes, [("x", np.uint8, SHAPE)],
                  [("a", np.uint8, [1, 2, 4, 4]), ("y", np.uint8, [1, 4, 8, 8])], constants)
    result, report = rewritten(model)
    assert result.graph.nodes == model.graph.nodes
    assert report.fate("split").action == report.fate("resize").action == "layout"


def test_a_nearest_upsample_10_selects_the_integers():
    constants: dict[str, np.ndarray] = {"scales": np.array([1, 1, 2, 2], np.float32)}
    nodes = _qdq_front(constants)
    nodes += [node("Upsample", ["xd", "scales"], ["f"], name="upsample", mode="nearest"),
              node("QuantizeLinear", ["f", "s", "z"], ["y"], name="q_out")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, [1, 6, 8, 8])],
                  constants, opset=10)  # fmt: skip
    result, report = rewritten(model)
    assert report.fate("upsample").action == "layout"
    same_outputs(result, model)
    assert on_the_accelerator(model, "Upsample").unit is LayerUnit.LAYOUT


def test_an_upsampling_requantizes_before_it():
    """Q_other(Resize(DQ(u))) = Resize(Q_other(DQ(u))): the table runs on the input's
    elements, the Resize writes the requantized integers."""
    model = resize_model(scales=[1, 1, 2, 2], out_scale=OTHER, nearest_mode="floor",
                         coordinate_transformation_mode="asymmetric")
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == [
        "QuantizeLinear", "DequantizeLinear", "QuantizeLinear", "Resize"]
    assert report.fate("q_out").action == "removed"
    same_outputs(result, model)


def test_a_qdq_exports_requantization_after_a_q_dq_pair_moves_before_the_upsampling():
    """Resize -> Q_p -> DQ_p -> Q_other (a QDQ export's Resize before a Concat of other
    parameters) becomes Q_other(DQ_p(u)) -> Resize."""
    constants: dict[str, np.ndarray] = {"scales": np.array([1, 1, 2, 2], np.float32)}
    nodes = _qdq_front(constants)
    nodes += [node("Resize", ["xd", "", "scales"], ["f"], name="resize", mode="nearest"),
              node("QuantizeLinear", ["f", "s", "z"], ["fq"], name="q_same"),
              node("DequantizeLinear", ["fq", "s", "z"], ["fd"], name="dq_same"),
              node("QuantizeLinear", ["fd", "s2", "z"], ["y"], name="q_other")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, [1, 6, 8, 8])],
                  constants)  # fmt: skip
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == [
        "QuantizeLinear", "DequantizeLinear", "QuantizeLinear", "Resize"]
    assert {report.fate(n).action for n in ("q_same", "dq_same", "q_other")} == {"removed"}
    same_outputs(result, model)
    assert on_the_accelerator(model, "Resize").unit is LayerUnit.LAYOUT


def test_a_slice_of_dequantized_integers_selects_the_integers():
    constants: dict[str, np.ndarray] = {"starts": np.array([1], np.int64),
                                        "ends": np.array([4], np.int64),
                                        "axes": np.array([1], np.int64)}
    nodes = _qdq_front(constants)
    nodes += [node("Slice", ["xd", "starts", "ends", "axes"], ["f"], name="slice"),
              node("QuantizeLinear", ["f", "s", "z"], ["y"], name="q_out")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, [1, 3, 4, 4])],
                  constants)  # fmt: skip
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == ["QuantizeLinear", "Slice"]
    assert report.fate("slice").action == "layout"
    same_outputs(result, model)
    assert on_the_accelerator(model, "Slice").unit is LayerUnit.LAYOUT


REALISTIC = Path(__file__).parents[2] / "models" / "realistic"


@pytest.mark.parametrize("form", ["qdq", "float", "qop"])
def test_the_realistic_yolo_block_runs_its_split_and_resize_on_the_accelerator(form):  # type: ignore[no-untyped-def]
    integer, _ = run_passes(load_model(REALISTIC / f"yolo_block_{form}.onnx"))
    layers = plan_layers(integer, ArrayConfig(rows=16, cols=16))
    units = {layer.op: layer.unit for layer in layers if layer.op in ("Split", "Resize")}
    assert units == {"Split": LayerUnit.LAYOUT, "Resize": LayerUnit.LAYOUT}


def test_a_slice_read_by_a_quantize_and_a_float_pool_puts_both_on_the_accelerator():
    """A QOperator export's squeeze-excitation (GhostNet): DQ -> Slice -> Q (the block's path)
    and the same Slice -> float GlobalAveragePool -> Q: the Slice selects integers and the
    pool reads them through a DequantizeLinear, so it fuses into a pool on the array."""
    constants: dict[str, np.ndarray] = {"starts": np.array([0], np.int64),
                                        "ends": np.array([4], np.int64),
                                        "axes": np.array([1], np.int64)}
    nodes = _qdq_front(constants)
    nodes += [node("Slice", ["xd", "starts", "ends", "axes"], ["f"], name="slice"),
              node("QuantizeLinear", ["f", "s", "z"], ["y"], name="q_out"),
              node("GlobalAveragePool", ["f"], ["g"], name="pool"),
              node("QuantizeLinear", ["g", "s2", "z"], ["p"], name="q_pool")]
    model = build(nodes, [("x", np.float32, SHAPE)],
                  [("y", np.uint8, [1, 4, 4, 4]), ("p", np.uint8, [1, 4, 1, 1])],
                  constants)  # fmt: skip
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == [
        "QuantizeLinear", "Slice", "DequantizeLinear", "GlobalAveragePool", "QuantizeLinear"]
    assert report.fate("slice").action == "layout"
    same_outputs(result, model)
    assert on_the_accelerator(model, "Slice").unit is LayerUnit.LAYOUT
    integer, _ = run_passes(model)
    pool = next(n for n in integer.graph.nodes if "pool" in n.name)
    assert pool.domain == "systolic"
