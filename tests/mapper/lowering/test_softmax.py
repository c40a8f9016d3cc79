"""systolic.QSoftmax lowered to TABLE wide + LOAD + SOFTMAX, run on the golden machine against
the reference executor bit for bit (rows longer than dim, lengths not a multiple of dim, uint8
and int8, the 2-D coercion of an inner axis); the exp table image; the table rows kept until
TABLE (the rows' checks: test_row_operands)."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType, Tensor
from systolic.isa.instructions import Load, Softmax, Table
from systolic.isa.memories import Memory
from systolic.isa.program import LayerUnit
from systolic.isa.table import exp_table_rows
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.mapper.lowering.softmax import exp_table_image
from systolic.mapper.passes.fuse_softmax import exp_table
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, random_input

U8, I8 = DataType.UINT8, DataType.INT8

CONFIGS = {
    "4x4": ArrayConfig(rows=4, cols=4),
    "8x8-os": ArrayConfig(rows=8, cols=8, dataflow=Dataflow.OS),
    "16x16": ArrayConfig(rows=16, cols=16),
}


def _qsoftmax(x: str, y: str, y_type: DataType, axis: int = -1):  # type: ignore[no-untyped-def]
    zero = 0 if y_type == U8 else -128
    # 1 / (2^15 * s_y) for s_y = 1/256: multiplier 2^30, shift 7
    return node("QSoftmax", [x, "E"], y, axis=axis, multiplier=1 << 30, shift=7,
                y_zero_point=zero, y_type=int(y_type))  # fmt: skip


def _check(compiled: CompiledModel, inputs: dict[str, np.ndarray], output: str) -> None:
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)[output]
    np.testing.assert_array_equal(simulate(compiled, inputs)[output], expected)


def _table_kept(compiled: CompiledModel) -> None:
    """No instruction between the exp table's LOAD and its TABLE writes the table's rows."""
    code, config = compiled.program.instructions, compiled.config
    rows = exp_table_rows(config)
    for position, instr in enumerate(code):
        if not isinstance(instr, Table):
            continue
        assert instr.wide
        loads = [i for i in range(position) if isinstance(code[i], Load)
                 and code[i].row == instr.row and code[i].count == rows]  # fmt: skip
        assert loads, "the TABLE reads rows no LOAD filled"
        for other in code[loads[-1] + 1 : position]:
            for access in other.footprint(config):
                overlap = access.first <= instr.row + rows - 1 and instr.row <= access.last
                assert not (access.memory is Memory.SPAD_IN and access.write and overlap)


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("shape", [(1, 2, 5, 37), (3, 16), (7, 4), (40, 3), (50,), (2, 2, 33)])
@pytest.mark.parametrize("types", [(U8, U8), (I8, I8), (U8, I8)], ids=["u8", "i8", "u8-i8"])
def test_softmax_matches_the_reference(config, shape, types):  # type: ignore[no-untyped-def]
    x_type, y_type = types
    table = Tensor("E", DataType.UINT16, exp_table(0.04))
    g = graph({"x": (x_type, shape)}, {"y": y_type}, [_qsoftmax("x", "y", y_type)], [table])
    compiled = compile_model(g, config)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    code = compiled.program.instructions
    softmaxes = [i for i in code if isinstance(i, Softmax)]
    assert sum(s.m for s in softmaxes) == int(np.prod(shape[:-1]))
    assert {s.length for s in softmaxes} == {shape[-1]}
    _table_kept(compiled)
    _check(compiled, {"x": random_input(x_type, shape, 3)}, "y")


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_coerced_axis_normalises_the_flattened_rows(config):  # type: ignore[no-untyped-def]
    """axis 1 of [2, 3, 7]: rows of 21 elements (Softmax-11's 2-D coercion)."""
    table = Tensor("E", DataType.UINT16, exp_table(0.1))
    g = graph({"x": (I8, (2, 3, 7))}, {"y": U8}, [_qsoftmax("x", "y", U8, axis=1)], [table])
    compiled = compile_model(g, config)
    softmaxes = [i for i in compiled.program.instructions if isinstance(i, Softmax)]
    assert {s.length for s in softmaxes} == {21}
    _check(compiled, {"x": random_input(I8, (2, 3, 7), 5)}, "y")


def test_many_rows_use_both_buffers():  # type: ignore[no-untyped-def]
    """More rows than half of spad_in: several blocks, alternating halves."""
    config = ArrayConfig(rows=4, cols=4, spad_kib=2)  # 256 rows, 128 for the table
    table = Tensor("E", DataType.UINT16, exp_table(0.02))
    shape = (90, 9)
    g = graph({"x": (U8, shape)}, {"y": U8}, [_qsoftmax("x", "y", U8)], [table])
    compiled = compile_model(g, config)
    softmaxes = [i for i in compiled.program.instructions if isinstance(i, Softmax)]
    assert len(softmaxes) > 2 and len({s.in_row for s in softmaxes}) == 2
    _check(compiled, {"x": random_input(U8, shape, 9)}, "y")


def test_exp_table_image_is_little_endian_rows():  # type: ignore[no-untyped-def]
    config = ArrayConfig(rows=12, cols=12)
    table = exp_table(0.05)
    image = exp_table_image(table, config)
    assert len(image) == exp_table_rows(config) * 12 == 516
    decoded = np.frombuffer(image[:512], "<u2")
    np.testing.assert_array_equal(decoded, table)
    assert image[512:] == bytes(4)


def test_a_computed_table_sends_the_softmax_to_the_host():  # type: ignore[no-untyped-def]
    g = graph({"x": (U8, (2, 8)), "E": (DataType.UINT16, (256,))}, {"y": U8},
              [_qsoftmax("x", "y", U8)])  # fmt: skip
    compiled = compile_model(g, CONFIGS["4x4"])
    (layer,) = compiled.layers
    assert layer.unit is LayerUnit.HOST and "exp table is computed" in layer.reason


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_no_load_reads_past_the_tensor(config):  # type: ignore[no-untyped-def]
    """Ragged rows read `dim` wide into the next row, but never beyond X's last byte."""
    table = Tensor("E", DataType.UINT16, exp_table(0.04))
    shape = (5, 21)
    g = graph({"x": (U8, shape)}, {"y": U8}, [_qsoftmax("x", "y", U8)], [table])
    compiled = compile_model(g, config)
    x = next(t for t in compiled.program.tensors if t.name == "x")
    loads = [i for i in compiled.program.instructions
             if isinstance(i, Load) and x.address <= i.ext < x.address + 5 * 21]
    assert loads
    for load in loads:
        external = [a for a in load.footprint(config) if a.memory is Memory.EXTERNAL]
        assert all(a.last < x.address + 5 * 21 for a in external)
