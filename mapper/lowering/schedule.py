"""Emit the instructions of `GemmJob`s: the weight-stationary and output-stationary loop nests.

On-chip memories are used as rings (`Ring`): each tile of operands gets the next free span,
so consecutive tiles land in different rows and the hardware's hazard tracking lets the LOAD
of the next tile run while this one computes (docs/isa.md, "Hazards"); a span remembers what
it holds, so a tile still resident (all the weights of a small layer, say) is not loaded again.
The accumulator alternates between two halves, so one group's STOREs overlap the next group's
COMPUTEs. Programs are meant in program order; no barrier is ever needed.

Weight-stationary nest (`WsPlan` m, group):
    for each row tile (m rows of A):
      for each group of column tiles:
        for each K chunk c (`rows` elements): LOAD A chunk; LOAD the group's weight tiles
          for each column tile t: PRELOAD (c, t); COMPUTE m rows into t's accumulators
        STORE each column tile (requantized with its params row)
Output-stationary nest (`OsPlan` group, block, k_super):
    for each group of column tiles:
      for each block of row tiles:
        for each K range (k_super): LOAD the group's weights for it (unless resident)
          for each row tile (<= rows rows): LOAD its A chunks
            for each column tile t: COMPUTE.OS (accumulating after the first K range)
            (after the last K range) STORE the row tile of each column tile
"""

import bisect
import dataclasses
from collections.abc import Callable, Hashable, Sequence

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.field_copies import copy_with
from systolic.isa.instructions import (
    Compute,
    ComputeOS,
    Instruction,
    Load,
    LoadTarget,
    Preload,
    Store,
    Unit,
)
from systolic.isa.memories import PARAMS_DEPTH, Memory, depth, params_row_bytes
from systolic.isa.store import RAW_BYTES
from systolic.isa.table import table_rows
from systolic.mapper.lowering.gemm import (
    ComputedWeights,
    GemmJob,
    RowBlock,
    RowPiece,
    split_rows,
)
from systolic.mapper.lowering.table import table_code
from systolic.mapper.lowering.tiling import OsPlan, WsPlan, plan_os, plan_ws

__all__ = ["JobImage", "Ring", "Scheduler", "computed_weight_loads", "forget_instructions"]

_EXECUTES: dict[tuple[object, ...], Instruction] = {}
"""EXECUTE instructions by class and fields (`Scheduler._instr`), shared by every scheduler of
the process: instructions are frozen values, valid or not on a configuration by their fields
alone (`Program` checks each one against its configuration), and layers and compiles reuse
the same few thousand PRELOADs and COMPUTEs."""

_GROUPS: dict[tuple[object, ...], list[Instruction]] = {}
"""The PRELOADs and COMPUTEs of a group of column tiles by their fields (`Scheduler._cached`),
shared likewise."""

_SHARED_LIMIT = 1 << 17
"""A new scheduler empties both tables when either holds more entries than this."""


def forget_instructions() -> None:
    """Empty the shared tables of EXECUTE instructions (benchmarks time a compile from
    scratch)."""
    _EXECUTES.clear()
    _GROUPS.clear()


