"""Drive a `SystolicArray` with whole tiles and return its results and cycle stamps.

`run_ws` and `run_os` (also on a `Dataflow.BOTH` array, in that mode) feed the operand streams from separate producers and collect `o_c` with a
consumer, all started at cycle 0, and reassemble the output beats into one C tile per input
tile. `expected_ws_cycles` and `expected_os_cycles` state, independently of the RTL, the cycle
in which each beat is taken and each result leaves when the streams are always valid and
`o_c` is always ready; `reference_matmul` is the exact integer result.
"""

import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from amaranth.sim import Simulator

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.systolic_array import (
    SystolicArray,
    a_payload_layout,
    b_payload_layout,
    c_payload_layout,
    weights_payload_layout,
)

from .streams import field, pack, stream_get, stream_put, unpack_array

Tile = tuple[np.ndarray, np.ndarray]


@dataclass
class ArrayRun:
    """What one simulation produced: C tiles and the cycle stamps of every stream."""

    results: list[np.ndarray]
    taken: dict[str, list[int]]  # cycles in which each input beat was taken, by stream
    out_cycles: list[int]  # cycles in which each o_c beat was taken
    out_rows: list[int]  # OS: the `row` field of each o_c beat


def reference_matmul(a: np.ndarray, b: np.ndarray, acc_width: int) -> np.ndarray:
    """Return A·B exactly, wrapped to signed `acc_width` bits."""
    exact = a.astype(np.int64) @ b.astype(np.int64)
    modulus = 1 << acc_width
    return ((exact + (modulus >> 1)) % modulus) - (modulus >> 1)


def random_tiles(rng: np.random.Generator, config: ArrayConfig, lengths: list[int]) -> list[Tile]:
    """Return random tiles A (length x rows) and B (rows x cols) (WS) or A (rows x length) and
    B (length x cols) (OS), over the full signed operand ranges."""
    lo_a, hi_a = -(1 << (config.input_width - 1)), 1 << (config.input_width - 1)
    lo_b, hi_b = -(1 << (config.weight_width - 1)), 1 << (config.weight_width - 1)
    tiles = []
    for length in lengths:
        if config.dataflow is Dataflow.WS:
            a_shape, b_shape = (length, config.rows), (config.rows, config.cols)
        else:
            a_shape, b_shape = (config.rows, length), (length, config.cols)
        tiles.append((rng.integers(lo_a, hi_a, a_shape), rng.integers(lo_b, hi_b, b_shape)))
    return tiles


def _simulate(dut: SystolicArray, inputs: dict[str, list[int]], count: int, seed: int,
              valid_probability: float, ready_probability: float) -> tuple[dict, list, list]:
    rng = random.Random(seed)
    taken: dict[str, list[int]] = {}
    received: dict[str, list[int]] = {}

    def producer(name: str, beats: list[int], stream_rng: random.Random) -> Callable:
        async def testbench(ctx):  # type: ignore[no-untyped-def]
            taken[name] = await stream_put(ctx, getattr(dut, name), beats, rng=stream_rng,
                                           valid_probability=valid_probability)
        return testbench

    async def consumer(ctx):  # type: ignore[no-untyped-def]
        beats, cycles = await stream_get(ctx, dut.o_c, count, rng=random.Random(rng.random()),
                                         ready_probability=ready_probability)
        received["beats"], received["cycles"] = beats, cycles

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    if dut.config.dataflow is Dataflow.BOTH and "i_b" in inputs:
        async def output_stationary(ctx):  # type: ignore[no-untyped-def]
            ctx.set(dut.i_os, 1)  # (before the first clock edge)
        sim.add_testbench(output_stationary)
    for name, beats in inputs.items():
        sim.add_testbench(producer(name, beats, random.Random(rng.random())))
    sim.add_testbench(consumer)
    sim.run()
    return taken, received["beats"], received["cycles"]


