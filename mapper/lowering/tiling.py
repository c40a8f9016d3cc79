"""Tile sizes for a `GemmJob` on one configuration: the loop bounds `schedule.py` emits.

Weight-stationary (`WsPlan`): A is cut into row tiles of `m` rows (one COMPUTE streams a
whole tile through one PRELOADed weight tile), and the column tiles (`cols` outputs each) into
groups of `group` tiles that share each loaded chunk of A (the group's accumulators, `m` rows
per column tile, must fit half of `acc` so the next group's work overlaps this group's
STOREs).

Output-stationary (`OsPlan`): a COMPUTE.OS covers `rows` pixels x `cols` outputs with a
K-range of `k_super` steps; column tiles form groups of `group` whose weights stay in
`spad_wt` (a K-range at a time), and row tiles form blocks of `block` rows whose accumulators
(`block` rows per column tile) fit half of `acc`.

Both plans are chosen by enumerating the group size with a small cost model: the array's
cycles (`max(m, rows)` per WS tile, `max(k, rows)` per OS tile) against the LOAD unit's (bus
beats, at least 2 per LOAD: the memory latency of consecutive LOADs overlaps) and the STORE
unit's, keeping the cheapest; the part of an output-stationary weight slab (a group's K
range) that cannot load during the steps before its use adds to the array's time. Ties go
to the plan moving fewer bytes.
"""

import dataclasses

from systolic.sim.isa.memories import Memory, depth
from systolic.sim.isa.patterns import ElementPattern

from systolic.config import ArrayConfig

from .gemm import GemmJob

__all__ = ["OsPlan", "WsPlan", "plan_os", "plan_ws"]

_MAX_GROUP = 256  # column tiles sharing A: one params row each (the params memory has 512)


@dataclasses.dataclass(frozen=True)
class WsPlan:
    """Weight-stationary loop bounds: rows per tile and column tiles per group."""

    m: int
    group: int


@dataclasses.dataclass(frozen=True)
class OsPlan:
    """Output-stationary loop bounds: column tiles per group, rows per block, K per pass."""

    group: int
    block: int
    k_super: int


