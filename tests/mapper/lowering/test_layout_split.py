"""Split as a layout operator (`layout_split`): each output an alias of contiguous rows or a
LOAD + COPY of a strided view, checked on the golden machine and the cycle model against the
reference executor."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.ir import Attrs, DataType, Node, Tensor
from systolic.isa.instructions import Copy, Load
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, random_input

I8 = DataType.INT8
CONFIG = ArrayConfig(rows=4, cols=4)
SHAPE = (1, 6, 3, 4)


def _split(outputs: tuple[str, ...], sizes: list[int] | None, version: int = 13,
           **attrs: object) -> tuple[Node, list[Tensor]]:  # fmt: skip
    inputs: tuple[str, ...] = ("p",)
    constants = []
    if sizes is not None:
        inputs += ("sizes",)
        constants.append(Tensor("sizes", DataType.INT64, np.array(sizes, np.int64)))
    split = Node("Split", inputs, outputs, domain="", version=version, name="split",
                 attrs=Attrs(attrs))  # type: ignore[arg-type]
    return split, constants


def _compile_and_check(split: Node, constants: list[Tensor], *, pooled: bool = True):  # type: ignore[no-untyped-def]
    """x -> QMaxPool p -> Split -> (QMaxPool of each part, or the parts as outputs)."""
    nodes = [node("QMaxPool", ["x"], "p", kernel_shape=(1, 1)), split]
    outputs = {}
    for name in split.outputs:
        if pooled:
            nodes.append(node("QMaxPool", [name], f"y_{name}", kernel_shape=(1, 1)))
            outputs[f"y_{name}"] = I8
        else:
            outputs[name] = I8
    g = graph({"x": (I8, SHAPE)}, outputs, nodes, constants)
    compiled = compile_model(g, CONFIG)
    inputs = {"x": random_input(I8, SHAPE, 11)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)
    for backend in ("golden", "model"):
        outputs_run = simulate(compiled, inputs, backend=backend)
        for name, value in expected.items():
            np.testing.assert_array_equal(outputs_run[name], value)
    return compiled, next(layer for layer in compiled.layers if layer.op == "Split")


@pytest.mark.parametrize(("sizes", "parts"), [([2, 4], 2), (None, 3), ([1, 2, 3], 3)])
def test_a_channel_split_of_a_channel_last_map_copies_each_part(sizes, parts):  # type: ignore[no-untyped-def]
    split, constants = _split(tuple(f"s{i}" for i in range(parts)), sizes, axis=1)
    compiled, layer = _compile_and_check(split, constants)
    assert layer.unit is LayerUnit.LAYOUT
    code = compiled.program.instructions[layer.first:layer.end]
    assert sum(isinstance(i, Copy) for i in code) >= parts
    assert all(isinstance(i, (Load, Copy)) for i in code)
    assert layer.reason.endswith(f"0 are strided views of it read in place, {parts} copied")


def test_a_split_of_rows_is_a_reinterpretation():
    split, constants = _split(("top", "bottom"), [1, 2], axis=2)
    compiled, layer = _compile_and_check(split, constants)
    assert (layer.unit, layer.count) == (LayerUnit.LAYOUT, 0)
    assert layer.reason.startswith("2 outputs re-interpret")
    p, bottom = compiled.program.tensor("p"), compiled.program.tensor("bottom")
    assert bottom.address == p.address + 1 * 4 * 6  # one row of W x C bytes further


def test_split_18_with_num_outputs():
    split, constants = _split(("a", "b", "c"), None, version=18, axis=1, num_outputs=3)
    _, layer = _compile_and_check(split, constants)
    assert layer.unit is LayerUnit.LAYOUT


def test_split_11_with_the_split_attribute():
    split, constants = _split(("a", "b"), None, version=11, axis=1, split=(4, 2))
    _, layer = _compile_and_check(split, constants)
    assert layer.unit is LayerUnit.LAYOUT


def test_split_parts_that_are_graph_outputs_get_their_own_bytes():
    split, constants = _split(("top", "bottom"), [2, 1], axis=2)
    compiled, layer = _compile_and_check(split, constants, pooled=False)
    assert layer.unit is LayerUnit.LAYOUT
    assert layer.count > 0  # copied: a graph output is never an alias
    assert compiled.program.tensor("bottom").address != compiled.program.tensor("p").address


def test_parts_only_tables_and_concats_read_are_strided_views_read_in_place():
    """Part a is read by a QTable alone, part b by a QTable and a Concat: neither is copied
    by the Split; the QTable LOADs and the Concat's copy read the map's channels in place."""
    split, constants = _split(("a", "b"), [2, 4], axis=1)
    table = Tensor("T", I8, np.random.default_rng(2).integers(-128, 128, 256).astype(np.int8))
    nodes = [node("QMaxPool", ["x"], "p", kernel_shape=(1, 1)), split,
             node("QTable", ["a", "T"], "ta", to=int(I8)),
             node("QTable", ["b", "T"], "tb", to=int(I8)),
             node("Concat", ["b", "ta"], "y", domain="", axis=1),
             node("QMaxPool", ["tb"], "z", kernel_shape=(1, 1))]
    g = graph({"x": (I8, SHAPE)}, {"y": I8, "z": I8}, nodes, [*constants, table])
    compiled = compile_model(g, CONFIG)
    inputs = {"x": random_input(I8, SHAPE, 12)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)
    for backend in ("golden", "model"):
        outputs = simulate(compiled, inputs, backend=backend)
        for name, value in expected.items():
            np.testing.assert_array_equal(outputs[name], value)
    layer = next(layer for layer in compiled.layers if layer.op == "Split")
    assert (layer.unit, layer.count) == (LayerUnit.LAYOUT, 0)
    assert "2 are strided views of it read in place" in layer.reason
    p, b = compiled.program.tensor("p"), compiled.program.tensor("b")
    assert (b.address, b.strides[1:]) == (p.address + 2, p.strides[1:])  # N = 1: any stride


def test_a_float_split_that_moves_data_runs_on_the_host():
    split = Node("Split", ("x",), ("a", "b"), domain="", version=13, name="split",
                 attrs=Attrs({"axis": 1}))
    g = graph({"x": (DataType.FLOAT, (1, 4, 2, 2))}, {"a": DataType.FLOAT, "b": DataType.FLOAT},
              [split])
    compiled = compile_model(g, CONFIG)
    (layer,) = compiled.layers
    assert layer.unit is LayerUnit.HOST
    assert "8-bit" in layer.reason
