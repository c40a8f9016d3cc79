"""Golden model of the instruction set: a Program executed functionally on numpy state.

`Machine` holds the architectural state of docs/isa.md ("Memories"): external memory (a
uint8 array), `spad_in` and `spad_wt` (one row of `dim` signed operands each), `acc`
(`cols` accumulators per row, wrapped to `acc_width` bits), `params` (per-lane bias,
multiplier and shift) and the PE weights of a weight-stationary array (active and shadow).
`execute` applies one instruction bit-exactly as docs/isa.md and docs/numeric-contract.md say;
`run` executes a program in program order, which is the meaning the hardware's in-flight
table preserves while it overlaps the units. The output stage is
`systolic.isa.requant.requantize`.

Speed (whole networks run here): instructions are checked once per configuration object
(`Instruction.check_once`: a Program's instructions were checked when it was built); matrix
products run in float64 when a bound on the operands proves every partial sum exact (else in
int64), rounding in int64 when the operands leave headroom (else with Python integers), so
the values are the same integers either way; `run` holds LOADs, COMPUTEs and STOREs back and
applies each kind in batches, in an order that gives the same state (see `run`). The machine
replaces `weights` on activation and never modifies that array in place; code that writes
`weights` directly must assign a new array too.
"""

from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import Any

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import SimulationError
from systolic.isa.instructions import (
    Add,
    Compute,
    ComputeOS,
    Copy,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Pool,
    PoolMode,
    Preload,
    Store,
)
from systolic.isa.memories import PARAMS_DEPTH, Memory, depth, params_row_bytes
from systolic.isa.params import unpack_params
from systolic.isa.program import Program, TensorPlacement, TensorRole
from systolic.isa.requant import extremes, requantize, round_shift_int64, scaled_round_shift
from systolic.isa.requant import sign_extend as _sign_extend
from systolic.sim.golden.compute_batch import ComputeBatch
from systolic.sim.golden.load_batch import LoadBatch
from systolic.sim.golden.store_batch import StoreBatch

__all__ = ["Machine", "run_program"]

_FLIP = 0x80
_FLOAT_EXACT = 2**53
"""Integers of magnitude up to this are exact in float64, and so are sums of products below it."""


_LOAD_SHAPE = attrgetter("count", "n0", "row_stride0", "row_stride1", "k0", "length", "run",
                         "n_mid", "stride_mid", "stride_outer")
"""The fields of a LOAD that its addresses relative to `ext` depend on."""


def _load_layout(instr: Load, config: ArrayConfig) -> tuple[np.ndarray, int, int]:
    """Return a spad LOAD's byte addresses minus `ext` (count x length, one-byte operands)
    and the lowest and highest of them."""
    bases = instr.row_pattern.addresses(instr.count) - instr.ext
    offsets = bases[:, None] + instr.element_pattern.offsets(1)[None, :]
    low, high = instr._external_range(config)
    return offsets, low - instr.ext, high - instr.ext


def _magnitude(values: np.ndarray) -> int:
    """Return the largest absolute value of an int64 array (0 for an empty one)."""
    if not values.size:
        return 0
    least, most = extremes(values)
    return max(most, -least)


def _matmul(a: np.ndarray, b: np.ndarray, b_magnitude: int | None = None) -> np.ndarray:
    """Return the exact int64 product of int64 matrices: in float64 when every partial sum is
    provably exact there (much faster than numpy's integer matmul), else in int64.
    `b_magnitude` is `_magnitude(b)` when the caller knows it."""
    if b_magnitude is None:
        b_magnitude = _magnitude(b)
    if _magnitude(a) * b_magnitude * a.shape[1] < _FLOAT_EXACT:
        product: np.ndarray = (a.astype(np.float64) @ b).astype(np.int64)
        return product
    exact: np.ndarray = a @ b
    return exact


