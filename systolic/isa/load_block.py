"""`LoadBlock`: LOADs that differ only in where they read and write, kept as columns.

A block is a prototype LOAD and one int64 column per field of `COLUMNS` (row, count, ext,
n0, row_stride0, row_stride1: the LOAD fields no rule reads, `field_copies.FREE_FIELDS`).
It stands for the LOADs `copy_with(prototype, row=row[i], count=count[i], ...)`, i = 0 ..
len - 1, in that order: what the constructor builds from the prototype's other fields and
those values. Construction checks every value against its field's range (a value outside
raises the constructor's own error), so every LOAD of a block is a valid instruction.

What a block gives without one object per LOAD:
- `words()`: their encodings (`Instruction.encode`), the prototype's word with the columns'
  bits in place of its free fields, one array operation per column;
- `accepted(config)`: per LOAD, whether LOAD's acceptance test (`batch_check`) proves it
  valid on `config`, evaluated on those words; `check(config)` runs `Load.check` on the
  others and raises the first one's error;
- `loads()`: the LOAD objects themselves, for the readers that need objects.
"""

import dataclasses
from collections.abc import Iterable

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa import batch_check
from systolic.isa.encode_batch import WORDS, encode_words
from systolic.isa.field_copies import FREE_FIELDS, copy_with
from systolic.isa.fields import Field
from systolic.isa.load import Load

__all__ = ["COLUMNS", "LoadBlock"]

COLUMNS = ("row", "count", "ext", "n0", "row_stride0", "row_stride1")
"""The fields a block keeps per LOAD, in the order of `LoadBlock.columns`' rows."""

assert FREE_FIELDS[Load] == frozenset(COLUMNS)  # (a block may vary exactly these fields)
_FIELDS: tuple[Field, ...] = tuple(
    next(field for field in Load.FIELDS if field.name == name) for name in COLUMNS)


@dataclasses.dataclass(frozen=True, eq=False)
class LoadBlock:
    """LOADs as a prototype and columns; see the module docstring. `columns` has shape
    (len(COLUMNS), len(block)), dtype int64, row j holding field `COLUMNS[j]`."""

    prototype: Load
    columns: np.ndarray

    def __post_init__(self) -> None:
        columns = np.asarray(self.columns, dtype=np.int64)
        if columns.ndim != 2 or columns.shape[0] != len(COLUMNS):
            raise ValueError(f"a LoadBlock needs {len(COLUMNS)} columns, not shape "
                             f"{columns.shape}")  # fmt: skip
        columns.flags.writeable = False
        object.__setattr__(self, "columns", columns)
        bad = np.zeros(columns.shape[1], dtype=bool)
        for field, column in zip(_FIELDS, columns, strict=True):
            bad |= (column < field.minimum) | (column > field.maximum)
        if bad.any():
            copy_with(self.prototype, **self._fields(int(np.argmax(bad))))  # (raises)
            raise AssertionError("copy_with accepted a value outside its field's range")

    @classmethod
    def of(cls, prototype: Load, rows: Iterable[tuple[int, int, int, int, int, int]]
           ) -> "LoadBlock":  # fmt: skip
        """Return the block of `prototype` with one LOAD per tuple of `rows` (values in
        `COLUMNS` order)."""
        table = np.array(list(rows), dtype=np.int64).reshape(-1, len(COLUMNS))
        return cls(prototype, table.T)

    def __len__(self) -> int:
        return int(self.columns.shape[1])

    def _fields(self, index: int) -> dict[str, int]:
        """The free fields of LOAD `index`."""
        return dict(zip(COLUMNS, map(int, self.columns[:, index]), strict=True))

    def loads(self) -> list[Load]:
        """Return the block's LOADs as new objects (equal to `copy_with`'s, not checked)."""
        state = dict(self.prototype.__dict__)
        state["_checked_for"] = None
        out = []
        new = object.__new__
        for values in zip(*self.columns.tolist(), strict=True):
            load = new(Load)
            fields = load.__dict__
            fields.update(state)
            fields.update(zip(COLUMNS, values, strict=True))
            out.append(load)
        return out

    def words(self) -> np.ndarray:
        """Return the (len, 8) uint64 encodings of the block's LOADs (`encode_batch`)."""
        base = encode_words([self.prototype])[0].copy()
        for field in _FIELDS:
            mask = np.uint64(((1 << field.width) - 1) << (field.offset % 64))
            base[field.offset // 64] &= ~mask
        words = np.repeat(base[None, :], len(self), axis=0)
        for field, column in zip(_FIELDS, self.columns, strict=True):
            raw = column.astype(np.uint64) & np.uint64((1 << field.width) - 1)
            words[:, field.offset // 64] |= raw << np.uint64(field.offset % 64)
        assert words.shape[1] == WORDS
        return words

    def accepted(self, config: ArrayConfig) -> np.ndarray:
        """Return, per LOAD, whether LOAD's acceptance test (`batch_check.accepted`, on the
        block's words) proves it valid on `config` (all False when LOAD has no current
        acceptance test)."""
        ok = batch_check.accepted(Load, self.words(), config)
        return np.zeros(len(self), dtype=bool) if ok is None else ok

    def check(self, config: ArrayConfig) -> None:
        """Check every LOAD of the block against `config` (`Load.check`), raising the first
        invalid one's error: the acceptance test on the columns, `check` on the rest."""
        for index in np.flatnonzero(~self.accepted(config)).tolist():
            copy_with(self.prototype, **self._fields(index)).check(config)
