"""SystolicArray: exact results, exact cycle counts and backpressure, both dataflows."""

import time

import numpy as np
import pytest
from amaranth import Fragment
from amaranth.back import verilog

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.systolic_array import SystolicArray

from .array_harness import (
    expected_os_cycles,
    expected_ws_cycles,
    random_tiles,
    reference_matmul,
    run_os,
    run_ws,
)

DATAFLOWS = [Dataflow.WS, Dataflow.OS]
SIZES = [(1, 1), (2, 3), (4, 4), (8, 8)]


def _run(config: ArrayConfig, tiles: list, **options: float):  # type: ignore[no-untyped-def]
    return (run_ws if config.dataflow is Dataflow.WS else run_os)(config, tiles, **options)


def _expected_cycles(config: ArrayConfig, lengths: list[int]) -> tuple[list[int], list[int]]:
    expected = expected_ws_cycles if config.dataflow is Dataflow.WS else expected_os_cycles
    return expected(config.rows, config.cols, lengths)


def _check_results(config: ArrayConfig, tiles: list, results: list[np.ndarray]) -> None:
    assert len(results) == len(tiles)
    for (a, b), got in zip(tiles, results):
        np.testing.assert_array_equal(got, reference_matmul(a, b, config.acc_width))


@pytest.mark.parametrize("dataflow", DATAFLOWS, ids=lambda d: d.value)
@pytest.mark.parametrize(("rows", "cols"), SIZES, ids=lambda s: str(s))
def test_tiles_are_exact_and_take_the_stated_cycles(dataflow: Dataflow, rows: int,
                                                    cols: int) -> None:
    config = ArrayConfig(rows=rows, cols=cols, dataflow=dataflow)
    lengths = [1, rows + 3, 2, rows, 1]  # M or K of 1, shorter and longer than the array
    tiles = random_tiles(np.random.default_rng(rows * 100 + cols), config, lengths)
    run = _run(config, tiles)
    _check_results(config, tiles, run.results)
    taken, out_cycles = _expected_cycles(config, lengths)
    assert run.taken["i_a"] == taken
    assert run.out_cycles == out_cycles
    if dataflow is Dataflow.OS:
        assert run.taken["i_b"] == taken
        assert run.out_rows == list(reversed(range(rows))) * len(tiles)


def _consecutive(cycles: list[int]) -> bool:
    return cycles == list(range(cycles[0], cycles[0] + len(cycles)))


@pytest.mark.parametrize("dataflow", DATAFLOWS, ids=lambda d: d.value)
@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (2, 3), (4, 4), (8, 8)], ids=str)
def test_back_to_back_tiles_leave_no_idle_cycle(dataflow: Dataflow, rows: int,
                                                cols: int) -> None:
    # Tiles of M (K) >= rows fed continuously: an input beat is taken in every cycle from the
    # first tile's first beat to the last tile's last beat, and the whole job takes exactly the
    # stated number of cycles from the first input to the last output.
    config = ArrayConfig(rows=rows, cols=cols, dataflow=dataflow)
    lengths = [rows, rows + 5, 2 * rows, rows]
    tiles = random_tiles(np.random.default_rng(rows + cols), config, lengths)
    run = _run(config, tiles)
    _check_results(config, tiles, run.results)
    assert _consecutive(run.taken["i_a"])
    if dataflow is Dataflow.WS:
        # One output per input, so the outputs form one unbroken run as well.
        assert _consecutive(run.out_cycles)
        # rows cycles of weight preload, then sum(M) rows, then the rows + cols - 1 latency.
        assert run.taken["i_weights"][0] == 0
        assert run.out_cycles[-1] + 1 == rows + sum(lengths) + rows + cols - 1
    else:
        # sum(K) beats, then 2 * rows + cols - 1 cycles until row 0 of the last tile leaves.
        assert run.taken["i_a"][0] == 0
        assert run.out_cycles[-1] + 1 == sum(lengths) + 2 * rows + cols - 1


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (3, 2), (4, 4)], ids=str)
def test_output_stationary_tiles_of_k_equal_rows_stream_out_unbroken(rows: int,
                                                                     cols: int) -> None:
    config = ArrayConfig(rows=rows, cols=cols, dataflow=Dataflow.OS)
    tiles = random_tiles(np.random.default_rng(rows * cols), config, [rows] * 4)
    run = _run(config, tiles)
    _check_results(config, tiles, run.results)
    assert _consecutive(run.taken["i_a"]) and _consecutive(run.out_cycles)
    assert run.out_cycles[0] == rows - 1 + rows + cols