def computed_weight_loads(
    b: ComputedWeights, row: int, t0: int, tiles: int, k0: int, k: int, config: ArrayConfig
) -> list[Load]:
    """Return the LOADs of weight rows k0..k0+k-1 of column tiles t0.. (tile-major, from
    spad_wt row `row`) of a B read where it lies: the row pattern walks K (row_stride0 = B's
    row stride) and the tiles (row_stride1 = cols columns further), the element pattern the
    columns (contiguous, or one element per step with B's column stride). A ragged last tile
    gets its own LOAD with a shorter length (the LOAD zero-fills the rest of the row).
    """
    cols = config.cols
    full = min(tiles, b.n // cols - t0)
    parts = [(0, full, cols)] if full > 0 else []
    if full < tiles:
        parts.append((full, 1, b.n - (t0 + full) * cols))
    loads = []
    for first, count, length in parts:
        t = t0 + first
        contiguous = b.col_stride == config.operand_bytes or length == 1
        loads.append(
            Load(
                LoadTarget.SPAD_WT, row + first * k, count * k,
                b.address + k0 * b.row_stride + t * cols * b.col_stride,
                n0=k, row_stride0=b.row_stride, row_stride1=cols * b.col_stride,
                length=length, run=length if contiguous else 1,
                n_mid=1 if contiguous else length, stride_mid=0 if contiguous else b.col_stride,
                flip_sign=b.flip,
            )
        )  # fmt: skip
    return loads


class Ring:
    """Spans of an on-chip memory handed out one after the other, wrapping at the end.

    `take(size, key)` returns the first row of `size` rows after the previous span (or row 0
    when they do not fit before the end) and forgets every cached span it overlaps;
    `find(key)` returns the first row of a span still holding `key`, or None.
    """

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self._next = 0
        self._starts: list[int] = []  # first rows of the held spans, ascending (disjoint)
        self._spans: dict[int, tuple[int, Hashable]] = {}  # first row -> (size, key)
        self._where: dict[Hashable, int] = {}  # key -> first row

    def find(self, key: Hashable) -> int | None:
        """Return the first row of the span still holding `key`, or None."""
        return self._where.get(key)

    def fits(self, size: int, avoid: Sequence[tuple[int, int]]) -> int | None:
        """Return where a span of `size` rows would go clear of `avoid`, or None.

        The candidates are the ring position, then the end of each avoided span, then row 0.
        """
        if not 1 <= size <= self.rows:
            raise AssertionError(f"a span of {size} rows does not fit a ring of {self.rows}")
        if self._clear(self._next, size, avoid):
            return self._next
        for start in sorted(s + n for s, n in avoid):
            if self._clear(start, size, avoid):
                return start
        return 0 if self._clear(0, size, avoid) else None

    def _clear(self, start: int, size: int, avoid: Sequence[tuple[int, int]]) -> bool:
        """Whether rows start..start+size-1 lie inside the ring and overlap no `avoid` span."""
        end = start + size
        if end > self.rows:
            return False
        for s, n in avoid:
            if s < end and start < s + n:
                return False
        return True

    def take(self, size: int, key: Hashable, avoid: Sequence[tuple[int, int]] = ()) -> int:
        """Return the first row of a fresh span of `size` rows now holding `key`.

        The span overlaps none of the `avoid` spans ((start, size) pairs still in use).
        """
        return self.hold(self.fits(size, avoid), size, key)

    def hold(self, start: int | None, size: int, key: Hashable) -> int:
        """Return `start` after making rows start..start+size-1 the span holding `key` (the
        ring position then follows it); `start` is what `fits` gave (None: no room)."""
        if start is None:
            raise AssertionError(f"no span of {size} rows free in a ring of {self.rows}")
        end = start + size
        first = bisect.bisect_left(self._starts, start)
        if first and self._starts[first - 1] + self._spans[self._starts[first - 1]][0] > start:
            first -= 1  # the span before `start` reaches into the new one
        last = first
        while last < len(self._starts) and self._starts[last] < end:
            del self._where[self._spans.pop(self._starts[last])[1]]
            last += 1
        self._starts[first:last] = [start]
        old = self._where.pop(key, None)
        if old is not None:  # a key taken again: its older span is forgotten
            self._starts.remove(old)
            del self._spans[old]
        self._spans[start] = (size, key)
        self._where[key] = start
        self._next = end
        return start


@dataclasses.dataclass(frozen=True)
class JobImage:
    """Where a job's constants lie in external memory (layouts of `params_rows.py`)."""

    weights: int
    params: int


class _Step:
    """One tile of work: the LOADs it needs (each with how many steps early it may run),
    then its EXECUTE and STORE instructions (`executes` of them EXECUTEs), and the on-chip
    spans it reads ((first row, rows) per scratchpad name)."""

    __slots__ = ("body", "executes", "loads", "spans")

    def __init__(self) -> None:
        self.loads: list[tuple[Instruction, int]] = []
        self.body: list[Instruction] = []
        self.executes = 0
        self.spans: dict[str, list[tuple[int, int]]] = {"in": [], "wt": []}


_HOIST = {"in": 2, "wt": 4}
"""How many steps early a tile's LOAD may run, at most, per scratchpad (when rows allow)."""


def _per_tile(load: Instruction) -> list[Instruction]:
    """Return a weight LOAD of several column tiles (n0 rows each) as one LOAD per tile.

    A long LOAD holds the LOAD unit while the LOADs behind it fill its queue, and dispatch,
    in program order, then stops feeding the array; tile by tile, the LOADs of other steps
    slip in between.
    """
    if not isinstance(load, Load) or load.n0 >= load.count or load.count % load.n0:
        return [load]
    n0, step = load.n0, load.row_stride1
    return [copy_with(load, row=load.row + t * n0, count=n0, ext=load.ext + t * step)
            for t in range(load.count // n0)]  # fmt: skip


def _spread(step: _Step, ahead: list[Instruction]) -> list[Instruction]:
    """Return `step`'s body with the LOADs `ahead` spread over it: an equal share after each
    EXECUTE (rounded up), the rest at the end."""
    if not ahead:
        return step.body
    share = -(-len(ahead) // max(step.executes, 1))
    out: list[Instruction] = []
    cursor = 0
    for index, instr in enumerate(step.body):
        if cursor >= len(ahead):  # (all placed: the rest of the body as it is)
            return out + step.body[index:]
        out.append(instr)
        if instr.UNIT is Unit.EX:
            out += ahead[cursor : cursor + share]
            cursor += share
    out += ahead[cursor:]
    return out


class Scheduler:
    """Emits the instructions of jobs one after the other, sharing the rings between them.

    Work is built as steps (one K chunk of a WS tile group, one OS row tile of a K range);
    `finish` lays them out with each step's LOADs spread between the EXECUTE instructions of
    an earlier step (up to `_HOIST` steps). Dispatch is in program order with short queues,
    so a LOAD placed right before its first use could start only a few instructions ahead
    of the array; earlier, it overlaps whole steps. A LOAD that runs d steps early gets rows
    that none of those d + 1 steps reads (`_span`), so moving it is safe.
    """

    def __init__(self, config: ArrayConfig) -> None:
        self.config = config
        self.spad_in = Ring(depth(config, Memory.SPAD_IN))
        self.spad_wt = Ring(depth(config, Memory.SPAD_WT))
        self.params = Ring(PARAMS_DEPTH)
        self._acc_half = config.acc_depth // 2
        self._acc_side = 0
        self._active: Hashable = None  # which weight tile the WS array holds (after PRELOAD)
        self._pending: list[Instruction] = []  # STOREs of the previous group or tile
        self._jobs = 0
        self._steps: list[_Step] = [_Step()]
        self._params_in_use: list[tuple[int, int]] = []  # this group's and the previous one's
        if len(_EXECUTES) > _SHARED_LIMIT or len(_GROUPS) > _SHARED_LIMIT:
            forget_instructions()
        self._made = _EXECUTES
        self._rows = _GROUPS
        self._pieces: dict[tuple[int, int, int], list[RowPiece]] = {}  # (`_split`, this job's)
        self._a_loads: dict[tuple[int, int], Load] = {}  # (`_a_prototype`, this job's)
        self._store_prototype: Store | None = None  # (`_store`, this job's)
        self._weight_load: Load | None = None  # (`_load_weights`, this job's)

    # -- steps ---------------------------------------------------------------------------------

    def _new_step(self) -> None:
        self._steps.append(_Step())

    def _body(self, instr: Instruction) -> None:
        step = self._steps[-1]
        step.body.append(instr)
        step.executes += instr.UNIT is Unit.EX

    def _instr(self, cls: type[Instruction], *fields: int | bool) -> Instruction:
        """Return the EXECUTE instruction `cls(*fields)`. Instructions are frozen values, so
        equal ones are one object, built (and later checked and encoded) once: a layer's
        PRELOADs and COMPUTEs repeat the same few hundred rows over and over (`_EXECUTES`)."""
        key = (cls, *fields)
        instr = self._made.get(key)
        if instr is None:
            instr = self._made[key] = cls(*fields)
        return instr

    def _execute(self, cls: type[Instruction], *fields: int | bool) -> None:
        """Add the EXECUTE instruction `cls(*fields)` to the step."""
        step = self._steps[-1]
        step.body.append(self._instr(cls, *fields))
        step.executes += 1

    def _preloads(self, row: int, k: int, widths: Sequence[int]) -> list[Instruction]:
        """Return the PRELOADs of a group's column tiles: tile i's `k` weight rows from
        spad_wt row `row + i·k`, `widths[i]` columns each."""
        return self._cached((Preload, row, k, *widths), lambda: [
            self._instr(Preload, row + i * k, k, n) for i, n in enumerate(widths)])  # fmt: skip

    def _computes(self, row: int, m: int, acc: int, accumulate: bool, tiles: int
                  ) -> list[Instruction]:  # fmt: skip
        """Return the COMPUTEs of a group's `tiles` column tiles: `m` rows from spad_in
        `row` into acc rows `acc + i·m` for tile i."""
        return self._cached((Compute, row, m, acc, accumulate, tiles), lambda: [
            self._instr(Compute, row, m, acc + i * m, accumulate) for i in range(tiles)])  # fmt: skip

    def _split(self, rows: tuple[RowBlock, ...], start: int, stop: int) -> list[RowPiece]:
        """Return `split_rows(rows, start, stop)` for the current job's A or Y rows, made once
        (every column tile's STOREs and every K chunk's LOADs cover the same row tiles)."""
        key = (id(rows), start, stop)
        pieces = self._pieces.get(key)
        if pieces is None:
            pieces = self._pieces[key] = split_rows(rows, start, stop)
        return pieces

    def _cached(self, key: tuple[object, ...], make: Callable[[], list[Instruction]]
                ) -> list[Instruction]:  # fmt: skip
        """Return `make()` the first time `key` is asked for, the same list after: the rings
        hand the same rows out again and again."""
        made = self._rows.get(key)
        if made is None:
            made = self._rows[key] = make()
        return made

    def _ws_chunk(self, preloads: list[Instruction], computes: list[Instruction],
                  held: bool) -> None:
        """Add one K chunk's EXECUTEs: per column tile its PRELOAD (not the first one when
        the array `held` those weights already) and its COMPUTE, then one pending STORE of
        the previous group (`_interleave`)."""
        step = self._steps[-1]
        body, pending = step.body, self._pending
        for i, compute in enumerate(computes):
            if i or not held:
                body.append(preloads[i])
            body.append(compute)
            if pending:
                body.append(pending.pop(0))
        step.executes += 2 * len(computes) - held

    def _span(self, ring: Ring, name: str, key: Hashable, size: int) -> tuple[int, int | None]:
        """Return (first row, steps early its LOAD may run, None when already loaded)."""
        found = ring.find(key)
        hoist: int | None = None
        if found is None:
            hoist, start = self._room(ring, name, size)
            found = ring.hold(start, size, key)
        self._steps[-1].spans[name].append((found, size))
        return found, hoist

    def _room(self, ring: Ring, name: str, size: int) -> tuple[int, int | None]:
        """Return how many steps early (at most `_HOIST[name]`) a LOAD of `size` rows of
        `ring` can run and where its rows go (None: nowhere): clear of every span read by
        the steps it runs ahead of, and by this one."""
        steps = self._steps
        for hoist in range(min(_HOIST[name], len(steps) - 1), -1, -1):
            avoid = [span for step in steps[-1 - hoist :] for span in step.spans[name]]
            start = ring.fits(size, avoid)
            if start is not None:
                return hoist, start
        return 0, None

    def finish(self) -> list[Instruction]:
        """Return every instruction emitted, LOADs placed early (class docstring)."""
        self._flush()
        early: list[list[Instruction]] = [[] for _ in self._steps]
        prologue: list[Instruction] = []
        # Output-stationary: early LOADs of later steps ride along the first step's EXECUTEs
        # rather than all going ahead of its first one (which would wait for all of them).
        first = len(self._steps)
        if self.config.dataflow is Dataflow.OS:
            first = next((index for index, step in enumerate(self._steps) if step.executes),
                         first)  # fmt: skip
        for index, step in enumerate(self._steps):
            for instr, hoist in step.loads:
                target = index - hoist
                if hoist and index > first:
                    early[max(target, first)].append(instr)
                elif hoist and target >= 0:
                    early[target].append(instr)
                elif hoist:
                    prologue.append(instr)
        out = prologue
        # The first step is empty but for the activation table's LOAD and TABLE: they go
        # after the LOADs of the next step brought into it, so the array starts first.
        nearest = sum(1 for _, hoist in self._steps[1].loads if hoist == 1) if early[1:] else 0
        out += early[0][:nearest]
        early[0] = early[0][nearest:]
        for index, step in enumerate(self._steps):
            out += [instr for instr, hoist in step.loads if not hoist]
            out += _spread(step, early[index])
        return out

    # -- shared pieces -------------------------------------------------------------------------

    def _add_load(self, hoist: int, instr: Instruction) -> None:
        self._steps[-1].loads.append((instr, hoist))

    def _next_acc(self) -> int:
        self._acc_side ^= 1
        return self._acc_side * self._acc_half

    def _load_a(
        self, job: GemmJob, pieces: list[RowPiece], row: int, k0: int, length: int, hoist: int
    ) -> None:
        """Add the LOADs of A's elements k0..k0+length-1 of the rows `pieces` cover, into
        spad_in from row `row`: copies of one LOAD per (k0, length) (`_a_prototype`)."""
        prototype = self._a_prototype(job, k0, length)
        loads = self._steps[-1].loads
        for piece in pieces:
            loads.append((copy_with(prototype, row=row + piece.offset, count=piece.count,
                                    ext=piece.ext, n0=piece.n0, row_stride0=piece.stride0,
                                    row_stride1=piece.stride1), hoist))  # fmt: skip

    def _a_prototype(self, job: GemmJob, k0: int, length: int) -> Load:
        """Return a LOAD of A's elements k0..k0+length-1 in the current job's walk: what its
        A LOADs share; they differ only in fields no LOAD rule reads (`copy_with`)."""
        prototype = self._a_loads.get((k0, length))
        if prototype is None:
            walk = job.walk
            prototype = self._a_loads[k0, length] = Load(
                LoadTarget.SPAD_IN, 0, 1, 0, k0=k0, length=length, run=walk.run,
                n_mid=walk.n_mid, stride_mid=walk.stride_mid, stride_outer=walk.stride_outer,
                flip_sign=job.flip_in,
            )  # fmt: skip
        return prototype

    def _load_weights(
        self,
        job: GemmJob,
        image: JobImage,
        key: Hashable,
        t0: int,
        tiles: int,
        k0: int,
        k: int,
    ) -> int:
        """Return the spad_wt row of weight rows k0..k0+k-1 of column tiles t0.. (tile-major)."""
        row, hoist = self._span(self.spad_wt, "wt", key, tiles * k)
        if hoist is not None and isinstance(job.weights, ComputedWeights):
            for instr in computed_weight_loads(job.weights, row, t0, tiles, k0, k, self.config):
                self._add_load(hoist, instr)
        elif hoist is not None:
            cols, ob = self.config.cols, self.config.operand_bytes
            prototype = self._weight_load
            if prototype is None:  # (the job's weight LOADs differ in free fields only)
                prototype = self._weight_load = Load(
                    LoadTarget.SPAD_WT, 0, 1, 0, row_stride0=cols * ob,
                    row_stride1=job.k * cols * ob, length=cols, run=cols, n_mid=1,
                )  # fmt: skip
            ext = image.weights + (t0 * job.k + k0) * cols * ob
            self._add_load(hoist, copy_with(prototype, row=row, count=tiles * k, ext=ext, n0=k))
        return row

    def _load_params(self, image: JobImage, t0: int, tiles: int) -> int:
        key = (self._jobs, "params", t0, tiles)
        found = self.params.find(key)
        if found is None:
            found = self.params.take(tiles, key, self._params_in_use)
            step = params_row_bytes(self.config)
            self._add_load(1, Load.params(found, tiles, image.params + t0 * step, step))
        self._params_in_use = [*self._params_in_use[-1:], (found, tiles)]
        return found

    def _store(
        self, job: GemmJob, start: int, stop: int, acc_row: int, t: int, param_row: int,
        out: list[Instruction],
    ) -> None:  # fmt: skip
        """Add to `out` the STOREs of column tile t's rows start..stop-1 (from acc row
        `acc_row`, requantized with params row `param_row`): copies of one STORE of the job
        that differ only in fields no STORE rule reads (`copy_with`)."""
        cols = self.config.cols
        ob = RAW_BYTES if job.raw else self.config.operand_bytes
        n = min(cols, job.n - t * cols)
        prototype = self._store_prototype
        if prototype is None:
            prototype = self._store_prototype = Store(
                0, 1, 1, 0, job.zero_point, job.lo, job.hi, 0, flip_sign=job.flip_out,
                lut=job.lut, raw=job.raw,
            )  # fmt: skip
        for piece in self._split(job.y_rows, start, stop):
            out.append(copy_with(prototype, acc_row=acc_row + piece.offset, m=piece.count, n=n,
                                 param_row=param_row, ext=piece.ext + t * cols * ob,
                                 n0=piece.n0, row_stride0=piece.stride0,
                                 row_stride1=piece.stride1))  # fmt: skip

    def _flush(self) -> None:
        for instr in self._pending:
            self._body(instr)
        self._pending = []

    def _interleave(self) -> None:
        """Emit one STORE of the previous group or tile (between this one's COMPUTEs).

        A run of STOREs would fill the STORE queue and stall dispatch in program order, and
        a STORE right after its COMPUTE holds an in-flight table entry until the result
        lands; spread over the next group's (tile's) COMPUTEs, which write other accumulator
        rows, they overlap the array's work instead.
        """
        if self._pending:
            self._body(self._pending.pop(0))

    # -- jobs ----------------------------------------------------------------------------------

    def load_table(self, address: int) -> Instruction:
        """LOAD the activation table (`table_rows` rows of `dim` int8 entries at `address`)
        into spad_in and TABLE it, ahead of every job: the STOREs with `lut` follow the TABLE
        in the ST queue, and the table's rows are a span of the first step, so no LOAD hoisted
        over that step overwrites them before the TABLE has read them. `finish` puts the pair
        after the LOADs of the next step (the array's first operands), so they start first.
        Returns the table's LOAD."""
        row, _ = self._span(self.spad_in, "in", ("table",), table_rows(self.config))
        load, table = table_code(address, self.config, row)
        self._add_load(0, load)
        self._body(table)
        return load

    def emit(self, job: GemmJob, image: JobImage, plan: WsPlan | OsPlan | None = None) -> None:
        """Add the instructions computing `job` (its constants at `image`) by `plan`, which
        must be the job's plan on this configuration (None: made here, `plan_ws`/`plan_os`)."""
        self._jobs += 1
        self._pieces.clear()  # (keyed by the identity of the job's row blocks)
        self._a_loads.clear()
        self._store_prototype = None
        self._weight_load = None
        if self.config.dataflow is Dataflow.WS:
            self._emit_ws(job, image, plan if isinstance(plan, WsPlan) else plan_ws(job, self.config))
        else:
            self._emit_os(job, image, plan if isinstance(plan, OsPlan) else plan_os(job, self.config))

    def _emit_ws(self, job: GemmJob, image: JobImage, plan: WsPlan) -> None:
        rows, cols = self.config.rows, self.config.cols
        total, k, n_total = job.rows, job.k, job.n
        tiles_n = -(-n_total // cols)
        chunks = -(-k // rows)
        tiles_m = -(-total // plan.m)
        m_size = -(-total // tiles_m)
        for start in range(0, total, m_size):
            stop = min(total, start + m_size)
            m = stop - start
            a_pieces = self._split(job.a_rows, start, stop)
            for t0 in range(0, tiles_n, plan.group):
                tiles = min(plan.group, tiles_n - t0)
                widths = [min(cols, n_total - t * cols) for t in range(t0, t0 + tiles)]
                self._new_step()
                param_row = self._load_params(image, t0, tiles)
                acc = self._next_acc()
                stores: list[Instruction] = []
                for c in range(chunks):
                    if c:
                        self._new_step()
                    k0 = c * rows
                    kc = min(rows, k - k0)
                    a_key = (self._jobs, "a", start, c)
                    a_row, hoist = self._span(self.spad_in, "in", a_key, m)
                    if hoist is not None:
                        self._load_a(job, a_pieces, a_row, k0, kc, hoist)
                    w_key = (self._jobs, "w", t0, tiles, c)
                    w_row = self._load_weights(job, image, w_key, t0, tiles, k0, kc)
                    held = self._active == (self._jobs, t0, c)  # (PEs keep them across LOADs)
                    self._ws_chunk(self._preloads(w_row, kc, widths),
                                   self._computes(a_row, m, acc, c > 0, tiles), held)
                    self._active = (self._jobs, t0 + tiles - 1, c)
                for i in range(tiles):
                    self._store(job, start, stop, acc + i * m, t0 + i, param_row + i, stores)
                self._flush()  # the next group writes the other half of acc, then this one
                self._pending = stores

    def _emit_os(self, job: GemmJob, image: JobImage, plan: OsPlan) -> None:
        rows, cols, dim = self.config.rows, self.config.cols, self.config.dim
        total, k, n_total = job.rows, job.k, job.n
        tiles_n = -(-n_total // cols)
        tiles_m = -(-total // rows)
        m_size = -(-total // tiles_m)
        for t0 in range(0, tiles_n, plan.group):
            tiles = min(plan.group, tiles_n - t0)
            self._new_step()
            param_row = self._load_params(image, t0, tiles)
            for b0 in range(0, total, plan.block):
                b1 = min(total, b0 + plan.block)
                acc = self._next_acc()
                for s0 in range(0, k, plan.k_super):
                    ks = min(plan.k_super, k - s0)
                    last = s0 + ks == k
                    chunks = -(-ks // dim)
                    for start in range(b0, b1, m_size):
                        if start != 0 or s0 != 0 or b0 != 0:
                            self._new_step()
                        w_key = (self._jobs, "w", t0, tiles, s0, ks)
                        loads = len(self._steps[-1].loads)
                        w_row = self._load_weights(job, image, w_key, t0, tiles, s0, ks)
                        if total > rows:  # other row tiles' loads to let in
                            self._steps[-1].loads[loads:] = [
                                (piece, hoist)
                                for instr, hoist in self._steps[-1].loads[loads:]
                                for piece in _per_tile(instr)
                            ]
                        stop = min(b1, start + m_size)
                        m = stop - start
                        a_key = (self._jobs, "a", start, s0)
                        a_row, hoist = self._span(self.spad_in, "in", a_key, chunks * m)
                        if hoist is not None:
                            pieces = self._split(job.a_rows, start, stop)
                            for ch in range(chunks):
                                k0 = s0 + ch * dim
                                length = min(dim, s0 + ks - k0)
                                self._load_a(job, pieces, a_row + ch * m, k0, length, hoist)
                        stores: list[Instruction] = []
                        for i in range(tiles):
                            n = min(cols, n_total - (t0 + i) * cols)
                            acc_row = acc + i * plan.block + (start - b0)
                            self._execute(ComputeOS, a_row, m, n, ks, w_row + i * ks, acc_row,
                                          m if chunks > 1 else 0, s0 > 0)  # (a_stride, accumulate)
                            self._interleave()
                            if last:
                                self._store(job, start, stop, acc_row, t0 + i, param_row + i,
                                            stores)  # fmt: skip
                        # This tile's STOREs go between the next tile's COMPUTE.OS (which write
                        # other accumulator rows), so they never wait long in the table.
                        self._flush()
                        self._pending = stores
