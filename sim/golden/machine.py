"""Golden model of the instruction set: a Program executed functionally on numpy state.

This is the readable specification the other engines are tested against (the C engine
`systolic.sim.golden.native_machine`, the RTL). `Machine` holds the architectural state of
docs/isa.md ("Memories"): external memory (a uint8 array from address 0), `spad_in` and
`spad_wt` (one row of `dim` signed operands each), `acc` (`cols` accumulators per row, wrapped
to `acc_width` bits), `params` (per-lane `bias`, `multiplier` and `shift`), the PE weights of
a weight-stationary array (`weights` active, `shadow` preloaded) and the STORE unit's
tables: the activation table (`table`, 256 int8 entries indexed by `y + 128`) and the exp
table (`exp_table`, 256 u16 entries for SOFTMAX), zeros after reset (LAYERNORM uses no
table). `execute` applies one instruction bit-exactly as docs/isa.md and
docs/numeric-contract.md say; `run` executes a program with `execute` in program order, which
is the meaning the hardware's in-flight table preserves while it overlaps the units. External bytes are read and written by
`systolic.sim.golden.external`; the output stage is `systolic.isa.requant.requantize`.

Instructions are checked against the configuration before they execute
(`Instruction.check_once`: at most once per configuration object). Every value is an exact
integer: matrix products are computed in float64 only when every partial sum is provably
exact there (`_exact_product`).
"""

from collections.abc import Callable, Iterable, Mapping
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
    LayerNorm,
    Load,
    LoadTarget,
    Pool,
    PoolMode,
    Preload,
    Softmax,
    Store,
    Table,
)
from systolic.isa.memories import PARAMS_DEPTH, Memory, depth, params_row_bytes
from systolic.isa.params import unpack_params
from systolic.isa.program import Program, TensorPlacement, TensorRole
from systolic.isa.requant import (
    extremes,
    requantize,
    round_shift_int64,
    scaled_round_shift,
    sign_extend,
)
from systolic.isa.softmax import softmax_row_chunks
from systolic.isa.store import RAW_BYTES
from systolic.isa.table import TABLE_ENTRIES
from systolic.sim.golden.external import check_external, gather_operands, read_rows, write_rows
from systolic.sim.golden.layernorm import layernorm_rows
from systolic.sim.golden.softmax import exp_table_from_rows, softmax_rows

__all__ = ["Machine", "run_program"]

_FLOAT_EXACT = 2**53
"""Integers of magnitude below this are exact in float64, and so are their sums below it."""