@pytest.mark.parametrize("dataflow", DATAFLOWS, ids=lambda d: d.value)
@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (2, 3), (4, 4), (8, 8)], ids=str)
def test_random_valid_and_ready_keep_results_exact(dataflow: Dataflow, rows: int,
                                                   cols: int) -> None:
    config = ArrayConfig(rows=rows, cols=cols, dataflow=dataflow)
    rng = np.random.default_rng(rows * 7 + cols)
    lengths = [int(x) for x in rng.integers(1, 2 * rows + 3, 5)]
    tiles = random_tiles(rng, config, lengths)
    run = _run(config, tiles, seed=rows + cols, valid_probability=0.6, ready_probability=0.5)
    _check_results(config, tiles, run.results)
    # Stalls only ever delay: nothing leaves earlier than it would when fed continuously.
    _, out_cycles = _expected_cycles(config, lengths)
    assert all(got >= fastest for got, fastest in zip(run.out_cycles, out_cycles))
    assert run.out_cycles[-1] > out_cycles[-1]


@pytest.mark.parametrize("dataflow", DATAFLOWS, ids=lambda d: d.value)
def test_ragged_tiles_zero_padded_upstream(dataflow: Dataflow) -> None:
    # A 3x2 @ 2x3 product on a 4x4 array: the unused lanes carry zeros.
    config = ArrayConfig(rows=4, cols=4, dataflow=dataflow)
    rng = np.random.default_rng(5)
    a, b = rng.integers(-128, 128, (3, 2)), rng.integers(-128, 128, (2, 3))
    if dataflow is Dataflow.WS:  # A is M x rows (here M = 3, K = 2 of 4 rows used)
        a_tile, b_tile = np.zeros((3, 4), np.int64), np.zeros((4, 4), np.int64)
        a_tile[:, :2], b_tile[:2, :3] = a, b
    else:  # A is rows x K (3 of 4 rows used, K = 2)
        a_tile, b_tile = np.zeros((4, 2), np.int64), np.zeros((2, 4), np.int64)
        a_tile[:3], b_tile[:, :3] = a, b
    run = _run(config, [(a_tile, b_tile)])
    np.testing.assert_array_equal(run.results[0][:3, :3], a @ b)
    assert not run.results[0][3:].any() and not run.results[0][:, 3:].any()


@pytest.mark.parametrize("dataflow", DATAFLOWS, ids=lambda d: d.value)
def test_extreme_operands_sum_exactly_in_32_bits(dataflow: Dataflow) -> None:
    config = ArrayConfig(rows=4, cols=4, dataflow=dataflow)
    length = 40
    if dataflow is Dataflow.WS:
        tiles = [(np.full((length, 4), -128), np.full((4, 4), -128)),
                 (np.full((length, 4), 127), np.full((4, 4), -128))]
    else:
        tiles = [(np.full((4, length), -128), np.full((length, 4), -128)),
                 (np.full((4, length), 127), np.full((length, 4), -128))]
    run = _run(config, tiles)
    _check_results(config, tiles, run.results)
    depth = 4 if dataflow is Dataflow.WS else length
    assert run.results[0][0, 0] == depth * 16384 and run.results[1][0, 0] == -depth * 16256