class Machine:
    """The architectural state of one accelerator and the semantics of every instruction."""

    def __init__(self, config: ArrayConfig, memory_size: int) -> None:
        """Create zeroed state with `memory_size` bytes of external memory from address 0."""
        self.config = config
        self.memory = np.zeros(memory_size, dtype=np.uint8)
        self.spad_in = np.zeros((depth(config, Memory.SPAD_IN), config.dim), dtype=np.int64)
        self.spad_wt = np.zeros((depth(config, Memory.SPAD_WT), config.dim), dtype=np.int64)
        self.acc = np.zeros((config.acc_depth, config.cols), dtype=np.int64)
        self.bias = np.zeros((PARAMS_DEPTH, config.cols), dtype=np.int64)
        self.multiplier = np.zeros((PARAMS_DEPTH, config.cols), dtype=np.int64)
        self.shift = np.zeros((PARAMS_DEPTH, config.cols), dtype=np.int64)
        self.weights = np.zeros((config.rows, config.cols), dtype=np.int64)
        self.shadow: np.ndarray | None = None
        # The active weights in float64 with their largest magnitude, while `weights` is
        # the array they were made from (COMPUTE checks its identity).
        self._weights_f: tuple[np.ndarray, np.ndarray, int] | None = None
        self.halted = False
        self._load_layouts: dict[tuple[int, ...], tuple[np.ndarray, int, int]] = {}
        self._operand_bytes = config.operand_bytes
        self._input_width, self._weight_width = config.input_width, config.weight_width

    @classmethod
    def for_program(cls, program: Program, memory_size: int | None = None) -> "Machine":
        """Create a machine for `program` with its memory image loaded.

        `memory_size` defaults to the end of the last byte the program touches.
        """
        size = program.memory_end if memory_size is None else memory_size
        machine = cls(program.config, size)
        for segment in program.segments:
            machine._check_external("the memory image", segment.address, segment.end - 1)
            machine.memory[segment.address : segment.end] = np.frombuffer(segment.data, np.uint8)
        return machine

    # -- tensors -------------------------------------------------------------------------------

    def _view(self, placement: TensorPlacement) -> np.ndarray:
        self._check_external(f"tensor {placement.name!r}", placement.address, placement.end - 1)
        return np.ndarray(
            placement.shape,
            dtype=placement.dtype.numpy,
            buffer=self.memory,
            offset=placement.address,
            strides=placement.strides,
        )

    def write_tensor(self, placement: TensorPlacement, values: np.ndarray) -> None:
        """Store `values` (exactly the placement's shape) at its place in external memory."""
        array = np.asarray(values)
        if array.shape != placement.shape:
            raise SimulationError(
                f"tensor {placement.name!r} has shape {placement.shape}, "
                f"the value given has shape {array.shape}"
            )
        self._view(placement)[...] = array.astype(placement.dtype.numpy)

    def read_tensor(self, placement: TensorPlacement) -> np.ndarray:
        """Return a copy of the tensor at its place in external memory."""
        copy: np.ndarray = self._view(placement).copy()
        return copy

    # -- execution -----------------------------------------------------------------------------

    def run(self, instructions: Iterable[Instruction]) -> None:
        """Execute instructions in order until HALT.

        The result is exactly that of `execute` on each instruction in turn (also when one
        raises: the earlier ones have taken effect). Three kinds of instructions are held
        back and applied in batches, each batch flushed before an instruction that depends
        on what it holds, and at the end:

        - scratchpad LOADs (`load_batch.LoadBatch`, one per scratchpad), until something
          reads rows they write (spad_in: a COMPUTE batch's flush, POOL, ADD, COPY;
          spad_wt: COMPUTE.OS, PRELOAD) or writes external memory (a STORE batch's flush,
          POOL, ADD, COPY);
        - COMPUTE and COMPUTE.OS (`compute_batch.ComputeBatch`), until a LOAD overwrites
          rows they read or a COMPUTE writes rows a held STORE has still to read;
        - STOREs (`store_batch.StoreBatch`; their acc rows are read when offered, or after
          the flush of the COMPUTEs pending then), until a LOAD reads bytes they write, a
          PARAMS LOAD, POOL, ADD or COPY.
        """
        if self.halted:
            for instr in instructions:
                raise SimulationError(f"{instr.MNEMONIC} executed after HALT")
        config = self.config
        loads_in, loads_wt = LoadBatch(self, weights=False), LoadBatch(self, weights=True)
        batch = ComputeBatch(self)
        stores = StoreBatch(self, batch)

        def flush_loads() -> None:
            loads_in.flush()
            loads_wt.flush()

        batch.before_flush = loads_in.flush
        stores.before_write = flush_loads
        handlers = self._batched_handlers(loads_in, loads_wt, batch, stores)
        try:
            for instr in instructions:
                instr.check_once(config)
                handler = handlers.get(type(instr))
                if handler is None:
                    flush_loads()
                    batch.flush()
                    stores.flush()
                    handler = getattr(self, f"_exec_{type(instr).__name__.lower()}")
                handler(instr)
                if self.halted:
                    return
        finally:
            flush_loads()
            batch.flush()
            stores.flush()
        raise SimulationError("the program ended without HALT")

    def _batched_handlers(self, loads_in: LoadBatch, loads_wt: LoadBatch, batch: ComputeBatch,
                          stores: StoreBatch) -> dict[type, "Callable[[Any], None]"]:
        """Return `run`'s handlers: LOADs held in `loads_in`/`loads_wt`, EXECUTE deferred to
        `batch` and STOREs held in `stores`, each flushed first by what conflicts with what
        it holds."""
        handlers = self._handlers()
        exec_load, exec_store, exec_preload = self._exec_load, self._exec_store, self._exec_preload
        layouts, config = self._load_layouts, self.config
        memory_size = self.memory.size
        fast = self._operand_bytes == 1
        spad_in = LoadTarget.SPAD_IN

        def load(instr: Load) -> None:
            mem = instr.mem
            if mem is LoadTarget.PARAMS:
                stores.flush()  # (held STOREs read the params rows when flushed)
                exec_load(instr)
                stores.params_changed()
                return
            loads = loads_in if mem is spad_in else loads_wt
            # (COMPUTE.OS copies its spad_wt rows when deferred)
            if loads is loads_in and batch and batch.reads_in(instr.row, instr.count):
                batch.flush()
            if fast:
                key = _LOAD_SHAPE(instr)
                layout = layouts.get(key)
                if layout is None:
                    layout = layouts[key] = _load_layout(instr, config)
                ext = instr.ext
                low, high = ext + layout[1], ext + layout[2]
            else:
                layout = None
                low, high = instr._external_range(config)
            if stores:
                writes = stores.writes
                if low <= writes[1] and writes[0] <= high:
                    stores.flush()
            if not (layout is not None and 0 <= low and high < memory_size
                    and loads.add(instr, layout)):
                loads.flush()
                exec_load(instr)

        def store(instr: Store) -> None:
            # (when pending COMPUTEs write its rows, it copies them after their flush)
            if not stores.add(instr, batch.writes_acc(instr.acc_row, instr.m)):
                batch.flush()
                stores.flush()
                exec_store(instr)

        def preload(instr: Preload) -> None:
            if loads_wt and loads_wt.writes(instr.row, instr.k):
                loads_wt.flush()
            exec_preload(instr)

        def compute(instr: Compute) -> None:
            if self.shadow is not None:  # the shadow weights become active for this COMPUTE
                self.weights, self.shadow = self.shadow, None
            if stores.reads_acc(instr.acc_row, instr.m):
                batch.flush()
            batch.add_ws(instr.in_row, instr.m, instr.acc_row, instr.accumulate, self.weights)

        def compute_os(instr: ComputeOS) -> None:
            if stores.reads_acc(instr.acc_row, instr.m):
                batch.flush()
            if loads_wt and loads_wt.writes(instr.wt_row, instr.k):
                loads_wt.flush()
            batch.add_os(instr.in_row, instr.a_stride, instr.m, instr.k, instr.n, instr.wt_row,
                         instr.acc_row, instr.accumulate)

        def memory_writer(execute: "Callable[[Any], None]") -> "Callable[[Any], None]":
            def write(instr: Instruction) -> None:
                loads_in.flush()  # (it reads spad_in)
                stores.flush()  # (later writes win; this flushes loads_wt too)
                loads_wt.flush()
                execute(instr)
            return write

        def halt(instr: Halt) -> None:
            loads_in.flush()
            loads_wt.flush()
            batch.flush()
            stores.flush()
            self.halted = True

        handlers.update({Load: load, Store: store, Preload: preload, Compute: compute,
                         ComputeOS: compute_os, Pool: memory_writer(self._exec_pool),
                         Add: memory_writer(self._exec_add), Copy: memory_writer(self._exec_copy),
                         Halt: halt})
        return handlers

    def execute(self, instr: Instruction) -> None:
        """Apply one instruction to the state (it is checked against the configuration)."""
        if self.halted:
            raise SimulationError(f"{instr.MNEMONIC} executed after HALT")
        instr.check_once(self.config)
        handler = getattr(self, f"_exec_{type(instr).__name__.lower()}")
        handler(instr)

    def _handlers(self) -> dict[type, "Callable[[Any], None]"]:
        return {Load: self._exec_load, Preload: self._exec_preload, Compute: self._exec_compute,
                ComputeOS: self._exec_computeos, Store: self._exec_store, Pool: self._exec_pool,
                Add: self._exec_add, Copy: self._exec_copy, Halt: self._exec_halt}

    def _exec_halt(self, instr: Halt) -> None:
        self.halted = True

    # -- LOAD ----------------------------------------------------------------------------------

    def _exec_load(self, instr: Load) -> None:
        mem = instr.mem
        if mem is not LoadTarget.PARAMS and self._operand_bytes == 1:
            # The common case (one-byte operands): the addresses relative to `ext` depend
            # only on the shape fields, so they are computed once per shape.
            key = _LOAD_SHAPE(instr)
            layout = self._load_layouts.get(key)
            if layout is None:
                layout = self._load_layouts[key] = _load_layout(instr, self.config)
            offsets, low, high = layout
            ext = instr.ext
            if 0 <= ext + low and ext + high < self.memory.size:
                raw = self.memory[ext:][offsets] if low >= 0 else self.memory[offsets + ext]
                if instr.flip_sign:
                    raw ^= np.uint8(_FLIP)
                wt = mem is LoadTarget.SPAD_WT
                spad = self.spad_wt if wt else self.spad_in
                row, count, length = instr.row, instr.count, instr.length
                if length < spad.shape[1]:
                    spad[row : row + count] = 0
                width = self._weight_width if wt else self._input_width
                if width >= 8:  # sign-extending int8 to `width` bits changes nothing
                    spad[row : row + count, :length] = raw.view(np.int8)
                else:
                    spad[row : row + count, :length] = _sign_extend(
                        raw.view(np.int8).astype(np.int64), width)
                return
        config = self.config
        bases = instr.row_pattern.addresses(instr.count)
        if instr.mem is LoadTarget.PARAMS:
            row_bytes = params_row_bytes(config)
            raw = self._gather_bytes(instr, bases[:, None] + np.arange(row_bytes))
            bias, multiplier, shift = unpack_params(raw.tobytes(), config.cols)
            rows = slice(instr.row, instr.row + instr.count)
            self.bias[rows], self.multiplier[rows], self.shift[rows] = bias, multiplier, shift
            return
        element_bytes = config.operand_bytes
        addresses = bases[:, None] + instr.element_pattern.offsets(element_bytes)[None, :]
        low, high = instr._external_range(config)  # every byte the gathers below read
        width = config.weight_width if instr.mem is LoadTarget.SPAD_WT else config.input_width
        if element_bytes == 1 and 0 <= low and high < self.memory.size:  # the common case
            raw = self.memory[addresses]
            if instr.flip_sign:
                raw ^= np.uint8(_FLIP)
            spad = self.spad_wt if instr.mem is LoadTarget.SPAD_WT else self.spad_in
            row, count, length = instr.row, instr.count, instr.length
            if length < spad.shape[1]:
                spad[row : row + count] = 0
            if width >= 8:  # sign-extending int8 to `width` bits changes nothing
                spad[row : row + count, :length] = raw.view(np.int8)
            else:
                spad[row : row + count, :length] = _sign_extend(
                    raw.view(np.int8).astype(np.int64), width)
            return
        if element_bytes == 1:
            raw = self._gather_bytes(instr, addresses)
            if instr.flip_sign:
                raw = raw ^ np.uint8(_FLIP)
            values = raw.view(np.int8).astype(np.int64)
        else:
            values = np.zeros(addresses.shape, dtype=np.int64)
            for b in range(element_bytes):
                byte = self._gather_bytes(instr, addresses + b).astype(np.int64)
                if instr.flip_sign:
                    byte ^= _FLIP
                values |= byte << (8 * b)
            values = _sign_extend(values, 8 * element_bytes)
        spad = self.spad_wt if instr.mem is LoadTarget.SPAD_WT else self.spad_in
        rows = slice(instr.row, instr.row + instr.count)
        spad[rows] = 0
        spad[rows, : instr.length] = _sign_extend(values, width)

    def _gather_bytes(self, instr: Instruction, addresses: np.ndarray) -> np.ndarray:
        if addresses.size:
            low, high = int(addresses.min()), int(addresses.max())
            if low < 0 or high >= self.memory.size:
                self._check_external(instr.MNEMONIC, low, high)
        gathered: np.ndarray = self.memory[addresses]
        return gathered

    def _check_external(self, what: str, first: int, last: int) -> None:
        if first < 0 or last >= self.memory.size:
            raise SimulationError(
                f"{what} accesses external bytes {first}..{last}, beyond the "
                f"{self.memory.size} bytes of simulated memory; give Machine a larger memory_size"
            )

    # -- EXECUTE -------------------------------------------------------------------------------

    def _exec_preload(self, instr: Preload) -> None:
        config = self.config
        if instr.k == config.rows and instr.n == config.cols:  # a whole tile: a plain copy
            self.shadow = self.spad_wt[instr.row : instr.row + instr.k, : instr.n].copy()
            return
        shadow = np.zeros((config.rows, config.cols), dtype=np.int64)
        shadow[: instr.k, : instr.n] = self.spad_wt[instr.row : instr.row + instr.k, : instr.n]
        self.shadow = shadow

    def _accumulate(self, acc_row: int, products: np.ndarray, accumulate: bool) -> None:
        rows = slice(acc_row, acc_row + products.shape[0])
        total = self.acc[rows] + products if accumulate else products
        self.acc[rows] = _sign_extend(total, self.config.acc_width)

    def _exec_compute(self, instr: Compute) -> None:
        if self.shadow is not None:  # the shadow weights become active for this COMPUTE
            self.weights, self.shadow = self.shadow, None
        inputs = self.spad_in[instr.in_row : instr.in_row + instr.m, : self.config.rows]
        cached = self._weights_f
        if cached is None or cached[0] is not self.weights:
            weights = self.weights
            cached = self._weights_f = (weights, weights.astype(np.float64), _magnitude(weights))
        if _magnitude(inputs) * cached[2] * inputs.shape[1] < _FLOAT_EXACT:
            product = (inputs.astype(np.float64) @ cached[1]).astype(np.int64)
        else:
            product = inputs @ self.weights
        self._accumulate(instr.acc_row, product, instr.accumulate)

    def _exec_computeos(self, instr: ComputeOS) -> None:
        dim = self.config.dim
        if instr.k <= dim:  # one chunk: the operands are plain slices
            a = self.spad_in[instr.in_row : instr.in_row + instr.m, : instr.k]
            if instr.n == self.config.cols:
                b = self.spad_wt[instr.wt_row : instr.wt_row + instr.k, : instr.n]
            else:
                b = np.zeros((instr.k, self.config.cols), dtype=np.int64)
                b[:, : instr.n] = self.spad_wt[instr.wt_row : instr.wt_row + instr.k, : instr.n]
            self._accumulate(instr.acc_row, _matmul(a, b), instr.accumulate)
            return
        a = np.zeros((instr.m, instr.k), dtype=np.int64)
        for chunk in range(instr.chunks(self.config)):
            first = instr.in_row + chunk * instr.a_stride
            width = min(dim, instr.k - chunk * dim)
            a[:, chunk * dim : chunk * dim + width] = self.spad_in[first : first + instr.m, :width]
        b = np.zeros((instr.k, self.config.cols), dtype=np.int64)
        b[:, : instr.n] = self.spad_wt[instr.wt_row : instr.wt_row + instr.k, : instr.n]
        self._accumulate(instr.acc_row, _matmul(a, b), instr.accumulate)

    # -- STORE unit ----------------------------------------------------------------------------

    def _write_rows(self, instr: Instruction, values: np.ndarray, flip: bool) -> None:
        """Write row i of int `values` at row i of the instruction's row pattern, in order."""
        element_bytes = self.config.operand_bytes
        data = values.astype(np.int64)
        if element_bytes == 1:
            raw = data.astype(np.uint8)  # (the low byte: the same as & 0xFF)
        else:
            raw = np.stack([(data >> (8 * b)) & 0xFF for b in range(element_bytes)], axis=-1)
            raw = raw.reshape(values.shape[0], -1).astype(np.uint8)
        if flip:
            raw ^= np.uint8(_FLIP)
        count = values.shape[0]
        if not count:
            return
        pattern = instr.row_pattern
        row_bytes = raw.shape[1]
        low, high = pattern.extent(count)
        high += row_bytes - 1
        if low < 0 or high >= self.memory.size:
            self._check_external(instr.MNEMONIC, low, high)
        bases = pattern.addresses(count)
        if count == 1 or (pattern.n0 == 1 and abs(pattern.stride1) >= row_bytes) or int(
                np.diff(np.sort(bases)).min()) >= row_bytes:  # the rows do not overlap
            self.memory[bases[:, None] + np.arange(row_bytes)] = raw
            return
        for address, row in zip(bases.tolist(), raw, strict=True):  # in order: later rows win
            self.memory[address : address + row_bytes] = row

    def _exec_store(self, instr: Store) -> None:
        p, n = instr.param_row, instr.n
        shifts = self.shift[p, :n]
        bad = np.flatnonzero((shifts < -31) | (shifts > 31))
        if bad.size:
            raise SimulationError(
                f"STORE uses params row {p} whose lane {int(bad[0])} has shift "
                f"{int(shifts[bad[0]])}, outside -31..31; fix the params image"
            )
        out = requantize(
            self.acc[instr.acc_row : instr.acc_row + instr.m, :n],
            self.bias[p, :n],
            self.multiplier[p, :n],
            shifts,
            instr.zero_point,
            instr.lo,
            instr.hi,
        )
        self._write_rows(instr, out.astype(np.int64), instr.flip_sign)

    def _exec_pool(self, instr: Pool) -> None:
        tile = self.spad_in[instr.in_row : instr.in_row + instr.h * instr.w, : instr.lanes]
        tile = tile.reshape(instr.h, instr.w, instr.lanes)
        out = np.zeros((instr.oh * instr.ow, instr.lanes), dtype=np.int64)
        for oy in range(instr.oh):
            y0 = oy * instr.sh - instr.pad_top
            ys = slice(max(y0, 0), min(y0 + instr.kh, instr.h))
            for ox in range(instr.ow):
                x0 = ox * instr.sw - instr.pad_left
                window = tile[ys, max(x0, 0) : min(x0 + instr.kw, instr.w)]
                window = window.reshape(-1, instr.lanes)
                if instr.mode is PoolMode.MAX:
                    out[oy * instr.ow + ox] = window.max(axis=0)
                else:
                    window_sum = (window - instr.zp_in).sum(axis=0)
                    q = scaled_round_shift(window_sum, instr.multiplier, 31 + instr.shift)
                    out[oy * instr.ow + ox] = q + instr.zp_out
        self._write_rows(instr, np.clip(out, instr.lo, instr.hi), instr.flip_sign)

    def _exec_add(self, instr: Add) -> None:
        a = self.spad_in[instr.a_row : instr.a_row + instr.m, : instr.lanes]
        b = self.spad_in[instr.b_row : instr.b_row + instr.m, : instr.lanes]
        total = (a - instr.zp_a) * instr.multiplier_a + (b - instr.zp_b) * instr.multiplier_b
        q = round_shift_int64(total, 31 + instr.shift)
        self._write_rows(instr, np.clip(q + instr.zp_out, instr.lo, instr.hi), instr.flip_sign)

    def _exec_copy(self, instr: Copy) -> None:
        values = self.spad_in[instr.in_row : instr.in_row + instr.m, : instr.lanes]
        self._write_rows(instr, values, instr.flip_sign)


def run_program(
    program: Program, inputs: Mapping[str, np.ndarray], memory_size: int | None = None
) -> dict[str, np.ndarray]:
    """Run `program` on `inputs` (by tensor name) and return its outputs by name."""
    machine = Machine.for_program(program, memory_size)
    expected = {t.name for t in program.placements(TensorRole.INPUT)}
    if set(inputs) != expected:
        raise SimulationError(f"the program takes inputs {sorted(expected)}, not {sorted(inputs)}")
    for placement in program.placements(TensorRole.INPUT):
        machine.write_tensor(placement, inputs[placement.name])
    machine.run(program.instructions)
    return {t.name: machine.read_tensor(t) for t in program.placements(TensorRole.OUTPUT)}
