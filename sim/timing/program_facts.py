"""The static facts of a program's instructions for the cycle model (`program_model`).

`Describer(config).describe(instr)` returns one instruction's unit, footprint and cost (LOAD
beats or STORE-unit duration), cached by the fields they depend on. `ProgramFacts(describer,
body, ws)` holds the same for a whole program in flat lists, built class by class with numpy
(one `describe` per distinct shape), in the form `ProgramModel`'s main loop reads: per
instruction its kind (`K_*`), unit, conflict mask, per-memory row spans and unit arguments.
"""

import dataclasses
import functools
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.encode_batch import CLASS_OF_OPCODE, WORDS, encode_words, field_columns, opcodes
from systolic.isa.instructions import (
    Add,
    Compute,
    ComputeOS,
    Copy,
    Instruction,
    LayerNorm,
    Load,
    LoadTarget,
    Pool,
    Preload,
    Softmax,
    Store,
    Table,
    decode,
)
from systolic.isa.memories import Memory, params_row_bytes
from systolic.sim.timing.dispatch_model import MEMORY_ID
from systolic.sim.timing.native_facts import external_facts
from systolic.sim.timing.store_timing import duration

__all__ = [
    "ALL_MEMORIES", "EX", "K_COMPUTE", "K_COMPUTE_OS", "K_LD", "K_PRELOAD", "K_ST", "LD",
    "MEMORIES", "MEMORY_SETS", "SHARED", "ST", "Describer", "ProgramFacts", "Range", "overlap",
]

LD, EX, ST = 0, 1, 2
"""The units, as the dispatcher numbers them."""

# Per instruction class: its unit, and for each footprint range (in `footprint` order) the
# field its position moves with. The footprint of an instruction is that of the same
# instruction with these fields at zero (and `ext` reduced modulo the bus width), shifted.
_POSITIONS: dict[type[Instruction], tuple[int, tuple[str, ...]]] = {
    Load: (LD, ("row", "ext")),
    Preload: (EX, ("row",)),
    Compute: (EX, ("in_row", "acc_row")),
    ComputeOS: (EX, ("in_row", "wt_row", "acc_row")),
    Store: (ST, ("acc_row", "param_row", "ext")),
    Pool: (ST, ("in_row", "ext")),
    Add: (ST, ("a_row", "b_row", "ext")),
    Copy: (ST, ("in_row", "ext")),
    Table: (ST, ("row",)),
    Softmax: (ST, ("in_row", "ext")),
    LayerNorm: (ST, ("in_row", "ext")),
}

# Fields that change computed values but neither the footprint nor the timing.
_VALUE_ONLY = frozenset({
    "flip_sign", "accumulate", "mode", "zero_point", "lo", "hi", "multiplier", "shift", "zp_in",
    "zp_out", "multiplier_a", "multiplier_b", "zp_a", "zp_b", "in_zero_point", "eps",
})

Range = tuple[int, int, int, bool]  # (memory id, first, last, write)
_FEW = 64  # rows x segments up to which a LOAD's beats are summed without numpy