def _row_beats(job: GemmJob, length: int, config: ArrayConfig) -> float:
    """Estimated bus beats to gather `length` elements of one A row."""
    walk = job.walk
    pattern = ElementPattern(0, length, walk.run, walk.n_mid, walk.stride_mid, walk.stride_outer)
    beats = 0.0
    for segment in pattern.runs(config.operand_bytes):
        beats += -(-segment.length // config.bus_bytes)
        if segment.length % config.bus_bytes:
            beats += 0.5  # an unaligned segment costs one more beat about half of the time
    return beats


def _dense_beats(elements: int, config: ArrayConfig) -> float:
    return -(-elements * config.operand_bytes // config.bus_bytes)


def _balanced(total: int, most: int) -> tuple[int, int]:
    """Return (tiles, size) splitting `total` into equal tiles of at most `most`."""
    tiles = -(-total // most)
    return tiles, -(-total // tiles)


def plan_ws(job: GemmJob, config: ArrayConfig) -> WsPlan:
    """Return the cheapest weight-stationary plan for `job` (module docstring)."""
    rows, cols = config.rows, config.cols
    total, k, n = job.rows, job.k, job.n
    chunks, tiles_n = -(-k // rows), -(-n // cols)
    acc_half = config.acc_depth // 2
    in_third = depth(config, Memory.SPAD_IN) // 3  # a step's tile, the previous one's, a new one
    resident = tiles_n * k <= depth(config, Memory.SPAD_WT)
    overhead = 2  # LOADs overlap their memory latency; each occupies the unit >= 2 cycles
    a_beats = _row_beats(job, min(rows, k), config)
    w_beats = _dense_beats(cols, config)
    y_beats = _dense_beats(min(cols, n), config) + 0.5
    best: tuple[tuple[float, float, int], WsPlan] | None = None
    wt_third = depth(config, Memory.SPAD_WT) // 3
    for group in range(1, min(tiles_n, _MAX_GROUP) + 1):
        most = min(total, acc_half // group, max(in_third, 1))
        if most < 1 or (group > 1 and group * rows > wt_third):
            break
        tiles_m, m = _balanced(total, most)
        groups = -(-tiles_n // group)
        compute = tiles_m * chunks * tiles_n * (max(m, rows) + 1)  # + dispatch of its PRELOAD
        a_load = tiles_m * groups * chunks * (m * a_beats + overhead)
        w_loads = 1 if resident else tiles_m
        w_load = w_loads * (groups * chunks * overhead + tiles_n * k * w_beats)
        store = tiles_m * tiles_n * (m * y_beats + 7)
        cost = max(compute, a_load + w_load, store)
        key = (cost, a_load + w_load, -m)
        if best is None or key < best[0]:
            best = (key, WsPlan(m, group))
    assert best is not None
    return best[1]


def plan_os(job: GemmJob, config: ArrayConfig) -> OsPlan:
    """Return the cheapest output-stationary plan for `job` (module docstring)."""
    rows, cols, dim = config.rows, config.cols, config.dim
    total, k, n = job.rows, job.k, job.n
    tiles_n = -(-n // cols)
    tiles_m, m = _balanced(total, rows)
    acc_half = config.acc_depth // 2
    in_third = depth(config, Memory.SPAD_IN) // 3  # a step's tile, the previous one's, a new one
    wt_depth = depth(config, Memory.SPAD_WT)
    resident = tiles_n * k <= wt_depth
    overhead = 2  # LOADs overlap their memory latency; each occupies the unit >= 2 cycles
    a_beats = _row_beats(job, min(dim, k), config)
    w_beats = _dense_beats(cols, config)
    y_beats = _dense_beats(min(cols, n), config) + 0.5
    best: tuple[tuple[float, float], OsPlan] | None = None
    for group in range(1, min(tiles_n, _MAX_GROUP) + 1):
        for share in (5, 3, 1):  # the slab of weights: a fifth of spad_wt, a third, all of it
            budget = wt_depth // share
            if budget // group < min(k, dim):
                continue
            k_super = k if group * k <= budget else budget // group // dim * dim
            k_super = min(k_super, max(1, in_third // m) * dim)
            if k_super < min(k, dim):
                continue
            block_tiles = acc_half // group // m
            if block_tiles < 1:
                continue
            block = min(tiles_m, block_tiles) * m
            passes = -(-k // k_super)
            chunk_loads = sum(-(-min(k_super, k - s) // dim) for s in range(0, k, k_super))
            groups = -(-tiles_n // group)
            blocks = -(-total // block)
            compute = (
                tiles_m
                * tiles_n
                * sum(max(min(k_super, k - s), rows) for s in range(0, k, k_super))
            )
            a_load = groups * tiles_m * chunk_loads * (m * a_beats + overhead)
            slab = group * k_super * w_beats
            if resident:
                w_load = groups * overhead + tiles_n * k * w_beats
                slabs = 0
            else:
                slabs = groups * passes * (blocks if passes > 1 else 1)
                w_load = slabs * (overhead + slab)
            # A slab loads during the `hoist` steps before its first use (schedule._HOIST),
            # sharing the LOAD unit with their A tiles; the rest of it stalls the array.
            hoist = min(4, wt_depth // max(group * k_super, 1) - 2)
            store = tiles_m * tiles_n * (m * y_beats + 7)
            step_slack = group * k_super - -(-k_super // dim) * m * a_beats
            exposed = slab - max(hoist, 0) * max(step_slack, 0.0)
            cost = max(compute + slabs * max(exposed, 0.0), a_load + w_load, store)
            key = (cost, a_load + w_load)
            if best is None or key < best[0]:
                best = (key, OsPlan(group, block, k_super))
    if best is None:
        raise AssertionError("no output-stationary plan; ArrayConfig guarantees one")
    return best[1]
