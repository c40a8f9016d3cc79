"""A residual add or a pool right after the convolution producing its input is interleaved
with it: the vector layer keeps no instructions, the program stays bit-exact, and it runs in
fewer cycles than the two layers one after the other."""

import importlib

import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType
from systolic.isa.instructions import Add, Pool
from systolic.isa.memories import Memory, depth
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.vector_overlap import INTERLEAVED, plan_overlap
from systolic.mapper.lowering.vector_tiles import SpadWindow
from systolic.sim.timing.layer_cycles import layer_cycles
from systolic.sim.timing.program_model import ProgramModel
from systolic.simulation.layer_check import check_layers

from .graphs import graph, node, qconv, random_input

COMPILER = importlib.import_module("systolic.mapper.lowering.compile_model")
U8 = DataType.UINT8
SHAPE = (1, 8, 12, 12)


def _conv_add():  # type: ignore[no-untyped-def]
    conv, constants = qconv("x", "a", 8, 8, seed=3)
    add = node("QAdd", ["a", "b"], "y", a_zero_point=3, b_zero_point=128,
               multiplier_a=1_518_500_250, multiplier_b=1_073_741_824, shift=0,
               y_zero_point=128, y_type=int(U8))  # fmt: skip
    return graph({"x": (U8, SHAPE), "b": (U8, SHAPE)}, {"y": U8}, [conv, add], constants)