class Describer:
    """Unit, footprint and cost of instructions, cached by the fields they depend on.

    Footprints move with the position fields (`_POSITIONS`) and the cost depends on `ext`
    only modulo the bus width, so the cache key is the class, the remaining fields but
    those that change values only (`_VALUE_ONLY`), and `ext % bus_bytes`.
    """

    def __init__(self, config: ArrayConfig) -> None:
        self.config = config
        self.bus = config.bus_bytes
        self._dim = config.dim
        self._cache: dict[tuple[Any, ...], tuple[int, tuple[Range, ...], int]] = {}
        self._runs: dict[tuple[int, ...], list[tuple[int, int]]] = {}  # element pattern -> runs
        self._keys: dict[type, tuple[attrgetter[Any], attrgetter[Any], bool]] = {}
        self._names: dict[type, tuple[str, ...]] = {}
        for cls, (_, positions) in _POSITIONS.items():
            names = [f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                     if f.name not in positions and f.name not in _VALUE_ONLY]
            # attrgetter of one name returns the value, of several a tuple: always ask for two
            where = attrgetter(*positions, *positions[:1]) if len(positions) == 1 else attrgetter(
                *positions)
            # (TABLE has no such field: its constant OPCODE stands for them in the key)
            shape = attrgetter(*names) if names else attrgetter("OPCODE")
            self._keys[cls] = (shape, where, "ext" in positions)
            self._names[cls] = tuple(names)

    def shape_of(self, cls: type) -> "attrgetter[Any]":
        """Return the getter of the cache key's fields of instructions of class `cls`."""
        return self._keys[cls][0]

    def shape_names(self, cls: type) -> tuple[str, ...]:
        """Return the names of the cache key's fields of instructions of class `cls`."""
        return self._names[cls]

    def describe(self, instr: Instruction) -> tuple[int, tuple[Range, ...], int]:
        """Return (unit, footprint ranges, cost): cost is LOAD beats or a STORE-unit duration."""
        cls = type(instr)
        if cls is Compute:  # the most frequent instructions: their footprints directly
            in_row, m, acc_row = instr.in_row, instr.m, instr.acc_row  # type: ignore[attr-defined]
            return EX, ((0, in_row, in_row + m - 1, False),
                        (2, acc_row, acc_row + m - 1, True)), 0
        if cls is Preload:
            row = instr.row  # type: ignore[attr-defined]
            return EX, ((1, row, row + instr.k - 1, False),), 0  # type: ignore[attr-defined]
        if cls is ComputeOS:  # ComputeOS.footprint, directly
            in_row, m, k = instr.in_row, instr.m, instr.k  # type: ignore[attr-defined]
            wt_row, acc_row = instr.wt_row, instr.acc_row  # type: ignore[attr-defined]
            in_last = in_row + (-(-k // self._dim) - 1) * instr.a_stride + m - 1  # type: ignore[attr-defined]
            return EX, ((0, in_row, in_last, False), (1, wt_row, wt_row + k - 1, False),
                        (2, acc_row, acc_row + m - 1, True)), 0
        shape, where, has_ext = self._keys[cls]
        offsets = where(instr)
        key: tuple[Any, ...]
        if has_ext:
            ext = offsets[-1]
            phase = ext % self.bus
            offsets = (*offsets[:-1], ext - phase)
            key = (cls, shape(instr), phase)
        else:
            key = (cls, shape(instr))
        cached = self._cache.get(key)
        if cached is None:
            cached = self._fill(key, instr, offsets)
        unit, rel, cost = cached
        if len(rel) == 2:  # LOAD, COPY, POOL: unrolled
            (m0, f0, l0, w0), (m1, f1, l1, w1) = rel
            o0, o1 = offsets[0], offsets[1]
            return unit, ((m0, f0 + o0, l0 + o0, w0), (m1, f1 + o1, l1 + o1, w1)), cost
        return unit, tuple([(mem, first + o, last + o, write)
                            for (mem, first, last, write), o in zip(rel, offsets)]), cost

    def _fill(self, key: tuple[Any, ...], instr: Instruction,
              offsets: tuple[int, ...]) -> tuple[int, tuple[Range, ...], int]:
        unit, positions = _POSITIONS[type(instr)]
        footprint = instr.footprint(self.config)
        if len(footprint) != len(positions):
            raise AssertionError(f"{instr.MNEMONIC}: footprint does not match its positions")
        rel = tuple((MEMORY_ID[a.memory], a.first - o, a.last - o, a.write)
                    for a, o in zip(footprint, offsets, strict=False))
        if isinstance(instr, Load):
            cost = self._load_beats(instr)
        elif unit == ST:
            cost = duration(instr, self.config)
        else:
            cost = 0
        value = (unit, rel, cost)
        self._cache[key] = value
        return value

    def _load_beats(self, instr: Load) -> int:
        """Return the aligned beats of every segment of every row (vectorised, or in plain
        integers for a few rows and segments)."""
        config, bus = self.config, self.bus
        if instr.mem is LoadTarget.PARAMS:
            runs = [(0, params_row_bytes(config))]
        else:
            key = (instr.k0, instr.length, instr.run, instr.n_mid, instr.stride_mid,
                   instr.stride_outer)
            cached = self._runs.get(key)
            if cached is None:
                cached = self._runs[key] = [
                    (s.address, s.length)
                    for s in instr.element_pattern.runs(config.operand_bytes)]
            runs = cached
        count = instr.count
        if bus == 1:
            return count * sum(length for _, length in runs)
        if count * len(runs) <= _FEW:
            n0, stride0, stride1, ext = instr.n0, instr.row_stride0, instr.row_stride1, instr.ext
            total = count * len(runs)
            for r in range(count):
                base = ext + r // n0 * stride1 + r % n0 * stride0
                for offset, length in runs:
                    start = base + offset
                    total += (start + length - 1) // bus - start // bus
            return total
        bases = instr.row_pattern.addresses(count)
        total = 0
        for offset, length in runs:
            starts = bases + offset
            total += int(((starts + (length - 1)) // bus - starts // bus).sum()) + instr.count
        return total


# Instruction kinds of the main loop: the unit and, for EXECUTE, the unit's rule.
K_LD, K_ST, K_COMPUTE, K_PRELOAD, K_COMPUTE_OS = range(5)
_UNIT_OF_KIND = (LD, ST, EX, EX, EX)
_KIND_OF_TYPE: dict[type, int] = {
    Load: K_LD, Store: K_ST, Pool: K_ST, Add: K_ST, Copy: K_ST, Table: K_ST, Softmax: K_ST,
    LayerNorm: K_ST,
    Compute: K_COMPUTE, Preload: K_PRELOAD, ComputeOS: K_COMPUTE_OS,
}
MEMORIES = len(MEMORY_ID)
ALL_MEMORIES = (1 << MEMORIES) - 1
SHARED = 1 << 16
"""Mask bit of an instruction with two ranges in one memory (compared range by range)."""
MEMORY_SETS = tuple(tuple(m for m in range(MEMORIES) if bits >> m & 1)
                    for bits in range(1 << MEMORIES))
"""Per set of memories (bit m: memory m), their ids."""


def _kind_of(cls: type) -> int:
    """Return the main loop's kind of an instruction class (subclasses as their base)."""
    for base, kind in _KIND_OF_TYPE.items():
        if issubclass(cls, base):
            return kind
    raise ValueError(f"{cls.__name__} is not an instruction the accelerator executes")


class ProgramFacts:
    """The static data of a program's instructions (HALT excluded), in flat arrays and lists.

    Per instruction i: `kinds[i]` (`K_*`), `units[i]` (LD, EX, ST), `masks[i]` (bit m: a
    range in memory m, bit 8 + m: a write to it, `SHARED`: two ranges in one memory),
    `firsts[m][i]`, `lasts[m][i]` (the rows of its range in memory m; only meaningful for the
    memories in its mask), `args[i]` (LOAD beats, the STORE-unit duration, a COMPUTE's or
    COMPUTE.OS's m) and `ks[i]` (a COMPUTE.OS's k); `footprint(i)` gives its ranges back.
    The same values are numpy arrays (int64): `kind_array`, `unit_array`, `mask_array`,
    `arg_array`, `k_array` (shape (n,)) and `span_array` (shape (2 * MEMORIES, n): row 2m
    holds firsts[m], row 2m + 1 lasts[m]); the lists are made from them when first read.

    The facts come from the instruction words (`words`: `encode_batch.encode_words(body)`,
    computed when not given), class by class: COMPUTE, PRELOAD and COMPUTE.OS from their
    footprint formulas, the other classes from one `Describer.describe` per distinct cache
    key whose ranges are shifted by each instruction's position fields. Raises ValueError for
    an EXECUTE instruction of the other dataflow (`ExecuteTiming`'s message) and for
    instructions the accelerator does not execute (HALT).
    """

    def __init__(self, describer: Describer, body: Sequence[Instruction], ws: bool,
                 words: np.ndarray | None = None) -> None:
        n = len(body)
        if words is None:
            words = encode_words(body)
        if words.shape != (n, WORDS):
            raise ValueError(f"words must have shape ({n}, {WORDS}), not {words.shape}")
        codes_of = opcodes(words)
        present = np.flatnonzero(np.bincount(codes_of, minlength=256)).tolist()
        classes = {op: CLASS_OF_OPCODE[op] for op in present}
        kind_table = np.zeros(256, dtype=np.int64)
        for op, cls in classes.items():
            kind = kind_table[op] = _kind_of(cls)
            if kind >= K_COMPUTE and (kind == K_COMPUTE_OS) == ws and (
                    describer.config.dataflow is not Dataflow.BOTH):  # the unit refuses it
                raise ValueError(
                    f"{cls.MNEMONIC} is not an EXECUTE instruction of a "
                    f"{describer.config.dataflow.value} array")
        self.kind_array: np.ndarray = kind_table[codes_of]
        self.unit_array: np.ndarray = np.array(_UNIT_OF_KIND, dtype=np.int64)[self.kind_array]
        self.arg_array: np.ndarray = np.zeros(n, dtype=np.int64)
        self.k_array: np.ndarray = np.zeros(n, dtype=np.int64)
        self.mask_array: np.ndarray = np.zeros(n, dtype=np.int64)
        self.span_array: np.ndarray = np.zeros((MEMORIES * 2, n), dtype=np.int64)
        self.span_array[1::2] = -1  # (an empty range in every memory)
        self.shared: dict[int, tuple[Range, ...]] = {}
        self._external: tuple[np.ndarray, ...] | None = None
        for op, cls in classes.items():
            where = np.flatnonzero(codes_of == op)
            if cls in (Compute, Preload, ComputeOS):
                spec = self._execute_facts(describer, cls, words[where], where)
            else:
                spec = self._unit_facts(describer, cls, words, where)
            self._add_spans(spec, where, self.mask_array, self.span_array)

    def _execute_facts(self, describer: Describer, cls: type[Instruction], rows: np.ndarray,
                       where: np.ndarray) -> list[tuple[Any, Any, Any, Any]]:
        """Set the arguments of the EXECUTE instructions `where` (all of class `cls`, encoded
        in `rows`); return their footprint columns (from the footprint formulas)."""
        if cls is Compute:
            in_row, m, acc_row = field_columns(rows, cls, ("in_row", "m", "acc_row"))
            self.arg_array[where] = m
            return [(0, in_row, in_row + m - 1, False), (2, acc_row, acc_row + m - 1, True)]
        if cls is Preload:
            row, k = field_columns(rows, cls, ("row", "k"))
            return [(1, row, row + k - 1, False)]
        in_row, wt_row, acc_row, m, k, a_stride = field_columns(
            rows, cls, ("in_row", "wt_row", "acc_row", "m", "k", "a_stride"))
        in_last = in_row + (-(-k // describer.config.dim) - 1) * a_stride + m - 1
        self.arg_array[where] = m
        self.k_array[where] = k
        return [(0, in_row, in_last, False), (1, wt_row, wt_row + k - 1, False),
                (2, acc_row, acc_row + m - 1, True)]

    def _unit_facts(self, describer: Describer, cls: type[Instruction], words: np.ndarray,
                    where: np.ndarray) -> list[tuple[Any, Any, Any, Any]]:
        """Set the costs of the LOAD or STORE-unit instructions `where` (all of class `cls`)
        of the program encoded in `words`; return their footprint columns (external ranges
        and costs from the native facts when available, else `_shifted_ranges`; TABLE, whose
        cost depends on the configuration only and which has no external range, always from
        `_shifted_ranges`)."""
        if cls is Table:
            spec, self.arg_array[where] = _shifted_ranges(describer, cls, words[where])
            return spec
        if self._external is None:
            self._external = external_facts(words, describer.config) or ()
        rows = words[where]
        if not self._external:
            spec, self.arg_array[where] = _shifted_ranges(describer, cls, rows)
            return spec
        cost, ext_first, ext_last = (column[where] for column in self._external)
        self.arg_array[where] = cost
        external = (MEMORY_ID[Memory.EXTERNAL], ext_first, ext_last, cls is not Load)
        return [*_unit_ranges(cls, rows, describer.config), external]

    @functools.cached_property
    def kinds(self) -> list[int]:
        """Per instruction its kind (`K_*`)."""
        kinds: list[int] = self.kind_array.tolist()
        return kinds

    @functools.cached_property
    def units(self) -> list[int]:
        """Per instruction its unit (LD, EX, ST)."""
        units: list[int] = self.unit_array.tolist()
        return units

    @functools.cached_property
    def masks(self) -> list[int]:
        """Per instruction its conflict mask (see the class docstring)."""
        masks: list[int] = self.mask_array.tolist()
        return masks

    @functools.cached_property
    def args(self) -> list[int]:
        """Per instruction its unit argument (see the class docstring)."""
        args: list[int] = self.arg_array.tolist()
        return args

    @functools.cached_property
    def ks(self) -> list[int]:
        """Per instruction a COMPUTE.OS's k (else 0)."""
        ks: list[int] = self.k_array.tolist()
        return ks

    @functools.cached_property
    def _span_lists(self) -> list[list[int]]:
        spans: list[list[int]] = self.span_array.tolist()
        return spans

    @functools.cached_property
    def firsts(self) -> list[list[int]]:
        """Per memory, per instruction the first row of its range there."""
        return self._span_lists[0::2]

    @functools.cached_property
    def lasts(self) -> list[list[int]]:
        """Per memory, per instruction the last row of its range there."""
        return self._span_lists[1::2]

    def conflict(self, index: int, other: int) -> bool:
        """Return whether instructions `index` and `other` conflict (`overlap`): they use a
        common memory, at least one of them writes it, and their rows there overlap."""
        mine, theirs = self.masks[index], self.masks[other]
        common = (mine >> 8 & theirs | mine & theirs >> 8) & ALL_MEMORIES
        if not common:
            return False
        if (mine | theirs) & SHARED:
            return overlap(self.footprint(index), self.footprint(other))
        firsts, lasts = self.firsts, self.lasts
        for m in MEMORY_SETS[common]:
            if firsts[m][index] <= lasts[m][other] and firsts[m][other] <= lasts[m][index]:
                return True
        return False

    def _add_spans(self, spec: list[tuple[Any, Any, Any, Any]], where: np.ndarray,
                   masks: np.ndarray, spans: np.ndarray) -> None:
        """Record the footprints `spec` (per range: memory, first, last, write, each a
        constant or one value per instruction) of the instructions `where`."""
        count = where.size
        columns = [tuple(np.broadcast_to(np.asarray(value), count) for value in fields)
                   for fields in spec]
        shared = np.zeros(count, dtype=bool)
        for r, (mem, first, last, write) in enumerate(columns):
            masks[where] |= np.left_shift(1, mem) | np.where(write, np.left_shift(1, mem + 8), 0)
            for m in range(MEMORIES):
                here = mem == m
                spans[2 * m, where[here]] = first[here]
                spans[2 * m + 1, where[here]] = last[here]
            for other in columns[:r]:
                shared |= other[0] == mem
        if shared.any():  # two ranges in one memory: `spans` cannot hold them
            masks[where[shared]] |= SHARED
            picked = np.flatnonzero(shared).tolist()
            rows = [[(int(mem[j]), int(first[j]), int(last[j]), bool(write[j]))
                     for mem, first, last, write in columns] for j in picked]
            for j, ranges in zip(picked, rows, strict=True):
                self.shared[int(where[j])] = tuple(ranges)

    def footprint(self, index: int) -> tuple[Range, ...]:
        """Return instruction `index`'s footprint as (memory, first, last, write) ranges."""
        shared = self.shared.get(index)
        if shared is not None:
            return shared
        mask = self.masks[index]
        return tuple((m, self.firsts[m][index], self.lasts[m][index], bool(mask >> (8 + m) & 1))
                     for m in range(MEMORIES) if mask >> m & 1)


_LOAD_MEMORY_ID = np.array([MEMORY_ID[target.memory] for target in LoadTarget], dtype=np.int64)


def _unit_ranges(cls: type[Instruction], rows: np.ndarray,
                 config: ArrayConfig) -> list[tuple[Any, Any, Any, Any]]:
    """Return the on-chip footprint ranges (in `footprint` order, the external one left out)
    of the LOAD or STORE-unit instructions encoded in `rows`, all of class `cls`, on
    `config`."""
    if cls is Load:
        mem, row, count = field_columns(rows, cls, ("mem", "row", "count"))
        return [(_LOAD_MEMORY_ID[mem], row, row + count - 1, True)]
    spad_in = MEMORY_ID[Memory.SPAD_IN]
    if cls is Store:
        acc_row, m, param_row = field_columns(rows, cls, ("acc_row", "m", "param_row"))
        return [(MEMORY_ID[Memory.ACC], acc_row, acc_row + m - 1, False),
                (MEMORY_ID[Memory.PARAMS], param_row, param_row, False)]
    if cls is Pool:
        in_row, h, w = field_columns(rows, cls, ("in_row", "h", "w"))
        return [(spad_in, in_row, in_row + h * w - 1, False)]
    if cls is Add:
        a_row, b_row, m, broadcast = field_columns(rows, cls, ("a_row", "b_row", "m",
                                                               "b_broadcast"))
        b_rows = np.where(broadcast != 0, 1, m)
        return [(spad_in, a_row, a_row + m - 1, False),
                (spad_in, b_row, b_row + b_rows - 1, False)]
    if cls is Copy:
        in_row, m = field_columns(rows, cls, ("in_row", "m"))
        return [(spad_in, in_row, in_row + m - 1, False)]
    if cls is Softmax or cls is LayerNorm:
        in_row, m, length = field_columns(rows, cls, ("in_row", "m", "length"))
        chunks = -(-length // config.dim)
        return [(spad_in, in_row, in_row + m * chunks - 1, False)]
    raise ValueError(f"{cls.__name__} is not a LOAD or STORE-unit instruction")


def _shifted_ranges(describer: Describer, cls: type[Instruction], rows: np.ndarray
                    ) -> tuple[list[tuple[Any, Any, Any, Any]], np.ndarray]:
    """Return the footprint columns and costs of the instructions encoded in `rows` (all of
    class `cls`): one instruction per distinct `Describer` cache key is described (decoded
    from its words), the others are shifted copies."""
    _, positions = _POSITIONS[cls]
    offsets = field_columns(rows, cls, positions)
    shape = field_columns(rows, cls, describer.shape_names(cls))
    if "ext" in positions:
        phase = offsets[-1] % describer.bus
        offsets[-1] = offsets[-1] - phase
        shape.append(phase)
    keys = np.stack(shape, axis=1) if shape else np.zeros((rows.shape[0], 1), dtype=np.int64)
    # (each key row as one opaque value: sorting those is much faster than np.unique(axis=0))
    opaque = np.ascontiguousarray(keys).view(np.dtype((np.void, keys.shape[1] * 8))).reshape(-1)
    _, first, uid = np.unique(opaque, return_index=True, return_inverse=True)
    uid = uid.reshape(-1)
    table = []
    costs = []
    for i in first.tolist():
        _, ranges, cost = describer.describe(decode(rows[i].tobytes()))
        costs.append(cost)
        table.append([(mem, lo - int(o[i]), hi - int(o[i]), write)
                      for (mem, lo, hi, write), o in zip(ranges, offsets, strict=True)])
    spec = []
    for r, o in enumerate(offsets):
        mem, lo, hi, write = (np.array([row[r][f] for row in table])[uid] for f in range(4))
        spec.append((mem, lo + o, hi + o, write.astype(bool)))
    return spec, np.array(costs, dtype=np.int64)[uid]


def overlap(mine: tuple[Range, ...], theirs: tuple[Range, ...]) -> bool:
    """Return whether two footprints conflict: a common memory, overlapping rows, a write."""
    return any(mem == mem2 and (write or write2) and first <= last2 and first2 <= last
               for mem, first, last, write in mine for mem2, first2, last2, write2 in theirs)