def run_ws(config: ArrayConfig, tiles: list[Tile], *, seed: int = 0,
           valid_probability: float = 1.0, ready_probability: float = 1.0) -> ArrayRun:
    """Simulate weight-stationary tiles (A: M x rows, B: rows x cols)."""
    dut = SystolicArray(config)
    w_layout, a_layout = weights_payload_layout(config), a_payload_layout(config)
    weights = [pack(w_layout, {"data": [int(x) for x in b_row]}) for _, b in tiles for b_row in b]
    acts = [pack(a_layout, {"data": [int(x) for x in a_row], "last": int(m == len(a) - 1)})
            for a, _ in tiles for m, a_row in enumerate(a)]
    taken, beats, cycles = _simulate(dut, {"i_weights": weights, "i_a": acts}, len(acts), seed,
                                     valid_probability, ready_probability)
    c_layout = c_payload_layout(config)
    rows_out = [unpack_array(bits, config.acc_width, config.cols) for bits in beats]
    lasts = [field(c_layout, bits, "last") for bits in beats]
    results, start = [], 0
    for a, _ in tiles:
        end = start + len(a)
        assert lasts[start:end] == [0] * (len(a) - 1) + [1], "o_c.last does not end the tile"
        results.append(np.array(rows_out[start:end], dtype=np.int64))
        start = end
    return ArrayRun(results, taken, cycles, [])


def run_os(config: ArrayConfig, tiles: list[Tile], *, seed: int = 0,
           valid_probability: float = 1.0, ready_probability: float = 1.0) -> ArrayRun:
    """Simulate output-stationary tiles (A: rows x K, B: K x cols)."""
    dut = SystolicArray(config)
    a_layout, b_layout = a_payload_layout(config), b_payload_layout(config)
    acts = [pack(a_layout, {"data": [int(x) for x in a[:, k]], "last": int(k == a.shape[1] - 1)})
            for a, _ in tiles for k in range(a.shape[1])]
    weights = [pack(b_layout, {"data": [int(x) for x in b_row]}) for _, b in tiles for b_row in b]
    count = config.rows * len(tiles)
    taken, beats, cycles = _simulate(dut, {"i_a": acts, "i_b": weights}, count, seed,
                                     valid_probability, ready_probability)
    c_layout = c_payload_layout(config)
    out_rows = [field(c_layout, bits, "row") for bits in beats]
    lasts = [field(c_layout, bits, "last") for bits in beats]
    results = []
    for t in range(len(tiles)):
        beat_range = range(t * config.rows, (t + 1) * config.rows)
        tile = np.zeros((config.rows, config.cols), dtype=np.int64)
        for index in beat_range:
            tile[out_rows[index]] = unpack_array(beats[index], config.acc_width, config.cols)
        assert [lasts[i] for i in beat_range] == [0] * (config.rows - 1) + [1], \
            "o_c.last does not end the tile"
        results.append(tile)
    return ArrayRun(results, taken, cycles, out_rows)


def expected_ws_cycles(rows: int, cols: int, lengths: list[int]) -> tuple[list[int], list[int]]:
    """Return the cycles in which each A beat is taken and each C beat leaves (WS, fed
    continuously): weights of tile 0 take cycles 0..rows-1; tile t+1 starts max(M_t, rows)
    cycles after tile t; each output leaves rows + cols - 1 cycles after its input."""
    a_cycles, start = [], rows
    for length in lengths:
        a_cycles += [start + m for m in range(length)]
        start += max(length, rows)
    return a_cycles, [cycle + rows + cols - 1 for cycle in a_cycles]


def expected_os_cycles(rows: int, cols: int, lengths: list[int]) -> tuple[list[int], list[int]]:
    """Return the cycles in which each A/B beat is taken and each C beat leaves (OS, fed
    continuously): tile ends are at least rows cycles apart; row i of a tile whose final beat
    was taken in cycle T leaves in cycle T + 2 * rows + cols - 1 - i, bottom row first."""
    a_cycles: list[int] = []
    c_cycles: list[int] = []
    cycle, previous_end = 0, -rows
    for length in lengths:
        for k in range(length):
            if k == length - 1:
                cycle = max(cycle, previous_end + rows)
            a_cycles.append(cycle)
            cycle += 1
        previous_end = a_cycles[-1]
        c_cycles += [previous_end + 2 * rows + cols - 1 - i for i in reversed(range(rows))]
    return a_cycles, c_cycles
