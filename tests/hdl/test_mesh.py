"""Mesh: the grid alone, fed by a skew written out in the test, against exact matmuls.

These tests check the timing the `Mesh` docstring states, independently of the Skew component:
an input scheduled for (unskewed) time t enters row r / column c at cycle t + r / t + c.
"""

import numpy as np
import pytest
from amaranth import signed
from amaranth.lib import data
from amaranth.sim import Simulator

from systolic.config import Dataflow
from systolic.hdl.mesh import Mesh
from systolic.hdl.pe import os_west_layout, weight_lane_layout, ws_west_layout

from .array_harness import reference_matmul
from .streams import pack, unpack_array

SIZES = [(1, 1), (2, 3), (3, 2), (4, 4)]


def _run_mesh(mesh: Mesh, west: list[list[dict]], north: list[list]) -> list[list[int]]:
    """Drive `i_west`/`i_north` with one list of elements per cycle; return `o_south` per cycle."""
    west_layout = data.ArrayLayout(mesh.i_west.shape().elem_shape, mesh.rows)
    north_layout = data.ArrayLayout(mesh.i_north.shape().elem_shape, mesh.cols)
    west_bits = [pack(west_layout, cycle) for cycle in west]
    north_bits = [pack(north_layout, cycle) for cycle in north]
    south: list[list[int]] = []

    async def testbench(ctx):  # type: ignore[no-untyped-def]
        for w, n in zip(west_bits, north_bits):
            ctx.set(mesh.i_west.as_value(), w)
            ctx.set(mesh.i_north.as_value(), n)
            south.append(unpack_array(ctx.get(mesh.o_south.as_value()), mesh.acc_width,
                                      mesh.cols))
            await ctx.tick()

    sim = Simulator(mesh)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return south


@pytest.mark.parametrize(("rows", "cols"), SIZES)
def test_weight_stationary_mesh_double_buffers_weights(rows: int, cols: int) -> None:
    rng = np.random.default_rng(rows * 10 + cols)
    lengths = [rows + 2, 1, 3]
    tiles = [(rng.integers(-128, 128, (m, rows)), rng.integers(-128, 128, (rows, cols)))
             for m in lengths]
    # Unskewed schedule: weights of tile t+1 load while tile t computes (from its first row on).
    weights: dict[int, tuple[int, np.ndarray]] = {k: (k, tiles[0][1][k]) for k in range(rows)}
    acts: dict[int, tuple[np.ndarray, int]] = {}
    start = rows
    for t, (a, _) in enumerate(tiles):
        if t + 1 < len(tiles):
            weights.update({start + k: (k, tiles[t + 1][1][k]) for k in range(rows)})
        acts.update({start + m: (a[m], int(m == 0)) for m in range(len(a))})
        start += max(len(a), rows)
    total = start + rows + cols + 2
    zero_west = {"data": 0, "flip": 0}
    west = [[{"data": int(acts[t - k][0][k]), "flip": acts[t - k][1]} if t - k in acts
             else zero_west for k in range(rows)] for t in range(total)]
    north = [[{"valid": 1, "row": weights[t - n][0], "data": int(weights[t - n][1][n])}
              if t - n in weights else {"valid": 0, "row": 0, "data": 0} for n in range(cols)]
             for t in range(total)]
    mesh = Mesh(Dataflow.WS, rows=rows, cols=cols, input_width=8, weight_width=8, acc_width=32)
    assert mesh.i_west.shape().elem_shape == ws_west_layout(8)
    assert mesh.i_north.shape().elem_shape == weight_lane_layout(8, rows)
    south = _run_mesh(mesh, west, north)
    for (a, b), begin in zip(tiles, sorted(t for t, (_, flip) in acts.items() if flip)):
        got = np.array([[south[begin + m + rows + n][n] for n in range(cols)]
                        for m in range(len(a))])
        np.testing.assert_array_equal(got, reference_matmul(a, b, 32))


@pytest.mark.parametrize(("rows", "cols"), SIZES)
def test_output_stationary_mesh_drains_bottom_row_first(rows: int, cols: int) -> None:
    rng = np.random.default_rng(rows * 10 + cols + 5)
    lengths = [rows + 1, rows, 1]
    tiles = [(rng.integers(-128, 128, (rows, k)), rng.integers(-128, 128, (k, cols)))
             for k in lengths]
    # Unskewed schedule with a bubble before each tile; tile ends at least `rows` apart.
    beats: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}
    ends = []
    time = 0
    for a, b in tiles:
        time += 1
        if ends:
            time = max(time, ends[-1] + rows - a.shape[1] + 1)
        for k in range(a.shape[1]):
            beats[time] = (a[:, k], b[k], int(k == a.shape[1] - 1))
            time += 1
        ends.append(time - 1)
    total = ends[-1] + 2 * rows + cols + 2
    west = [[{"data": int(beats[t - i][0][i]), "last": beats[t - i][2]} if t - i in beats
             else {"data": 0, "last": 0} for i in range(rows)] for t in range(total)]
    north = [[int(beats[t - j][1][j]) if t - j in beats else 0 for j in range(cols)]
             for t in range(total)]
    mesh = Mesh(Dataflow.OS, rows=rows, cols=cols, input_width=8, weight_width=8, acc_width=32)
    assert mesh.i_west.shape().elem_shape == os_west_layout(8)
    assert mesh.i_north.shape().elem_shape == signed(8)
    south = _run_mesh(mesh, west, north)
    for (a, b), end in zip(tiles, ends):
        got = np.array([[south[end + j + 2 * rows - i][j] for j in range(cols)]
                        for i in range(rows)])
        np.testing.assert_array_equal(got, reference_matmul(a, b, 32))


def test_mesh_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^a mesh needs at least one row and one column, "
                                         r"not 0x4$"):
        Mesh(Dataflow.OS, rows=0, cols=4, input_width=8, weight_width=8, acc_width=32)
    with pytest.raises(ValueError, match=r"^acc_width \(12\) must be at least input_width \+ "
                                         r"weight_width \(16\)$"):
        Mesh(Dataflow.WS, rows=2, cols=2, input_width=8, weight_width=8, acc_width=12)
