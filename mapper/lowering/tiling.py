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
to the plan moving fewer bytes. Output-stationary plans are costed step by step instead
(`_pipeline`: the LOAD unit in program order against the array), with A's bus beats
averaged over its rows' alignments (`_chunk_beats`).
"""

import dataclasses
import math

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.memories import Memory, depth
from systolic.isa.patterns import ElementPattern
from systolic.mapper.lowering.gemm import GemmJob

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


def _alignments(job: GemmJob, config: ArrayConfig) -> np.ndarray:
    """Return the offsets modulo `bus_bytes` that A's row addresses take (each row pattern's
    base plus multiples of the gcd of its strides and the bus width)."""
    bus = config.bus_bytes
    residues: set[int] = set()
    for block in job.a_rows:
        step = bus
        if block.count > 1 and block.n0 > 1:
            step = math.gcd(step, block.stride0)
        if block.count > block.n0:
            step = math.gcd(step, block.stride1)
        residues.update((block.base + i * step) % bus for i in range(bus // step))
    return np.array(sorted(residues or {0}), dtype=np.int64)


def _chunk_beats(job: GemmJob, k0: int, length: int, config: ArrayConfig,
                 alignments: np.ndarray) -> float:  # fmt: skip
    """Bus beats to gather elements k0 .. k0+length-1 of one A row, averaged over the row
    alignments A's rows take (segments are counted one by one, as the LOAD unit does)."""
    walk, bus = job.walk, config.bus_bytes
    pattern = ElementPattern(k0, length, walk.run, walk.n_mid, walk.stride_mid, walk.stride_outer)
    beats = 0.0
    for segment in pattern.runs(config.operand_bytes):
        first = alignments + segment.address
        beats += float(np.mean((first + segment.length - 1) // bus - first // bus + 1))
    return beats


def _os_tile_cycles(m: int, k: int, config: ArrayConfig) -> int:
    """Array cycles of one COMPUTE.OS of m rows and k steps back to back with its neighbours:
    each `dim`-wide chunk takes max(m, its width) (the loader reads m rows into a bank while
    the other bank streams), and a tile takes at least `rows` (docs/cycle-model.md)."""
    dim = config.dim
    chunks = sum(max(m, min(dim, k - k0)) for k0 in range(0, k, dim))
    return max(chunks, config.rows)


def _k_super_choices(job: GemmJob, most: int, config: ArrayConfig) -> list[int]:
    """Return the K ranges per pass worth trying up to `most`: the largest multiple of `dim`
    (or all of K), and the multiples of the element walk's period (one kernel row of a
    convolution) when it is not a multiple of `dim`, so that no chunk cuts a kernel row it
    need not cut (fewer segments, fewer bus beats)."""
    k, dim = job.k, config.dim
    choices = {k if k <= most else most // dim * dim}
    period = job.walk.run * job.walk.n_mid
    if 1 < period < k and period % dim and dim % period:
        choices.update(j * period for j in range(1, min(most, k) // period + 1))
    return sorted(c for c in choices if c >= min(k, dim))


def _pipeline(steps: list[tuple[int, float, float]], w_ahead: int, a_ahead: int) -> list[float]:
    """Return when each of `steps` (array cycles, A LOAD cycles, weight LOAD cycles) ends.

    As the schedule places them, step i's weight LOAD sits `w_ahead` steps earlier in the
    program and its A LOADs `a_ahead` steps earlier (fewer at the start); the LOAD unit takes
    them in program order, each once the array has finished the step before the one it sits
    in (dispatch has reached it), and the array runs each step once its LOADs are done.
    """
    count = len(steps)
    # The LOADs sitting in each step, in program order: by step, a step's weights before its A.
    placed: list[list[tuple[int, float]]] = [[] for _ in range(count)]
    for i, (_, a, w) in enumerate(steps):
        if w:
            placed[max(i - w_ahead, 0)].append((i, w))
        placed[max(i - a_ahead, 0)].append((i, a))
    done = [0.0] * count
    ends: list[float] = []
    free = end = 0.0
    for i, loads in enumerate(placed):
        if loads:  # dispatch reaches them once the array has finished step i - 1
            start = end
            for step, cycles in loads:
                free = max(free, start) + cycles
                done[step] = free
        end = max(end, done[i]) + steps[i][0]
        ends.append(end)
    return ends


_EXACT_UNIT = 2.0**16
_EXACT_LIMIT = 2.0**36
"""When every cycle figure of a plan is a multiple of 1/_EXACT_UNIT and all of them together
stay below _EXACT_LIMIT, no float addition of the pipeline rounds: sums taken in any order
are equal bit for bit, and bounds computed from them are exact (`plan_os` prunes with them)."""


def _exact(runs: list[tuple[int, int, float, float]]) -> bool:
    """Whether every sum the pipeline of `runs` can form is exact in float64."""
    total = 0.0
    for count, array, a, w in runs:
        for value in (array, a, w):
            if value < 0 or not float(value * _EXACT_UNIT).is_integer():
                return False
        total += count * (array + a) + w
    return total < _EXACT_LIMIT


def _steps(runs: list[tuple[int, int, float, float]]) -> list[tuple[int, float, float]]:
    """Return the steps `runs` stand for: each run (count, array cycles, A LOAD cycles, weight
    LOAD cycles of its first step) is `count` steps, the later ones without a weight LOAD."""
    return [step for count, array, a, w in runs
            for step in [(array, a, w)] + [(array, a, 0)] * (count - 1)]  # fmt: skip


def _split(total: int, most: int) -> list[int]:
    """Return `total` cut into pieces of `most` and a last smaller one."""
    return [min(most, total - start) for start in range(0, total, most)]


def plan_os(job: GemmJob, config: ArrayConfig) -> OsPlan:
    """Return the cheapest output-stationary plan for `job` (module docstring).

    Each step (a block of row tiles for one K range of one group) costs the larger of its
    array cycles and its LOAD cycles (the A chunks of its row tiles, and the group's weight
    slab for that K range when it is not already on chip); the plan costs the sum of its
    steps, or the STORE unit's time if that is longer.
    """
    rows, cols, dim = config.rows, config.cols, config.dim
    total, k, n = job.rows, job.k, job.n
    tiles_n = -(-n // cols)
    tiles_m, m = _balanced(total, rows)
    acc_half = config.acc_depth // 2
    in_third = depth(config, Memory.SPAD_IN) // 3  # a step's tile, the previous one's, a new one
    wt_depth = depth(config, Memory.SPAD_WT)
    resident = tiles_n * k <= wt_depth
    overhead = 2  # LOADs overlap their memory latency; each occupies the unit >= 2 cycles
    alignments = _alignments(job, config)
    w_beats = _dense_beats(cols, config)
    y_beats = _dense_beats(min(cols, n), config) + 0.5
    store = tiles_m * tiles_n * (m * y_beats + 7)
    chunk_cache: dict[tuple[int, int], float] = {}
    a_cache: dict[tuple[int, int], float] = {}
    tile_cache: dict[int, int] = {}

    def chunk(k0: int, length: int) -> float:
        if (k0, length) not in chunk_cache:
            chunk_cache[k0, length] = _chunk_beats(job, k0, length, config, alignments)
        return chunk_cache[k0, length]

    def a_pass(s0: int, ks: int) -> float:
        """LOAD cycles of one row tile's A chunks for K range s0 .. s0+ks-1."""
        if (s0, ks) not in a_cache:
            a_cache[s0, ks] = sum(
                m * chunk(k0, min(dim, s0 + ks - k0)) + overhead for k0 in range(s0, s0 + ks, dim)
            )
        return a_cache[s0, ks]

    def tile(ks: int) -> int:
        if ks not in tile_cache:
            tile_cache[ks] = _os_tile_cycles(m, ks, config)
        return tile_cache[ks]

    candidates: list[tuple[list[tuple[int, int, float, float]], int, OsPlan]] = []
    tried: set[tuple[int, int]] = set()
    for group in range(1, min(tiles_n, _MAX_GROUP) + 1):
        block_tiles = acc_half // group // m
        if block_tiles < 1:
            continue
        blocks = _split(tiles_m, block_tiles)
        groups = _split(tiles_n, group)
        for share in (5, 3, 1):  # the slab of weights: a fifth of spad_wt, a third, all of it
            budget = wt_depth // share
            if budget // group < min(k, dim):
                continue
            most = k if group * k <= budget else budget // group // dim * dim
            most = min(most, max(1, in_third // m) * dim)
            for k_super in _k_super_choices(job, most, config):
                if (group, k_super) in tried:
                    continue
                tried.add((group, k_super))
                passes = [(s0, min(k_super, k - s0)) for s0 in range(0, k, k_super)]
                reload = not resident and len(passes) > 1  # a group's slabs per block
                # spad_wt holds `fit` slabs: one in use, and up to 4 loading ahead (_HOIST)
                fit = wt_depth // (group * k_super)
                runs = [
                    (b, g * tile(ks), a_pass(s0, ks),
                     g * ks * w_beats + overhead if reload or index == 0 else 0)
                    for g in groups for index, b in enumerate(blocks) for s0, ks in passes
                ]  # fmt: skip
                plan = OsPlan(group, min(tiles_m, block_tiles) * m, k_super)
                candidates.append((runs, max(0, min(4, fit - 2)), plan))
    if not candidates:
        raise AssertionError("no output-stationary plan; ArrayConfig guarantees one")
    return _cheapest(candidates, store)


def _cheapest(candidates: list[tuple[list[tuple[int, int, float, float]], int, OsPlan]],
              store: float) -> OsPlan:  # fmt: skip
    """Return the plan of the candidate (the steps' `runs`, how far ahead its weight LOADs
    sit, the plan) with the least (max(`_pipeline` time, store), LOAD cycles), the first of
    equal ones.

    When the figures are exact (`_exact`), candidates are simulated in the order of a bound
    below their time (the array's cycles alone, the LOAD unit's alone, the STORE unit's), and
    one whose bound exceeds the best time found is not simulated: the same plan comes out.
    """
    order = list(range(len(candidates)))
    bounds = [0.0] * len(candidates)
    exact = all(_exact(runs) for runs, _, _ in candidates)
    if exact:
        bounds = [max(sum(count * array for count, array, _, _ in runs),
                      sum(count * a + w for count, _, a, w in runs), store)
                  for runs, _, _ in candidates]  # fmt: skip
        order.sort(key=lambda index: bounds[index])
    best: tuple[tuple[float, float, int], OsPlan] | None = None
    for index in order:
        if best is not None and bounds[index] > best[0][0]:
            continue  # (bounds are 0 unless exact)
        runs, w_ahead, plan = candidates[index]
        steps = _steps(runs)
        time = _pipeline(steps, w_ahead, 2)[-1]
        key = (max(time, store), sum(a + w for _, a, w in steps), index)
        if best is None or key < best[0]:
            best = (key, plan)
    assert best is not None
    return best[1]