def _exact_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the matrix product of int64 `a` and `b` as numpy's int64 matmul gives it.

    When every partial sum is below 2**53 in magnitude (bounded by the largest operands and
    the inner size) it is computed in float64, where it is then exact and much faster."""
    if not a.size or not b.size:
        return np.zeros((a.shape[0], b.shape[1]), dtype=np.int64)
    a_low, a_high = extremes(a)
    b_low, b_high = extremes(b)
    bound = max(-a_low, a_high) * max(-b_low, b_high) * a.shape[1]
    if bound < _FLOAT_EXACT:
        return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)
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
        self.table = np.zeros(TABLE_ENTRIES, dtype=np.int64)
        self.exp_table = np.zeros(TABLE_ENTRIES, dtype=np.int64)
        self.halted = False
        self._semantics: dict[type, Callable[[Any], None]] = {
            Load: self._load, Preload: self._preload, Compute: self._compute,
            ComputeOS: self._compute_os, Store: self._store, Pool: self._pool, Add: self._add,
            Copy: self._copy, Halt: self._halt, Table: self._table, Softmax: self._softmax,
            LayerNorm: self._layernorm}

    @classmethod
    def for_program(cls, program: Program, memory_size: int | None = None) -> "Machine":
        """Create a machine for `program` with its memory image loaded.

        `memory_size` defaults to the end of the last byte the program touches.
        """
        size = program.memory_end if memory_size is None else memory_size
        machine = cls(program.config, size)
        for segment in program.segments:
            check_external(machine.memory, "the memory image", segment.address, segment.end - 1)
            machine.memory[segment.address : segment.end] = np.frombuffer(segment.data, np.uint8)
        return machine

    # -- tensors -------------------------------------------------------------------------------

    def _view(self, placement: TensorPlacement) -> np.ndarray:
        check_external(self.memory, f"tensor {placement.name!r}", placement.address,
                       placement.end - 1)
        return np.ndarray(placement.shape, dtype=placement.dtype.numpy, buffer=self.memory,
                          offset=placement.address, strides=placement.strides)

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
        """Execute `instructions` with `execute`, in order, until HALT.

        Raises SimulationError when they end without HALT. When an instruction raises, the
        earlier ones have taken effect and it has changed nothing."""
        for instr in instructions:
            self.execute(instr)
            if self.halted:
                return
        raise SimulationError("the program ended without HALT")

    def execute(self, instr: Instruction) -> None:
        """Apply one instruction to the state, after checking it against the configuration.

        Raises InstructionError for an invalid instruction, SimulationError for one after
        HALT, an access beyond external memory or a STORE with a params shift outside
        -31..31, and ValueError for a STORE whose bias or multiplier lies outside int32 (the
        output stage's check); the state is then unchanged."""
        if self.halted:
            raise SimulationError(f"{instr.MNEMONIC} executed after HALT")
        instr.check_once(self.config)
        self._semantics[type(instr)](instr)

    def _halt(self, instr: Halt) -> None:
        self.halted = True

    # -- LOAD ----------------------------------------------------------------------------------

    def _load(self, instr: Load) -> None:
        """Write `count` rows of `mem` from `row`: params rows, or gathered operands that keep
        the low input_width (spad_in) or weight_width (spad_wt) bits, then zeros to `dim`."""
        config, count = self.config, instr.count
        rows = slice(instr.row, instr.row + count)
        if instr.mem is LoadTarget.PARAMS:
            raw = read_rows(self.memory, "LOAD", instr.row_pattern, count,
                            params_row_bytes(config))
            bias, multiplier, shift = unpack_params(raw.tobytes(), config.cols)
            self.bias[rows], self.multiplier[rows], self.shift[rows] = bias, multiplier, shift
            return
        operand_bytes = config.operand_bytes
        values = gather_operands(self.memory, "LOAD", instr.row_pattern, count,
                                 instr.element_pattern, operand_bytes, instr.flip_sign)
        if instr.mem is LoadTarget.SPAD_WT:
            spad, width = self.spad_wt, config.weight_width
        else:
            spad, width = self.spad_in, config.input_width
        if width < 8 * operand_bytes:  # (else keeping the low `width` bits changes nothing)
            values = sign_extend(values.astype(np.int64), width)
        spad[rows, : instr.length] = values
        spad[rows, instr.length :] = 0

    # -- EXECUTE -------------------------------------------------------------------------------

    def _preload(self, instr: Preload) -> None:
        """Make `spad_wt[row, row+k)` (`n` weights each, zero-padded) the shadow weights."""
        shadow = np.zeros_like(self.weights)
        shadow[: instr.k, : instr.n] = self.spad_wt[instr.row : instr.row + instr.k, : instr.n]
        self.shadow = shadow

    def _accumulate(self, acc_row: int, products: np.ndarray, accumulate: bool) -> None:
        """Write (or add) `products` to acc rows from `acc_row`, wrapped to acc_width bits."""
        rows = slice(acc_row, acc_row + products.shape[0])
        total = self.acc[rows] + products if accumulate else products
        self.acc[rows] = sign_extend(total, self.config.acc_width)

    def _compute(self, instr: Compute) -> None:
        """Multiply `m` spad_in rows by the weights (the shadow ones first become active)."""
        if self.shadow is not None:
            self.weights, self.shadow = self.shadow, None
        inputs = self.spad_in[instr.in_row : instr.in_row + instr.m, : self.config.rows]
        self._accumulate(instr.acc_row, _exact_product(inputs, self.weights), instr.accumulate)

    def _compute_os(self, instr: ComputeOS) -> None:
        """Multiply A (m x k: k-chunk c is the `m` spad_in rows from in_row + c * a_stride)
        by B (`spad_wt[wt_row, wt_row+k)`, n columns, zero-padded to cols)."""
        chunks = np.arange(instr.chunks(self.config)) * instr.a_stride
        chunk_rows = instr.in_row + chunks[:, None] + np.arange(instr.m)  # chunk, row
        a = self.spad_in[chunk_rows].transpose(1, 0, 2).reshape(instr.m, -1)[:, : instr.k]
        b = np.zeros((instr.k, self.config.cols), dtype=np.int64)
        b[:, : instr.n] = self.spad_wt[instr.wt_row : instr.wt_row + instr.k, : instr.n]
        self._accumulate(instr.acc_row, _exact_product(a, b), instr.accumulate)

    # -- STORE unit ----------------------------------------------------------------------------

    def _write_rows(self, instr: Store | Pool | Add | Copy | Softmax | LayerNorm,
                    values: np.ndarray) -> None:
        """Write row i of `values` at row i of the instruction's row pattern, in order."""
        write_rows(self.memory, instr.MNEMONIC, instr.row_pattern, values,
                   self.config.operand_bytes, instr.flip_sign)

    def _lookup(self, values: np.ndarray) -> np.ndarray:
        """Return `T[v + 128]` for every int8 value `v` (the `lut` flags)."""
        looked_up: np.ndarray = self.table[values + TABLE_ENTRIES // 2]
        return looked_up

    def _table(self, instr: Table) -> None:
        """Replace the activation table (entry e is `spad_in[row + e // dim][e % dim]`) or,
        with `wide`, the exp table (entry e from the bytes 2e and 2e + 1 of the rows)."""
        rows = self.spad_in[instr.row : instr.row + instr.rows(self.config)]
        if instr.wide:
            self.exp_table = exp_table_from_rows(rows)
        else:
            self.table = rows.reshape(-1)[:TABLE_ENTRIES].copy()

    def _store(self, instr: Store) -> None:
        """Requantize `m` acc rows (`n` lanes) with params row `param_row` and write them
        (through the activation table when `lut`); with `raw` write `wrap32(acc + bias)` as
        4-byte elements instead."""
        p, n = instr.param_row, instr.n
        acc = self.acc[instr.acc_row : instr.acc_row + instr.m, :n]
        if instr.raw:
            write_rows(self.memory, instr.MNEMONIC, instr.row_pattern,
                       sign_extend(acc + self.bias[p, :n], 8 * RAW_BYTES), RAW_BYTES, False)
            return
        shifts = self.shift[p, :n]
        bad = np.flatnonzero((shifts < -31) | (shifts > 31))
        if bad.size:
            raise SimulationError(
                f"STORE uses params row {p} whose lane {int(bad[0])} has shift "
                f"{int(shifts[bad[0]])}, outside -31..31; fix the params image"
            )
        out = requantize(acc, self.bias[p, :n], self.multiplier[p, :n], shifts,
                         instr.zero_point, instr.lo, instr.hi).astype(np.int64)
        self._write_rows(instr, self._lookup(out) if instr.lut else out)

    def _pool(self, instr: Pool) -> None:
        """Max- or average-pool an h x w tile of spad_in rows (`lanes` channels each)."""
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
        self._write_rows(instr, np.clip(out, instr.lo, instr.hi))

    def _add(self, instr: Add) -> None:
        """Add (with `mul`, multiply) two rescaled blocks of `m` spad_in rows element-wise
        and write the result; with `b_broadcast` the b block is row `b_row` repeated."""
        a = self.spad_in[instr.a_row : instr.a_row + instr.m, : instr.lanes]
        b = self.spad_in[instr.b_row : instr.b_row + instr.b_rows(), : instr.lanes]
        if instr.mul:  # (|t| < 2**50: exact in int64)
            total = (a - instr.zp_a) * (b - instr.zp_b) * instr.multiplier_a
        else:
            total = (a - instr.zp_a) * instr.multiplier_a + (b - instr.zp_b) * instr.multiplier_b
        q = round_shift_int64(total, 31 + instr.shift)
        self._write_rows(instr, np.clip(q + instr.zp_out, instr.lo, instr.hi))

    def _copy(self, instr: Copy) -> None:
        """Write `m` spad_in rows (`lanes` operands each) unchanged, or through the
        activation table when `lut`."""
        rows = self.spad_in[instr.in_row : instr.in_row + instr.m, : instr.lanes]
        self._write_rows(instr, self._lookup(rows) if instr.lut else rows)

    def _softmax(self, instr: Softmax) -> None:
        """Softmax of `m` rows of `length` int8 values (`C = ceil(length / dim)` spad_in rows
        each) through the exp table, requantized and written out."""
        self._write_rows(instr, softmax_rows(self._rows_of(instr), self.exp_table,
                                             instr.multiplier, instr.shift, instr.zero_point,
                                             instr.lo, instr.hi))

    def _rows_of(self, instr: Softmax | LayerNorm) -> np.ndarray:
        """The `m` tensor rows of `length` int8 values (`C = ceil(length / dim)` spad_in rows
        each from `in_row`) a SOFTMAX or LAYERNORM reads."""
        chunks = softmax_row_chunks(instr.length, self.config)
        rows = self.spad_in[instr.in_row : instr.in_row + instr.m * chunks]
        return rows.reshape(instr.m, chunks * self.config.dim)[:, : instr.length]

    def _layernorm(self, instr: LayerNorm) -> None:
        """Layer normalization of `m` rows of `length` int8 values, requantized and written
        out."""
        self._write_rows(instr, layernorm_rows(
            self._rows_of(instr), instr.in_zero_point, instr.eps, instr.multiplier, instr.shift,
            instr.zero_point, instr.lo, instr.hi))


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
