"""Layers whose optional unit the configuration omits (`ArrayConfig.without`) run on the host
with the reason `absent_message` gives, bit-exact; a QTable is then not fused into its
producer's STOREs (mapper/lowering/units.py)."""

import numpy as np

from systolic.config import ArrayConfig, OptionalUnit
from systolic.config_units import absent_message
from systolic.ir import DataType, Tensor
from systolic.isa.instructions import Copy, Softmax, Store, Table
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.mapper.lowering.units import UNIT_OF_OP, absent_unit_reason, may_fuse_tables
from systolic.mapper.passes.fuse_softmax import exp_table
from systolic.reference.executor import run_graph
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, qconv, random_input

U8, I8 = DataType.UINT8, DataType.INT8
FULL = ArrayConfig(rows=4, cols=4)
ROW_UNIT, TABLES = OptionalUnit.ROW_UNIT, OptionalUnit.TABLES


def _without(*units: OptionalUnit) -> ArrayConfig:
    return ArrayConfig(rows=4, cols=4, without=frozenset(units))


def _equal_to_reference(compiled: CompiledModel, inputs: dict[str, np.ndarray]) -> None:
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)


def _conv_then_table():  # type: ignore[no-untyped-def]
    conv, constants = qconv("x", "c", 4, 6, seed=7)
    table = Tensor("T", I8, np.random.default_rng(4).integers(-128, 128, 256).astype(np.int8))
    nodes = [conv, node("QTable", ["c", "T"], "y", to=int(U8))]
    return graph({"x": (U8, (1, 4, 5, 5))}, {"y": U8}, nodes, [table, *constants])


def test_reason_names_the_unit_and_the_option() -> None:
    for op, unit in UNIT_OF_OP.items():
        assert absent_unit_reason(node(op, ["x"], "y"), FULL) is None
        assert absent_unit_reason(node(op, ["x"], "y"), _without(unit)) == absent_message(unit)
    assert absent_unit_reason(node("QAdd", ["x", "z"], "y"), _without(*OptionalUnit)) is None
    assert may_fuse_tables(_without(ROW_UNIT)) and not may_fuse_tables(_without(TABLES))
    assert absent_message(ROW_UNIT) == ("the accelerator is configured without its "
                                        "row-normalisation unit (--without row-unit)")


def test_without_tables_a_qtable_runs_on_the_host_unfused() -> None:
    compiled = compile_model(_conv_then_table(), _without(TABLES))
    layers = {layer.op: layer for layer in compiled.layers}
    assert layers["QConv"].unit is LayerUnit.ARRAY
    assert layers["QTable"].unit is LayerUnit.HOST
    assert layers["QTable"].reason == absent_message(TABLES)
    code = compiled.program.instructions
    assert not any(isinstance(i, Table) or isinstance(i, Store | Copy) and i.lut for i in code)
    _equal_to_reference(compiled, {"x": random_input(U8, (1, 4, 5, 5), 8)})


def test_without_row_unit_a_softmax_runs_on_the_host_and_tables_still_fuse() -> None:
    table = Tensor("E", DataType.UINT16, exp_table(0.04))
    softmax = node("QSoftmax", ["x", "E"], "y", axis=-1, multiplier=1 << 30, shift=7,
                   y_zero_point=0, y_type=int(U8))
    g = graph({"x": (U8, (3, 16))}, {"y": U8}, [softmax], [table])
    compiled = compile_model(g, _without(ROW_UNIT))
    (layer,) = compiled.layers
    assert layer.unit is LayerUnit.HOST and layer.reason == absent_message(ROW_UNIT)
    assert not any(isinstance(i, Softmax | Table) for i in compiled.program.instructions)
    _equal_to_reference(compiled, {"x": random_input(U8, (3, 16), 3)})
    fused = compile_model(_conv_then_table(), _without(ROW_UNIT))
    assert any(isinstance(i, Store) and i.lut for i in fused.program.instructions)