@pytest.mark.parametrize("dataflow", DATAFLOWS, ids=lambda d: d.value)
def test_narrow_accumulator_wraps_around(dataflow: Dataflow) -> None:
    # acc_width 16: four products of -128 * -128 sum to 65536, which wraps to 0; three to
    # 49152, which wraps to -16384.
    config = ArrayConfig(rows=4, cols=2, dataflow=dataflow, acc_width=16)
    rng = np.random.default_rng(16)
    if dataflow is Dataflow.WS:
        extreme = (np.full((2, 4), -128), np.full((4, 2), -128))
        three = (np.array([[-128, -128, -128, 0]] * 2), np.full((4, 2), -128))
    else:
        extreme = (np.full((4, 4), -128), np.full((4, 2), -128))
        three = (np.full((4, 3), -128), np.full((3, 2), -128))
    tiles = [extreme, three] + random_tiles(rng, config, [6, 9])
    run = _run(config, tiles)
    _check_results(config, tiles, run.results)
    assert (run.results[0] == 0).all() and (run.results[1] == -16384).all()


@pytest.mark.parametrize("dataflow", DATAFLOWS, ids=lambda d: d.value)
def test_16x16_array_is_exact(dataflow: Dataflow) -> None:
    config = ArrayConfig(rows=16, cols=16, dataflow=dataflow)
    lengths = [16, 20, 1]
    tiles = random_tiles(np.random.default_rng(1616), config, lengths)
    run = _run(config, tiles, seed=3, ready_probability=0.8)
    _check_results(config, tiles, run.results)


@pytest.mark.parametrize("dataflow", DATAFLOWS, ids=lambda d: d.value)
def test_8x8_array_converts_to_verilog(dataflow: Dataflow) -> None:
    start = time.perf_counter()
    text = verilog.convert(SystolicArray(ArrayConfig(rows=8, cols=8, dataflow=dataflow)),
                           name="systolic_array")
    assert "module systolic_array" in text
    assert "i_a__valid" in text and "o_c__ready" in text
    assert time.perf_counter() - start < 60


def test_config_must_be_an_array_config() -> None:
    with pytest.raises(TypeError, match=r"^config must be an ArrayConfig, not \(8, 8\)$"):
        SystolicArray((8, 8))  # type: ignore[arg-type]


def test_streams_follow_the_dataflow() -> None:
    ws = SystolicArray(ArrayConfig(rows=2, cols=3, dataflow=Dataflow.WS))
    os_ = SystolicArray(ArrayConfig(rows=2, cols=3, dataflow=Dataflow.OS))
    Fragment.get(ws, None), Fragment.get(os_, None)  # elaborate: both build
    assert set(ws.signature.members) == {"i_weights", "i_a", "o_c"}
    assert set(os_.signature.members) == {"i_a", "i_b", "o_c"}
    assert set(os_.o_c.payload.shape().members) == {"data", "last", "row"}
    assert set(ws.o_c.payload.shape().members) == {"data", "last"}


@pytest.mark.parametrize("mode", DATAFLOWS, ids=lambda d: d.value)
@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (2, 3), (4, 4)], ids=lambda s: str(s))
def test_an_array_of_both_dataflows_runs_each_as_its_own(mode: Dataflow, rows: int,
                                                          cols: int) -> None:
    """`Dataflow.BOTH` with `i_os` held at the mode: the same results and cycles as the array
    of that dataflow, also under random valid/ready."""
    config = ArrayConfig(rows=rows, cols=cols, dataflow=Dataflow.BOTH)
    own = ArrayConfig(rows=rows, cols=cols, dataflow=mode)
    lengths = [1, rows + 3, 2, rows, 1]
    tiles = random_tiles(np.random.default_rng(rows * 10 + cols), own, lengths)
    run = (run_ws if mode is Dataflow.WS else run_os)(config, tiles)
    _check_results(own, tiles, run.results)
    taken, out_cycles = _expected_cycles(own, lengths)
    assert run.taken["i_a"] == taken and run.out_cycles == out_cycles
    stalled = (run_ws if mode is Dataflow.WS else run_os)(
        config, tiles, seed=5, valid_probability=0.7, ready_probability=0.6)
    _check_results(own, tiles, stalled.results)


def test_an_array_of_both_dataflows_has_every_port() -> None:
    both = SystolicArray(ArrayConfig(rows=2, cols=3, dataflow=Dataflow.BOTH))
    Fragment.get(both, None)
    assert set(both.signature.members) == {"i_weights", "i_a", "i_b", "o_c", "i_os"}
    assert set(both.o_c.payload.shape().members) == {"data", "last", "row"}
