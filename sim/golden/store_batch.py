"""Deferred, batched STOREs for `Machine.run` (same results as one by one).

`StoreBatch(machine)` holds STOREs back and applies many at once in `flush`: one
requantization over all their rows and one scatter into external memory, with exactly the
bytes that executing them one by one in program order gives (`Machine._exec_store`).

What a STORE depends on is fixed when it is offered:

- its accumulator rows are copied then, so later writes to those rows do not matter; when
  pending COMPUTEs of the machine's `ComputeBatch` write them, the copy waits for the batch's
  flush (`add(..., lazy=True)`, `resolve`), and the caller flushes that batch before it takes
  a COMPUTE that writes rows such a STORE reads (`reads_acc`);
- its params row is read at the flush: the caller flushes before a PARAMS LOAD;
- the errors it can raise (a params shift outside -31..31, bytes beyond external memory) are
  checked then, with the texts `_exec_store` gives; the STOREs held before it are applied
  by the caller's final flush, so the state after the error is the same as one by one.

The caller flushes before anything reads or writes the external bytes it holds (a LOAD of
bytes in `writes`, a POOL, ADD or COPY) and at the end of the run. Within a flush the rows
are written in program order (later rows win): in one scatter when no two rows overlap,
else row by row. A STORE whose params row has a bias or multiplier outside int32 (which
`requantize` refuses) is never held: `add` returns False and the caller executes it itself.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from systolic.errors import SimulationError
from systolic.isa.requant import MULTIPLIER_BITS, extremes, round_shift_int64

if TYPE_CHECKING:
    from systolic.isa.instructions import Store
    from systolic.sim.golden.compute_batch import ComputeBatch
    from systolic.sim.golden.machine import Machine

__all__ = ["StoreBatch"]

_FLIP = 0x80
_INT64_SAFE = 2**62
_INT32 = (-(2**31), 2**31 - 1)
_NONE = (1, 0)  # an empty byte range (first > last)
_MAX_HELD_ROWS = 4096  # rows held before a flush (bounds the batch's memory)


def _magnitude(values: np.ndarray) -> int:
    if not values.size:
        return 0
    least, most = extremes(values)
    return max(most, -least)


class StoreBatch:
    """Held-back STOREs of one machine (see the module docstring)."""

    def __init__(self, machine: "Machine", computes: "ComputeBatch") -> None:
        self.machine = machine
        self.computes = computes
        computes.after_flush = self.resolve
        self.held: list[Store] = []
        self.acc: list[np.ndarray | None] = []
        self._lazy: list[int] = []  # positions in `held` whose rows are not copied yet
        self._lazy_rows = bytearray(machine.acc.shape[0])  # 1: a lazy STORE reads the row
        self._ones = b"\x01" * len(self._lazy_rows)
        self.writes = _NONE
        self._rows = 0
        self._layouts: dict[tuple[int, ...], tuple[np.ndarray, int, int]] = {}
        self._lanes: list[int] | None = None  # per params row: leading lanes a STORE may use
        self.before_write: Callable[[], None] | None = None
        """Called before a flush writes external memory."""

    def __bool__(self) -> bool:
        return bool(self.held)

    def reads_acc(self, first: int, count: int) -> bool:
        """Return whether a STORE whose rows are not copied yet reads an acc row in
        [first, first + count)."""
        return self._lazy_rows.find(1, first, first + count) >= 0

    def resolve(self) -> None:
        """Copy the accumulator rows of the STOREs held with `lazy=True` (the COMPUTEs they
        wait for have been applied)."""
        lazy = self._lazy
        if not lazy:
            return
        acc, parts, held = self.machine.acc, self.acc, self.held
        for position in lazy:
            instr = held[position]
            parts[position] = acc[instr.acc_row : instr.acc_row + instr.m].copy()
        self._lazy = []
        self._lazy_rows = bytearray(len(self._lazy_rows))

    def params_changed(self) -> None:
        """Forget what the params rows allow (call after the params memory changes)."""
        self._lanes = None

    def _usable_lanes(self) -> list[int]:
        """Per params row, the leading lanes whose shift lies in -31..31 and whose bias and
        multiplier lie in int32 (0 for a row whose bias or multiplier does not)."""
        machine = self.machine
        shift_ok = (machine.shift >= -31) & (machine.shift <= 31)
        lanes = np.where(shift_ok.all(axis=1), shift_ok.shape[1], np.argmin(shift_ok, axis=1))
        bad = np.zeros(shift_ok.shape, dtype=bool)
        for values in (machine.bias, machine.multiplier):
            bad |= (values < _INT32[0]) | (values > _INT32[1])
        first_bad = np.where(bad.any(axis=1), np.argmax(bad, axis=1), shift_ok.shape[1])
        usable: list[int] = np.minimum(lanes, first_bad).tolist()
        return usable

    def add(self, instr: "Store", lazy: bool = False) -> bool:
        """Hold `instr` back, or return False when the caller must execute it itself.

        `lazy`: pending COMPUTEs write its acc rows, so they are copied at their flush.
        Raises the SimulationError `_exec_store` raises for it (nothing is held then).
        """
        lanes = self._lanes
        if lanes is None:
            lanes = self._lanes = self._usable_lanes()
        p, n, m = instr.param_row, instr.n, instr.m
        if lanes[p] < n:
            shifts = self.machine.shift[p, :n]
            if ((shifts >= -31) & (shifts <= 31)).all():
                return False  # a bias or multiplier outside int32: requantize's own error
            bad = int(np.flatnonzero((shifts < -31) | (shifts > 31))[0])
            raise SimulationError(
                f"STORE uses params row {p} whose lane {bad} has shift "
                f"{int(shifts[bad])}, outside -31..31; fix the params image"
            )
        key = (m, instr.n0, instr.row_stride0, instr.row_stride1, n)
        layout = self._layouts.get(key)
        if layout is None:
            pattern = instr.row_pattern
            low, high = pattern.extent(m)
            row_bytes = n * self.machine.config.operand_bytes
            layout = self._layouts[key] = (pattern.addresses(m) - instr.ext,
                                           low - instr.ext, high - instr.ext + row_bytes - 1)
        ext = instr.ext
        low, high = ext + layout[1], ext + layout[2]
        memory_size = self.machine.memory.size
        if low < 0 or high >= memory_size:
            self.machine._check_external(instr.MNEMONIC, low, high)
        acc_row = instr.acc_row
        if lazy:
            self._lazy.append(len(self.held))
            self.acc.append(None)
            self._lazy_rows[acc_row : acc_row + m] = self._ones[:m]
        else:
            self.acc.append(self.machine.acc[acc_row : acc_row + m].copy())
        self.held.append(instr)
        writes = self.writes
        self.writes = (low, high) if writes[0] > writes[1] else (
            min(writes[0], low), max(writes[1], high))
        self._rows += m
        if self._rows >= _MAX_HELD_ROWS:
            self.flush()
        return True

    def flush(self) -> None:
        """Apply every held STORE to external memory, as program order would."""
        held = self.held
        if not held:
            return
        if self._lazy:
            self.computes.flush()  # (which resolves them)
        if self.before_write is not None:
            self.before_write()
        acc_parts = [rows for rows in self.acc if rows is not None]
        self.held, self.acc = [], []
        self.writes = _NONE
        self._rows = 0
        machine = self.machine
        cols = machine.config.cols
        element_bytes = machine.config.operand_bytes
        counts = np.fromiter((s.m for s in held), dtype=np.int64, count=len(held))
        fields = np.array([(s.param_row, s.n, s.zero_point, s.lo, s.hi, s.flip_sign, s.ext)
                           for s in held], dtype=np.int64)
        per_row = np.repeat(fields, counts, axis=0)
        acc = np.concatenate(acc_parts) if len(acc_parts) > 1 else acc_parts[0]
        params = per_row[:, 0]
        bias, multiplier, shift = (machine.bias[params], machine.multiplier[params],
                                   machine.shift[params])
        widths = per_row[:, 1]
        narrow = bool((widths < cols).any())
        if narrow:  # lanes >= n: bias, multiplier, shift and acc 0 (those lanes are not written)
            unused = np.arange(cols) >= widths[:, None]
            for values in (acc, bias, multiplier, shift):
                values[unused] = 0
        x_bound = _magnitude(acc) + _magnitude(bias)
        if x_bound * _magnitude(multiplier) >= _INT64_SAFE:  # (not exact in int64)
            self._apply_one_by_one(held, acc_parts, counts)
            return
        q = round_shift_int64((acc + bias) * multiplier, shift + MULTIPLIER_BITS)
        q += per_row[:, 2:3]
        np.maximum(q, per_row[:, 3:4], out=q)
        np.minimum(q, per_row[:, 4:5], out=q)
        raw = q.astype(np.uint8)  # (the low byte, as `_write_rows`)
        if element_bytes > 1:
            raw = np.stack([(q >> (8 * b)) & 0xFF for b in range(element_bytes)], axis=-1)
            raw = raw.reshape(q.shape[0], -1).astype(np.uint8)
        flips = per_row[:, 5]
        if flips.any():
            raw ^= (flips * _FLIP).astype(np.uint8)[:, None]
        relative = [self._layouts[(s.m, s.n0, s.row_stride0, s.row_stride1, s.n)][0]
                    for s in held]
        bases = np.concatenate(relative) + per_row[:, 6]
        row_bytes = widths * element_bytes
        if bases.size > 1:
            order = np.argsort(bases, kind="stable")
            ends = bases[order] + row_bytes[order]
            overlapping = bool((bases[order][1:] < ends[:-1]).any())
        else:
            overlapping = False
        if overlapping:  # in order: later rows win
            for address, width, row in zip(bases.tolist(), row_bytes.tolist(), raw,
                                           strict=True):
                machine.memory[address : address + width] = row[:width]
            return
        offsets = np.arange(raw.shape[1])
        if narrow:
            used = offsets < row_bytes[:, None]
            machine.memory[(bases[:, None] + offsets)[used]] = raw[used]
        else:
            machine.memory[bases[:, None] + offsets] = raw

    def _apply_one_by_one(self, held: "list[Store]", acc_parts: list[np.ndarray],
                          counts: np.ndarray) -> None:
        """Apply held STOREs through `Machine._exec_store` on their saved accumulator rows."""
        machine = self.machine
        for instr, rows in zip(held, acc_parts, strict=True):
            saved = machine.acc[instr.acc_row : instr.acc_row + instr.m].copy()
            machine.acc[instr.acc_row : instr.acc_row + instr.m] = rows
            try:
                machine._exec_store(instr)
            finally:
                machine.acc[instr.acc_row : instr.acc_row + instr.m] = saved
