"""Nearest Resize as a layout operator: integer upsampling as LOAD once + one COPY per
repeat (`layout_repeat`), downsampling as a strided copy, the other coordinate modes and
linear Resize on the host with their reasons; checked on the golden machine and the cycle
model against the reference executor."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.ir import Attrs, DataType, Node, Tensor
from systolic.isa.instructions import Copy, Load
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.layout import NOT_STRIDED
from systolic.mapper.lowering.layout_resize import LINEAR_RESIZE
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, random_input

I8 = DataType.INT8
CONFIG = ArrayConfig(rows=4, cols=4)
NOT_REPEATED = f"{NOT_STRIDED}, nor one repeating its elements by integer factors"


def _resize(*, scales=None, sizes=None, shape=(1, 3, 4, 5), dtype=I8, **attrs):  # type: ignore[no-untyped-def]
    """x -> QMaxPool p -> Resize -> QMaxPool y (a float Resize reads x directly)."""
    constants = [Tensor("roi", DataType.FLOAT, np.zeros(0, np.float32))]
    inputs = ["p", "roi"]
    if scales is not None:
        constants.append(Tensor("scales", DataType.FLOAT, np.array(scales, np.float32)))
        inputs.append("scales")
    else:
        constants.append(Tensor("scales", DataType.FLOAT, np.zeros(0, np.float32)))
        constants.append(Tensor("sizes", DataType.INT64, np.array(sizes, np.int64)))
        inputs += ["scales", "sizes"]
    resize = Node("Resize", tuple(inputs), ("r",), domain="", version=13, name="resize",
                  attrs=Attrs(attrs))
    if dtype is not I8:
        resize = Node("Resize", ("x", *inputs[1:]), ("y",), domain="", version=13,
                      name="resize", attrs=Attrs(attrs))
        return graph({"x": (dtype, shape)}, {"y": dtype}, [resize], constants)
    nodes = [_elementwise("x", "p", len(shape)), resize, _elementwise("r", "y", len(shape))]
    return graph({"x": (I8, shape)}, {"y": I8}, nodes, constants)


def _elementwise(x: str, out: str, rank: int) -> Node:
    """A 1x1 QMaxPool (rank 4: the map is channel-last), or x + x halved (rank 3: row-major)."""
    if rank == 4:
        return node("QMaxPool", [x], out, kernel_shape=(1, 1))
    return node("QAdd", [x, x], out, multiplier_a=1 << 30, multiplier_b=1 << 30, shift=0,
                y_type=3)


def _run(g, shape=(1, 3, 4, 5)):  # type: ignore[no-untyped-def]
    compiled = compile_model(g, CONFIG)
    inputs = {"x": random_input(I8, shape, 5)} if g.inputs[0].type.dtype is I8 else {
        "x": np.random.default_rng(5).uniform(-1, 1, shape).astype(np.float32)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)
    for backend in ("golden", "model"):
        outputs = simulate(compiled, inputs, backend=backend)
        for name, value in expected.items():
            np.testing.assert_array_equal(outputs[name], value)
    layer = next(layer for layer in compiled.layers if layer.op == "Resize")
    return compiled, layer


@pytest.mark.parametrize(("attrs", "factors"), [
    ({"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, (2, 2)),
    ({"coordinate_transformation_mode": "asymmetric", "nearest_mode": "round_prefer_floor"},
     (2, 2)),
    ({"coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor"},
     (2, 3)),
    ({"coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_ceil"},
     (3, 2)),
    ({"coordinate_transformation_mode": "pytorch_half_pixel",
      "nearest_mode": "round_prefer_floor"}, (2, 2)),
    ({}, (2, 1)),  # Resize-13's defaults: half_pixel, round_prefer_floor
])  # fmt: skip
def test_integer_upsampling_loads_once_and_copies_each_repeat(attrs, factors):  # type: ignore[no-untyped-def]
    fh, fw = factors
    compiled, layer = _run(_resize(scales=[1, 1, fh, fw], mode="nearest", **attrs))
    assert layer.unit is LayerUnit.LAYOUT
    code = compiled.program.instructions[layer.first:layer.end]
    loads = sum(isinstance(i, Load) for i in code)
    assert sum(isinstance(i, Copy) for i in code) == fh * fw * loads


def test_upsampling_by_sizes():
    compiled, layer = _run(_resize(sizes=[1, 3, 8, 15], mode="nearest",
                                   coordinate_transformation_mode="asymmetric",
                                   nearest_mode="floor"))  # fmt: skip
    assert layer.unit is LayerUnit.LAYOUT
    assert compiled.program.tensor("r").shape == (1, 3, 8, 15)


def test_downsampling_by_an_integer_step_is_a_strided_copy():
    g = _resize(scales=[1, 1, 0.5, 0.5], mode="nearest", shape=(1, 3, 4, 6),
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    _, layer = _run(g, shape=(1, 3, 4, 6))
    assert layer.unit is LayerUnit.LAYOUT
    assert layer.reason == "LOAD + COPY"


@pytest.mark.parametrize(("attrs", "scales"), [
    ({"coordinate_transformation_mode": "asymmetric", "nearest_mode": "round_prefer_ceil"},
     [1, 1, 2, 2]),
    ({"coordinate_transformation_mode": "asymmetric", "nearest_mode": "ceil"}, [1, 1, 2, 2]),
    ({"coordinate_transformation_mode": "half_pixel", "nearest_mode": "floor"},  # 0, 0, 0, 1
     [1, 1, 2, 2]),
    # align_corners 4 -> 12: 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3
    ({"coordinate_transformation_mode": "align_corners", "nearest_mode": "round_prefer_floor"},
     [1, 1, 3, 1]),
])  # fmt: skip
def test_nearest_modes_that_do_not_repeat_run_on_the_host(attrs, scales):  # type: ignore[no-untyped-def]
    _, layer = _run(_resize(scales=scales, mode="nearest", **attrs))
    assert layer.unit is LayerUnit.HOST
    assert layer.reason == NOT_REPEATED


def test_align_corners_that_happens_to_repeat_runs_as_layout():
    """align_corners 4 -> 8 selects 0, 0, 1, 1, 2, 2, 3, 3 (x = i * 3 / 7, rounded): a
    repetition, found from the addresses."""
    _, layer = _run(_resize(scales=[1, 1, 2, 2], mode="nearest", nearest_mode="round_prefer_floor",
                            coordinate_transformation_mode="align_corners"))
    assert layer.unit is LayerUnit.LAYOUT


def test_a_non_integer_factor_runs_on_the_host():
    _, layer = _run(_resize(scales=[1, 1, 1.5, 2], mode="nearest",
                            coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
    assert layer.unit is LayerUnit.HOST
    assert layer.reason == NOT_REPEATED  # W is enlarged by 2, but H by 1.5


def test_a_resize_that_enlarges_no_axis_by_an_integer_factor_runs_on_the_host():
    _, layer = _run(_resize(scales=[1, 1, 1.5, 1], mode="nearest",
                            coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
    assert layer.unit is LayerUnit.HOST
    assert layer.reason == NOT_STRIDED


def test_a_linear_resize_runs_on_the_host_with_the_reason():
    g = _resize(scales=[1, 1, 2, 2], mode="linear", dtype=DataType.FLOAT)
    _, layer = _run(g, shape=(1, 3, 4, 5))
    assert layer.unit is LayerUnit.HOST
    assert layer.reason == LINEAR_RESIZE


def test_a_row_major_rank_3_resize_repeats_elements_too():
    g = _resize(scales=[1, 1, 3], mode="nearest", shape=(2, 3, 5),
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    _, layer = _run(g, shape=(2, 3, 5))
    assert layer.unit is LayerUnit.LAYOUT


def test_an_upsampling_read_only_by_a_concat_writes_into_its_slice():
    scales = Tensor("scales", DataType.FLOAT, np.array([1, 1, 2, 2], np.float32))
    attrs = Attrs({"mode": "nearest", "nearest_mode": "floor",
                   "coordinate_transformation_mode": "asymmetric"})
    nodes = [node("QMaxPool", ["x"], "p", kernel_shape=(1, 1)),
             Node("Resize", ("p", "", "scales"), ("r",), domain="", version=13, name="resize",
                  attrs=attrs),
             node("QMaxPool", ["w"], "q", kernel_shape=(1, 1)),
             node("Concat", ["q", "r"], "c", domain="", axis=1),
             node("QMaxPool", ["c"], "y", kernel_shape=(1, 1))]
    g = graph({"x": (I8, (1, 3, 2, 3)), "w": (I8, (1, 2, 4, 6))}, {"y": I8}, nodes, [scales])
    compiled = compile_model(g, CONFIG)
    inputs = {"x": random_input(I8, (1, 3, 2, 3), 6), "w": random_input(I8, (1, 2, 4, 6), 7)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs, backend="model")["y"], expected)
    concat = next(layer for layer in compiled.layers if layer.op == "Concat")
    assert (concat.count, concat.reason) == (0, "2 inputs written in place, 0 copied")
    c, r = compiled.program.tensor("c"), compiled.program.tensor("r")
    assert (r.address, r.strides[1:]) == (c.address + 2, c.strides[1:])  # channels 2..4 of c


def test_a_uint8_upsampling_keeps_its_bytes():
    """A QOperator export resizes uint8 integers: moved as bytes (no sign flip needed)."""
    u8 = DataType.UINT8
    scales = Tensor("scales", DataType.FLOAT, np.array([1, 1, 3, 2], np.float32))
    nodes = [node("QMaxPool", ["x"], "p", kernel_shape=(1, 1)),
             Node("Resize", ("p", "", "scales"), ("r",), domain="", version=13, name="resize",
                  attrs=Attrs({"mode": "nearest", "nearest_mode": "floor",
                               "coordinate_transformation_mode": "asymmetric"})),
             node("QMaxPool", ["r"], "y", kernel_shape=(1, 1))]
    g = graph({"x": (u8, (1, 3, 2, 3))}, {"y": u8}, nodes, [scales])
    compiled = compile_model(g, CONFIG)
    inputs = {"x": random_input(u8, (1, 3, 2, 3), 8)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs, backend="model")["y"], expected)
    assert next(layer for layer in compiled.layers if layer.op == "Resize").unit is LayerUnit.LAYOUT
