"""Deferred, batched scratchpad LOADs for `Machine.run` (same results as one by one).

`LoadBatch(machine, weights)` holds back the LOADs into one scratchpad (spad_wt if
`weights`, else spad_in) of one-byte operands whose bytes lie in external memory, and
applies them in `flush`: one gather and one scatter per row length, with exactly the rows that executing
them one by one gives (`Machine._exec_load`). The held LOADs write pairwise disjoint rows
(`add` refuses a LOAD into rows a held one writes: the caller flushes first), so their
order within a flush does not matter.

A held LOAD reads external memory when flushed, and its rows change then, so the caller
flushes before anything writes external memory (a STORE batch's flush, POOL, ADD, COPY) or
reads rows a held LOAD writes (`writes`: a pending COMPUTE batch's flush for spad_in;
COMPUTE.OS and PRELOAD, which read spad_wt when offered; POOL, ADD, COPY), before a LOAD
into its scratchpad it executes itself, and at the end of the run.
"""

from typing import TYPE_CHECKING

import numpy as np

from systolic.isa.requant import sign_extend

if TYPE_CHECKING:
    from systolic.isa.instructions import Load
    from systolic.sim.golden.machine import Machine

__all__ = ["LoadBatch"]

_FLIP = 0x80
_MAX_HELD_ROWS = 8192  # rows held before a flush (bounds the batch's memory)

Layout = tuple[np.ndarray, int, int]
"""`Machine`'s cached (offsets, low, high) of a LOAD shape: byte offsets (count x length)
from `ext`, and their lowest and highest."""


class LoadBatch:
    """Held-back LOADs into one scratchpad (see the module docstring)."""

    def __init__(self, machine: "Machine", weights: bool) -> None:
        self.machine = machine
        self.spad = machine.spad_wt if weights else machine.spad_in
        self.width = machine._weight_width if weights else machine._input_width
        self.held: list[tuple[Layout, int, int, bool, Load]] = []
        self._rows = bytearray(self.spad.shape[0])
        self._ones = b"\x01" * len(self._rows)
        self._count = 0

    def __bool__(self) -> bool:
        return bool(self.held)

    def writes(self, first: int, count: int) -> bool:
        """Return whether a held LOAD writes a row in [first, first + count)."""
        return self._rows.find(1, first, first + count) >= 0

    def add(self, instr: "Load", layout: Layout) -> bool:
        """Hold `instr`, whose bytes are `instr.ext + layout[0]`, all inside external
        memory; return False (nothing held) when a held LOAD writes one of its rows."""
        rows, row, count = self._rows, instr.row, instr.count
        if rows.find(1, row, row + count) >= 0:
            return False
        rows[row : row + count] = self._ones[:count]
        self.held.append((layout, instr.ext, row, instr.flip_sign, instr))
        self._count += count
        if self._count >= _MAX_HELD_ROWS:
            self.flush()
        return True

    def flush(self) -> None:
        """Apply every held LOAD to the scratchpad (one alone through `_exec_load`): per row
        length, one gather and one scatter of whole rows."""
        held = self.held
        if not held:
            return
        self.held = []
        self._rows = bytearray(len(self._rows))
        self._count = 0
        machine = self.machine
        if len(held) == 1:
            machine._exec_load(held[0][4])
            return
        groups: dict[int, list[tuple[Layout, int, int, bool, Load]]] = {}
        for entry in held:
            groups.setdefault(entry[0][0].shape[1], []).append(entry)
        spad, memory = self.spad, machine.memory
        for length, entries in groups.items():
            offsets = [entry[0][0] for entry in entries]
            counts = np.fromiter((o.shape[0] for o in offsets), dtype=np.int64,
                                 count=len(offsets))
            sources = np.concatenate(offsets)  # (rows, length)
            exts = np.fromiter((entry[1] for entry in entries), dtype=np.int64,
                               count=len(entries))
            sources += np.repeat(exts, counts)[:, None]
            raw = memory[sources]
            flips = [entry[3] for entry in entries]
            if all(flips):
                raw ^= np.uint8(_FLIP)
            elif any(flips):
                raw ^= np.repeat(np.array(flips, dtype=np.uint8) * np.uint8(_FLIP),
                                 counts)[:, None]
            firsts = np.fromiter((entry[2] for entry in entries), dtype=np.int64,
                                 count=len(entries))
            rows = np.arange(int(counts.sum())) + np.repeat(firsts - (np.cumsum(counts) - counts),
                                                             counts)
            values = raw.view(np.int8)
            if length < spad.shape[1]:
                spad[rows, length:] = 0
            if self.width >= 8:  # sign-extending int8 to `width` bits changes nothing
                spad[rows, :length] = values
            else:
                spad[rows, :length] = sign_extend(values.astype(np.int64), self.width)
