"""Deferred, batched COMPUTE and COMPUTE.OS for `Machine.run` (same results as one by one).

`ComputeBatch(machine)` collects EXECUTE instructions whose operands were fixed when they
were offered (`add_ws`: the spad_in rows and the active weights; `add_os`: the spad_in and
spad_wt rows) and applies them to `machine.acc` in `flush`, with the exact values that
executing them one by one in program order gives (`Machine.execute`, docs/isa.md). The
caller flushes before anything that would change what a pending instruction reads (a LOAD
into spad_in rows for which `reads_in` is true) or read what it writes (a STORE of acc rows
for which `writes_acc` is true), and at the end of the run. Both track the exact rows.

A flush groups the instructions by accumulator rows. When every two pending row ranges are
equal or disjoint, a group is an accumulation chain: its result is the wrapped sum of the
products after its last overwriting (non-accumulating) member, added to the accumulator
unless such a member exists. The products of a chain are one matrix product over the
concatenated K dimension, and chains with the same operand rows share it (their B matrices
side by side). Products run in float64 when a bound on the operands proves every partial sum
exact, else in int64; sums wrap modulo 2^64 in int64 like the per-instruction path, and the
accumulator keeps the low `acc_width` bits, so the values are the same either way. Pending
ranges that overlap otherwise are applied one by one.
"""

from collections.abc import Callable
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from systolic.isa.requant import extremes

if TYPE_CHECKING:
    from systolic.sim.golden.machine import Machine

__all__ = ["ComputeBatch"]

_FLOAT_EXACT = 2**53
_FLOAT32_EXACT = 2**24
_BLOCK_COLUMNS = 32
_GEMM_SIZE = 2**17  # multiply-adds of one BLAS call: below its threshold for threads


def _magnitude(values: np.ndarray) -> int:
    """Return the largest absolute value of an integer array (0 for an empty one)."""
    if not values.size:
        return 0
    least, most = extremes(values)
    return max(most, -least)


