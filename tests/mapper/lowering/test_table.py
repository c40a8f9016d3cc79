"""systolic.QTable lowered standalone (TABLE, LOAD + COPY with lut) and fused into the STOREs of
the QConv / QMatMul producing its input, run on the golden machine against the reference
executor bit for bit; the fusion choice; the table image; the table rows kept until TABLE."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType, Tensor
from systolic.isa.instructions import Copy, Load, Store, Table
from systolic.isa.memories import Memory
from systolic.isa.program import LayerUnit
from systolic.isa.table import table_rows
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.mapper.lowering.table import table_image
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import run_compiled, segment_runner, simulate

from .graphs import OPSETS, graph, node, qconv, qmatmul, random_input

U8, I8 = DataType.UINT8, DataType.INT8

CONFIGS = {
    "4x4": ArrayConfig(rows=4, cols=4),
    "8x8-os": ArrayConfig(rows=8, cols=8, dataflow=Dataflow.OS),
    "16x16": ArrayConfig(rows=16, cols=16),
}


def _table(seed: int = 0) -> Tensor:
    values = np.random.default_rng(seed).integers(-128, 128, 256).astype(np.int8)
    return Tensor("T", I8, values)


def _qtable(x: str, y: str, to: DataType):  # type: ignore[no-untyped-def]
    return node("QTable", [x, "T"], y, to=int(to))


def _check(compiled: CompiledModel, inputs: dict[str, np.ndarray], output: str) -> None:
    """The golden machine's outputs equal the reference executor's, layer by layer."""
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)[output]
    np.testing.assert_array_equal(simulate(compiled, inputs)[output], expected)


def _table_kept(compiled: CompiledModel) -> None:
    """No instruction between the table's LOAD and its TABLE writes the table's rows."""
    code = compiled.program.instructions
    config = compiled.config
    for position, instr in enumerate(code):
        if not isinstance(instr, Table):
            continue
        first, last = instr.row, instr.row + table_rows(config) - 1
        loads = [i for i in range(position) if isinstance(code[i], Load)
                 and code[i].row == first and code[i].count == table_rows(config)]  # fmt: skip
        assert loads, "the TABLE reads rows no LOAD filled"
        for other in code[loads[-1] + 1 : position]:
            for access in other.footprint(config):
                overlap = access.first <= last and first <= access.last
                assert not (access.memory is Memory.SPAD_IN and access.write and overlap)


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("shape", [(1, 5, 6, 7), (2, 9, 3, 4), (1, 6, 10), (3, 13), (17,)])
@pytest.mark.parametrize("types", [(U8, U8), (I8, I8), (U8, I8), (I8, U8)],
                         ids=["u8", "i8", "u8-i8", "i8-u8"])  # fmt: skip
def test_standalone_table_matches_the_reference(config, shape, types):  # type: ignore[no-untyped-def]
    x_type, y_type = types
    g = graph({"x": (x_type, shape)}, {"y": y_type}, [_qtable("x", "y", y_type)], [_table()])
    compiled = compile_model(g, config)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    code = compiled.program.instructions
    assert sum(isinstance(i, Table) for i in code) == 1
    copies = [i for i in code if isinstance(i, Copy)]
    assert copies and all(c.lut for c in copies)
    assert sum(c.m * c.lanes for c in copies) == int(np.prod(shape))
    _table_kept(compiled)
    _check(compiled, {"x": random_input(x_type, shape, 1)}, "y")


def test_standalone_table_with_a_tiny_scratchpad():
    """dim 3: 86 table rows; the copy blocks share the rest of a 1 KiB spad_in."""
    config = ArrayConfig(rows=2, cols=3, spad_kib=1)
    shape = (1, 4, 9, 11)
    g = graph({"x": (U8, shape)}, {"y": U8}, [_qtable("x", "y", U8)], [_table(3)])
    compiled = compile_model(g, config)
    _table_kept(compiled)
    _check(compiled, {"x": random_input(U8, shape, 2)}, "y")


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("types", [(U8, U8), (I8, I8), (U8, I8), (I8, U8)],
                         ids=["u8", "i8", "u8-i8", "i8-u8"])  # fmt: skip
def test_table_fused_into_a_convolution(config, types):  # type: ignore[no-untyped-def]
    conv_type, y_type = types
    conv, constants = qconv("x", "c", 5, 11, seed=3, y_type=conv_type,
                            y_zp=128 if conv_type == U8 else -3)  # fmt: skip
    g = graph({"x": (U8, (2, 5, 6, 7))}, {"y": y_type}, [conv, _qtable("c", "y", y_type)],
              [_table(1), *constants])  # fmt: skip
    compiled = compile_model(g, config)
    conv_layer, table_layer = compiled.layers
    assert conv_layer.unit is LayerUnit.ARRAY
    assert (table_layer.unit, table_layer.count) == (LayerUnit.VECTOR, 0)
    assert "fused" in table_layer.reason
    assert "c" not in compiled.program.tensors_by_name  # the conv writes y only
    code = compiled.program.instructions
    stores = [i for i, instr in enumerate(code) if isinstance(instr, Store)]
    tables = [i for i, instr in enumerate(code) if isinstance(instr, Table)]
    assert len(tables) == 1 and tables[0] < stores[0]
    assert all(code[i].lut for i in stores)
    _table_kept(compiled)
    _check(compiled, {"x": random_input(U8, (2, 5, 6, 7), 4)}, "y")


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_table_fused_into_a_matrix_product(config):  # type: ignore[no-untyped-def]
    matmul, constants = qmatmul("a", "c", 21, 13, seed=6)
    g = graph({"a": (I8, (2, 7, 21))}, {"y": U8}, [matmul, _qtable("c", "y", U8)],
              [_table(2), *constants])  # fmt: skip
    compiled = compile_model(g, config)
    assert compiled.layers[1].count == 0 and "fused" in compiled.layers[1].reason
    stores = [i for i in compiled.program.instructions if isinstance(i, Store)]
    assert stores and all(s.lut and s.flip_sign for s in stores)
    _check(compiled, {"a": random_input(I8, (2, 7, 21), 5)}, "y")


def _conv_then_table(outputs: dict[str, DataType], extra=()):  # type: ignore[no-untyped-def]
    conv, constants = qconv("x", "c", 4, 6, seed=7)
    nodes = [conv, _qtable("c", "y", U8), *extra]
    return graph({"x": (U8, (1, 4, 5, 5))}, outputs, nodes, [_table(4), *constants])


@pytest.mark.parametrize(
    "case",
    [
        ({"y": U8, "c": U8}, ()),  # the conv's output is a graph output
        ({"y": U8, "z": U8}, (node("QTable", ["c", "T"], "z", to=int(U8)),)),  # two readers
    ],
    ids=["graph-output", "two-readers"],
)
def test_table_stays_standalone_when_the_output_is_needed(case):  # type: ignore[no-untyped-def]
    outputs, extra = case
    compiled = compile_model(_conv_then_table(outputs, extra), CONFIGS["4x4"])
    tables = [layer for layer in compiled.layers if layer.op == "QTable"]
    assert tables and all(layer.count > 0 and "fused" not in layer.reason for layer in tables)
    assert not any(isinstance(i, Store) and i.lut for i in compiled.program.instructions)
    x = {"x": random_input(U8, (1, 4, 5, 5), 8)}
    for name in outputs:
        _check(compiled, x, name)


def test_fusion_saves_the_pass_over_memory():
    """Fused: the conv's STOREs apply the table (one LOAD and one TABLE more than the conv
    alone); standalone: a LOAD + COPY per block of the conv's output besides, and more
    cycles on the cycle model."""
    config = CONFIGS["4x4"]
    fused = compile_model(_conv_then_table({"y": U8}), config)
    alone = compile_model(_conv_then_table({"y": U8, "c": U8}), config)
    conv = graph({"x": (U8, (1, 4, 5, 5))}, {"c": U8}, [qconv("x", "c", 4, 6, seed=7)[0]],
                 qconv("x", "c", 4, 6, seed=7)[1])  # fmt: skip
    plain = compile_model(conv, config)
    n_fused = len(fused.program.instructions)
    n_alone = len(alone.program.instructions)
    assert n_fused == len(plain.program.instructions) + 2
    assert n_alone > n_fused
    assert any(isinstance(i, Copy) for i in alone.program.instructions)
    assert not any(isinstance(i, Copy) for i in fused.program.instructions)
    x = {"x": random_input(U8, (1, 4, 5, 5), 9)}
    cycles = [sum(run.total_cycles for run in run_compiled(c, x, segment_runner("model")).runs)
              for c in (plain, fused, alone)]  # fmt: skip
    assert cycles[0] < cycles[1] < cycles[2]


def test_table_image_pads_to_whole_rows():
    config = ArrayConfig(rows=2, cols=3)
    table = np.arange(-128, 128)
    image = table_image(table, config)
    assert len(image) == table_rows(config) * config.dim == 258
    values = np.frombuffer(image, dtype=np.int8)
    np.testing.assert_array_equal(values[:256], table)
    assert not values[256:].any()


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_qdq_sigmoid_after_a_conv_runs_in_the_stores_on_the_timing_model(config):  # type: ignore[no-untyped-def]
    """End to end: the passes make the Sigmoid a QTable, the compiler fuses it, and the
    cycle model (golden values) is bit-exact with the reference."""
    from systolic.mapper.importer import load_model_bytes
    from systolic.mapper.passes.pipeline import run_passes

    from .qdq_models import conv_sigmoid_qdq

    integer, _ = run_passes(load_model_bytes(conv_sigmoid_qdq().SerializeToString()))
    compiled = compile_model(integer, config)
    table = next(layer for layer in compiled.layers if layer.op == "QTable")
    assert table.count == 0 and "STORE with lut" in table.reason
    x = {"x": np.random.default_rng(9).standard_normal((1, 3, 6, 6)).astype(np.float32)}
    assert check_layers(compiled, x, backend="model") is None


def test_a_computed_table_runs_on_the_host():
    """A table some node computes (here a copy of a graph input) cannot be TABLEd at compile
    time: the QTable runs on the host, still bit-exact."""
    g = graph({"x": (U8, (1, 3, 4, 4)), "t": (I8, (256,))}, {"y": U8},
              [node("QTable", ["x", "t"], "y", to=int(U8))])  # fmt: skip
    compiled = compile_model(g, CONFIGS["4x4"])
    assert compiled.layers[0].unit is LayerUnit.HOST
    assert "not a constant" in compiled.layers[0].reason
    inputs = {"x": random_input(U8, (1, 3, 4, 4), 3), "t": random_input(I8, (256,), 4)}
    _check(compiled, inputs, "y")


@pytest.mark.parametrize("config", [CONFIGS["4x4"], CONFIGS["8x8-os"]], ids=["4x4", "8x8-os"])
def test_fused_table_writes_into_a_halo_and_into_a_concat_slice(config):  # type: ignore[no-untyped-def]
    """The conv's STOREs write the QTable's output where it lives: inside the halo a padded
    conv reads it with, or straight into its slice of a Concat."""
    shape = (1, 4, 5, 5)
    first, k1 = qconv("x", "c", 4, 6, seed=3)
    padded, k2 = qconv("t", "z", 6, 5, seed=4, x_zp=128)
    other, k3 = qconv("x", "d", 4, 3, seed=5)
    concat = node("Concat", ["t", "d"], "y", domain="", axis=1)
    x = {"x": random_input(U8, shape, 1)}
    for nodes, out, constants in (([first, _qtable("c", "t", U8), padded], "z", [*k1, *k2]),
                                  ([first, _qtable("c", "t", U8), other, concat], "y",
                                   [*k1, *k3])):  # fmt: skip
        compiled = compile_model(graph({"x": (U8, shape)}, {out: U8}, nodes,
                                       [_table(5), *constants]), config)  # fmt: skip
        layers = {layer.name: layer for layer in compiled.layers}
        assert layers["t"].count == 0 and "STORE with lut" in layers["t"].reason
        _check(compiled, x, out)
    assert layers["y"].reason == "2 inputs written in place, 0 copied"