def _conv_pool():  # type: ignore[no-untyped-def]
    conv, constants = qconv("x", "a", 8, 8, seed=4)
    pool = node("QMaxPool", ["a"], "y", kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    return graph({"x": (U8, SHAPE)}, {"y": U8}, [conv, pool], constants)


def _inputs(g):  # type: ignore[no-untyped-def]
    return {info.name: random_input(U8, SHAPE, seed) for seed, info in enumerate(g.inputs)}


def _cycles(compiled):  # type: ignore[no-untyped-def]
    program = compiled.program
    return ProgramModel(program.config).run(program.instructions).total_cycles


@pytest.mark.parametrize("make", [_conv_add, _conv_pool], ids=["add", "maxpool"])
@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
def test_the_vector_layer_runs_inside_the_convolution_bit_exact(make, dataflow, monkeypatch):
    g = make()
    config = ArrayConfig(rows=4, cols=4, dataflow=dataflow)
    compiled = compile_model(g, config)
    conv, vector = compiled.program.layers
    assert (vector.unit, vector.count) == (LayerUnit.VECTOR, 0)
    assert vector.reason.startswith(f"{INTERLEAVED} 'a'")
    code = compiled.program.instructions[conv.first:conv.end]
    assert any(isinstance(i, (Add, Pool)) for i in code)
    assert check_layers(compiled, _inputs(g)) is None
    monkeypatch.setattr(COMPILER, "plan_overlap", lambda *args: None)
    sequential = compile_model(g, config)
    assert [layer.count > 0 for layer in sequential.program.layers] == [True, True]
    assert _cycles(compiled) < _cycles(sequential)


def _window_adds(code, config):  # type: ignore[no-untyped-def]
    """A stand-in cycle model: the highest spad_in row an ADD reads (the interleaved ADDs read
    the window at the top of spad_in, the add lowered on its own the rows from 0)."""
    return max(instr.a_row for instr in code if isinstance(instr, Add))


def _conv1x1_add():  # type: ignore[no-untyped-def]
    g = _conv_add()
    conv, constants = qconv("x", "a", 8, 8, seed=3, kernel=1, pads=0)
    return graph({"x": (U8, SHAPE), "b": (U8, SHAPE)}, {"y": U8}, [conv, g.nodes[1]], constants)


@pytest.mark.parametrize(("make", "checked"), [(_conv1x1_add, True), (_conv_add, False)],
                         ids=["1x1", "3x3"])
def test_an_add_as_long_as_its_producer_stays_apart_when_the_cycle_model_says_so(
        make, checked):
    # (4x4: the add's 2 cycles per row of 4 lanes, 576, against the 1x1 convolution's ideal
    # 576 cycles: checked; the 3x3 one's 5,184: interleaved without asking)
    g = make()
    config = ArrayConfig(rows=4, cols=4)
    slower_apart = compile_model(g, config, layer_cycles=lambda *args: -_window_adds(*args))
    faster_apart = compile_model(g, config, layer_cycles=_window_adds)
    assert slower_apart.program.layers[1].count == 0  # (interleaved)
    assert (faster_apart.program.layers[1].count > 0) is checked
    for compiled in (slower_apart, faster_apart):
        assert check_layers(compiled, _inputs(g)) is None


def test_a_scratchpad_too_small_for_a_window_keeps_the_layers_apart():
    g = _conv_add()
    config = ArrayConfig(rows=4, cols=4, spad_kib=1)
    compiled = compile_model(g, config)
    assert [layer.count > 0 for layer in compiled.program.layers] == [True, True]
    assert check_layers(compiled, _inputs(g)) is None


def test_only_a_vector_node_reading_the_output_interleaves():
    config = ArrayConfig(rows=4, cols=4)
    g = compile_model(_conv_add(), config).graph  # (typed: every value's shape known)
    assert g is not None
    conv, add = g.nodes
    overlap = plan_overlap(conv, add, g, config)
    assert overlap is not None and overlap.vector is add
    assert overlap.producer.spad_kib < config.spad_kib
    assert overlap.window.first + overlap.window.rows == depth(config, Memory.SPAD_IN)
    assert overlap.window.first == depth(overlap.producer, Memory.SPAD_IN)
    other = node("QAdd", ["b", "b"], "z", multiplier_a=1 << 30, multiplier_b=1 << 30, shift=0)
    assert plan_overlap(conv, other, g, config) is None
    assert plan_overlap(conv, None, g, config) is None


def test_blocks_of_one_row_when_two_rows_would_take_over_a_quarter_of_spad_in():
    g = _conv_pool()  # 12 pixels a row: 2 x 5 input rows = 120 spad rows, 2 x 3 = 72
    config = ArrayConfig(rows=4, cols=4, spad_kib=3)  # 384 spad_in rows: a quarter is 96
    compiled = compile_model(g, config)
    _, pool = compiled.program.layers
    assert pool.count == 0 and pool.reason.startswith(INTERLEAVED)
    assert compiled.graph is not None
    overlap = plan_overlap(*compiled.graph.nodes, compiled.graph, config)
    assert overlap is not None and overlap.producer.spad_kib == 2  # one KiB: 128 rows >= 72
    assert overlap.window == SpadWindow(256, 128)
    assert check_layers(compiled, _inputs(g)) is None


def test_a_one_row_window_may_take_up_to_a_third_of_spad_in():
    g = _conv_pool()  # one-row blocks: 2 x 3 input rows of 12 pixels = 72 spad rows
    config = ArrayConfig(rows=4, cols=4, spad_kib=2)  # 256 spad_in rows: 64 < 72 <= 85
    compiled = compile_model(g, config)
    _, pool = compiled.program.layers
    assert pool.count == 0 and pool.reason.startswith(INTERLEAVED)
    assert compiled.graph is not None
    overlap = plan_overlap(*compiled.graph.nodes, compiled.graph, config)
    assert overlap is not None and overlap.window == SpadWindow(128, 128)
    assert check_layers(compiled, _inputs(g)) is None
    smaller = ArrayConfig(rows=4, cols=4, spad_kib=1)  # 128 rows: a third is 42 < 72
    assert plan_overlap(*compiled.graph.nodes, compiled.graph, smaller) is None


@pytest.mark.parametrize("make", [_conv_add, _conv_pool], ids=["add", "maxpool"])
def test_with_both_dataflows_the_blocks_join_the_chosen_code(make):
    g = make()
    config = ArrayConfig(rows=4, cols=4, dataflow=Dataflow.BOTH)
    compiled = compile_model(g, config, layer_cycles=layer_cycles)
    conv, vector = compiled.program.layers
    assert (vector.count, vector.first) == (0, conv.end)
    assert vector.reason.startswith(f"{INTERLEAVED} 'a'")
    code = compiled.program.instructions[conv.first:conv.end]
    assert any(isinstance(i, (Add, Pool)) for i in code)
    assert check_layers(compiled, _inputs(g)) is None