def exact_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the int64 matrix product of int64 `a` and `b`, wrapping like int64 arithmetic.

    When the operands' magnitudes prove it exact, the product runs in floating point: K is
    cut into slices short enough that every partial sum of a slice is an exact float32 (else
    float64), one small matrix product per slice and block of 32 columns (stacked, so that
    BLAS runs each on one thread: on a loaded machine its threads cost far more CPU than they
    save), and the slices are summed in float64, exact while every sum stays below 2^53.
    Otherwise the product runs in int64.
    """
    bound = _magnitude(a) * _magnitude(b)
    m, depth = a.shape
    n = b.shape[1]
    if bound * depth >= _FLOAT_EXACT or not m or not n or not depth:
        exact: np.ndarray = a @ b
        return exact
    if not bound:
        return np.zeros((m, n), dtype=np.int64)
    narrow = bound < _FLOAT32_EXACT
    dtype = np.float32 if narrow else np.float64
    width = min(n, _BLOCK_COLUMNS)
    terms = min(depth, max(1, _GEMM_SIZE // (m * width)))
    if narrow:
        terms = min(terms, (_FLOAT32_EXACT - 1) // bound)
    slices = -(-depth // terms)
    a_pad = np.zeros((m, slices * terms), dtype=dtype)
    a_pad[:, :depth] = a
    b_pad = np.zeros((slices * terms, n), dtype=dtype)
    b_pad[:depth] = b
    a_stack = a_pad.reshape(m, slices, terms).transpose(1, 0, 2)
    result = np.empty((m, n), dtype=np.int64)
    for first in range(0, n, width):
        b_stack = b_pad[:, first : first + width].reshape(slices, terms, -1)
        partial = a_stack @ b_stack
        result[:, first : first + width] = partial[0] if slices == 1 else partial.sum(
            axis=0, dtype=np.float64)
    return result


class ComputeBatch:
    """Pending EXECUTE instructions of one machine (see the module docstring).

    Each pending entry is (acc_row, m, accumulate, operand key, B): the operand key names
    the A rows in spad_in (`_operand`: equal keys, equal A, m x K) and B is K x cols int64.
    """

    def __init__(self, machine: "Machine") -> None:
        self.machine = machine
        self.pending: list[tuple[int, int, bool, tuple[int, ...], np.ndarray]] = []
        # One byte per spad_in / acc row: 1 where a pending instruction reads / writes it.
        self._in_rows = bytearray(machine.spad_in.shape[0])
        self._acc_rows = bytearray(machine.acc.shape[0])
        self._ones = b"\x01" * max(len(self._in_rows), len(self._acc_rows))
        self.before_flush: Callable[[], None] | None = None
        """Called before a flush that applies something (it reads the scratchpads)."""
        self.after_flush: Callable[[], None] | None = None
        """Called after a flush that applied something (the accumulator changed)."""

    def __bool__(self) -> bool:
        return bool(self.pending)

    def reads_in(self, first: int, count: int) -> bool:
        """Return whether a pending instruction reads a spad_in row in [first, first+count)."""
        return self._in_rows.find(1, first, first + count) >= 0

    def writes_acc(self, first: int, count: int) -> bool:
        """Return whether a pending instruction writes an acc row in [first, first+count)."""
        return self._acc_rows.find(1, first, first + count) >= 0

    def add_ws(self, in_row: int, m: int, acc_row: int, accumulate: bool,
               weights: np.ndarray) -> None:
        """Defer a weight-stationary COMPUTE with the active `weights` (rows x cols)."""
        self.pending.append((acc_row, m, accumulate, (in_row,), weights))
        ones = self._ones
        self._in_rows[in_row : in_row + m] = ones[:m]
        self._acc_rows[acc_row : acc_row + m] = ones[:m]

    def add_os(self, in_row: int, a_stride: int, m: int, k: int, n: int, wt_row: int,
               acc_row: int, accumulate: bool) -> None:
        """Defer a COMPUTE.OS (its B matrix is copied now: k x cols, lanes >= n zero)."""
        machine = self.machine
        cols = machine.config.cols
        if n == cols:
            b = machine.spad_wt[wt_row : wt_row + k, :cols].copy()
        else:
            b = np.zeros((k, cols), dtype=np.int64)
            b[:, :n] = machine.spad_wt[wt_row : wt_row + k, :n]
        chunks = -(-k // machine.config.dim)
        self.pending.append((acc_row, m, accumulate, (in_row, a_stride, k), b))
        ones, in_rows = self._ones, self._in_rows
        if chunks == 1 or a_stride <= m:  # the chunks' rows are one range
            span = (chunks - 1) * a_stride + m
            in_rows[in_row : in_row + span] = ones[:span]
        else:
            for first in range(in_row, in_row + chunks * a_stride, a_stride):
                in_rows[first : first + m] = ones[:m]
        self._acc_rows[acc_row : acc_row + m] = ones[:m]

    def _operand(self, key: tuple[int, ...], m: int) -> np.ndarray:
        """Return the A matrix (m x K) that operand `key` names, from the current spad_in."""
        machine = self.machine
        spad, dim = machine.spad_in, machine.config.dim
        if len(key) == 1:  # weight-stationary: `rows` lanes of m rows
            return spad[key[0] : key[0] + m, : machine.config.rows]
        in_row, a_stride, k = key
        if k <= dim:
            return spad[in_row : in_row + m, :k]
        chunks = -(-k // dim)
        rows = in_row + a_stride * np.arange(chunks)[:, None] + np.arange(m)
        gathered: np.ndarray = spad[rows]  # (chunks, m, dim)
        operand: np.ndarray = gathered.transpose(1, 0, 2).reshape(m, chunks * dim)[:, :k]
        return operand

    def flush(self) -> None:
        """Call `before_flush`, apply every pending instruction to the accumulator, as program
        order would, then call `after_flush`."""
        pending = self.pending
        if not pending:
            return
        if self.before_flush is not None:
            self.before_flush()
        self.pending = []
        self._in_rows = bytearray(len(self._in_rows))
        self._acc_rows = bytearray(len(self._acc_rows))
        self._apply_all(pending)
        if self.after_flush is not None:
            self.after_flush()

    def _apply_all(self, pending: list[tuple[int, int, bool, tuple[int, ...], np.ndarray]]
                   ) -> None:
        """Apply `pending` (program order) to the accumulator."""
        groups: dict[tuple[int, int], list[int]] = {}
        for j, entry in enumerate(pending):
            groups.setdefault((entry[0], entry[1]), []).append(j)
        spans = sorted(groups)
        if any(a + m > b for (a, m), (b, _) in pairwise(spans)):
            for acc_row, m, accumulate, key, b in pending:  # overlapping ranges: in order
                self._apply(acc_row, m, accumulate, [self._operand(key, m)], [b])
            return
        # Chains with the same operand rows share one product (their B side by side).
        shared: dict[tuple[tuple[tuple[int, ...], ...], int], list[tuple[int, int, bool,
                                                                         list[int]]]] = {}
        for (acc_row, m), members in groups.items():
            start = 0
            for position, j in enumerate(members):
                if not pending[j][2]:
                    start = position
            live = members[start:]
            overwrite = not pending[live[0]][2]
            keys = tuple(pending[j][3] for j in live)
            shared.setdefault((keys, m), []).append((acc_row, m, overwrite, live))
        for (keys, m), chains in shared.items():
            a_parts = [self._operand(key, m) for key in keys]
            b_parts = [[pending[j][4] for j in live] for _, _, _, live in chains]
            if len(chains) == 1:
                acc_row, _, overwrite, _ = chains[0]
                self._apply(acc_row, m, not overwrite, a_parts, b_parts[0])
                continue
            cols = self.machine.config.cols
            b_wide = np.concatenate([np.concatenate(parts, axis=0) for parts in b_parts], axis=1)
            product = self._product(a_parts, b_wide)
            for c, (acc_row, _, overwrite, _) in enumerate(chains):
                self._store(acc_row, product[:, c * cols : (c + 1) * cols], not overwrite)

    def _product(self, a_parts: list[np.ndarray], b: np.ndarray) -> np.ndarray:
        """Return the exact int64 product (wrapping like int64) of hstack(a_parts) and b."""
        a = a_parts[0] if len(a_parts) == 1 else np.concatenate(a_parts, axis=1)
        return exact_product(a, b)

    def _apply(self, acc_row: int, m: int, accumulate: bool, a_parts: list[np.ndarray],
               b_parts: list[np.ndarray]) -> None:
        b = b_parts[0] if len(b_parts) == 1 else np.concatenate(b_parts, axis=0)
        self._store(acc_row, self._product(a_parts, b), accumulate)

    def _store(self, acc_row: int, product: np.ndarray, accumulate: bool) -> None:
        self.machine._accumulate(acc_row, product, accumulate)
