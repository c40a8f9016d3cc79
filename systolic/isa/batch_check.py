"""Checking a whole program's instructions against a configuration at once (`Program`).

`check_instructions(instructions, config, words)` has the effect of `instr.check_once(config)`
on every instruction, in program order: the first instruction that is not valid on `config`
raises its own one-line `InstructionError` (the message `check` gives), and every instruction
is then marked checked for this `config` object, so the golden machine does not check again.

How it stays fast without weakening anything. The `check` methods of the instruction classes
are the specification and the only source of error messages. For the four classes that make
up almost all of a compiled model (LOAD, PRELOAD, COMPUTE, COMPUTE.OS, STORE, ADD), an *acceptance test*
evaluates the same conditions over numpy columns of the fields, decoded from the instruction
words (`words`, the program's encoding, which the cycle model needs anyway), and selects the
instructions that certainly pass; every instruction it does not accept (including any it is
unsure of, such as values where int64 products could overflow) goes through `check`. An acceptance test is written for its class's exact field names
(`_ACCEPT`'s key): when a class's fields change it is no longer used and its instructions go
through `check` until the test is updated (tests/systolic/isa/test_batch_check.py compares
each acceptance test with `check` on random instructions at the limits). Instructions of the
other classes are checked once per distinct instruction: they are frozen dataclasses that
compare by class and field values, and `check` reads nothing else.
"""

from collections.abc import Callable, Sequence

import numpy as np

from systolic.config import ArrayConfig, OptionalUnit
from systolic.isa.encode_batch import CLASS_OF_OPCODE, field_columns, opcodes
from systolic.isa.execute import Compute, ComputeOS, Preload
from systolic.isa.instruction_base import Instruction
from systolic.isa.load import Load, LoadTarget
from systolic.isa.memories import PARAMS_DEPTH, Memory, depth, params_row_bytes
from systolic.isa.patterns import ADDRESS_LIMIT, ElementPattern
from systolic.isa.store import RAW_BYTES, Add, Store

__all__ = ["accepted", "check_instructions", "mark_checked"]

Columns = dict[str, np.ndarray]
_SAFE = 1 << 30
"""Factors below this keep every product of two fields inside int64."""


def check_instructions(instructions: Sequence[Instruction], config: ArrayConfig,
                       words: np.ndarray) -> None:
    """Check `instructions` (encoded as `words`, one row each) against `config` as
    `check_once` would, in order; mark them all checked (see the module docstring)."""
    codes = opcodes(words)
    doubtful = []
    for code in np.unique(codes).tolist():
        rows = np.flatnonzero(codes == code)
        ok = accepted(CLASS_OF_OPCODE[code], words[rows], config)
        doubtful.append(rows if ok is None else rows[~ok])
    passed: set[Instruction] = set()
    for index in np.sort(np.concatenate(doubtful)).tolist():
        instr = instructions[index]
        if instr not in passed:
            instr.check(config)
            passed.add(instr)
    mark_checked(instructions, config)


def mark_checked(instructions: Sequence[Instruction], config: ArrayConfig) -> None:
    """Record that `instructions` passed `check(config)` (what `check_once` reads)."""
    for instr in instructions:
        instr.__dict__["_checked_for"] = config


def accepted(cls: type[Instruction], words: np.ndarray, config: ArrayConfig
             ) -> np.ndarray | None:
    """Return, per row of `words` (all of class `cls`), whether the acceptance test proves
    the instruction valid on `config`; None when `cls` has no (current) acceptance test."""
    names = tuple(field.name for field in cls.FIELDS)
    test = _ACCEPT.get((cls, names))
    if test is None:
        return None
    columns = dict(zip(names, field_columns(words, cls, names), strict=True))
    ok: np.ndarray = test(columns, config)
    return ok


def _load(c: Columns, config: ArrayConfig) -> np.ndarray:
    """Load.check's conditions (LOADs with n0 > 1 are left to it; the decode hints are
    derived by every Load, so they hold for the instructions `words` encodes)."""
    mem, count = c["mem"], c["count"]
    params = mem == LoadTarget.PARAMS
    spad = (mem == LoadTarget.SPAD_IN) | (mem == LoadTarget.SPAD_WT)
    limit = np.where(params, PARAMS_DEPTH, depth(config, Memory.SPAD_IN))
    ok = (params | spad) & (c["row"] + count <= limit) & (count < _SAFE) & (c["n0"] < _SAFE)
    ok &= params | (c["length"] <= config.dim)
    flip = c["flip_sign"] != 0
    if flip.any():
        def supported(width: int) -> bool:
            return width == 8 and config.operand_bytes == 1
        ok &= ~flip | (mem == LoadTarget.SPAD_IN) & supported(config.input_width) | (
            mem == LoadTarget.SPAD_WT) & supported(config.weight_width)
    low, high = _row_extent(c["ext"], c["n0"], c["row_stride0"], c["row_stride1"], count)
    high += np.where(params, params_row_bytes(config) - 1, 0)
    if spad.any():
        element_bytes = config.operand_bytes
        names = ("k0", "length", "run", "n_mid", "stride_mid", "stride_outer")
        table = np.stack([c[name][spad] for name in names], axis=1)
        first, which = _distinct_rows(table)
        ranges = np.array([ElementPattern(*map(int, table[row])).offset_range(element_bytes)
                           for row in first.tolist()], dtype=np.int64).reshape(-1, 2)
        ok[spad] &= (table == table[first[which]]).all(axis=1)  # (a hash collision: check)
        low[spad] += ranges[which, 0]
        high[spad] += ranges[which, 1] + element_bytes - 1
    result: np.ndarray = ok & (low >= 0) & (high < ADDRESS_LIMIT)
    return result


def _distinct_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group the rows of an int64 table by a 64-bit hash of their values: return the index
    of one row per hash value and, per row, the number of its group (rows whose values differ
    from their group's first row must be checked on their own)."""
    key = np.zeros(len(table), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in table.T.astype(np.uint64):
            key = (key ^ column) * np.uint64(0x100000001B3)
    _, first, which = np.unique(key, return_index=True, return_inverse=True)
    return first, which.ravel()


def _row_extent(ext: np.ndarray, n0: np.ndarray, stride0: np.ndarray, stride1: np.ndarray,
                count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`RowPattern.extent` per row: the lowest and highest row base over the corners of the
    full rows of n0 and of the last partial one (offset 0, row 0's, is always a corner and
    stands in for the corners a block without rows lacks)."""
    full, partial = np.divmod(count, n0)
    zero = np.zeros_like(count)
    has_full, has_partial = full > 0, partial > 0
    last_full = np.where(has_full, (full - 1) * stride1, 0)
    last_r0 = np.where(has_full, (n0 - 1) * stride0, 0)
    tail = np.where(has_partial, full * stride1, 0)
    tail_last = np.where(has_partial, full * stride1 + (partial - 1) * stride0, 0)
    corners = np.stack((zero, last_full, last_r0, last_full + last_r0, tail, tail_last))
    return ext + corners.min(axis=0), ext + corners.max(axis=0)


def _preload(c: Columns, config: ArrayConfig) -> np.ndarray:
    """Preload.check's conditions."""
    if not config.dataflow.weight_stationary:
        return np.zeros(len(c["k"]), dtype=bool)
    return ((c["k"] <= config.rows) & (c["n"] <= config.cols)
            & (c["row"] + c["k"] <= depth(config, Memory.SPAD_WT)))  # fmt: skip


def _compute(c: Columns, config: ArrayConfig) -> np.ndarray:
    """Compute.check's conditions."""
    if not config.dataflow.weight_stationary:
        return np.zeros(len(c["m"]), dtype=bool)
    return ((c["in_row"] + c["m"] <= depth(config, Memory.SPAD_IN))
            & (c["acc_row"] + c["m"] <= depth(config, Memory.ACC)))  # fmt: skip


def _compute_os(c: Columns, config: ArrayConfig) -> np.ndarray:
    """ComputeOS.check's conditions."""
    m, k, a_stride = c["m"], c["k"], c["a_stride"]
    if not config.dataflow.output_stationary:
        return np.zeros(len(m), dtype=bool)
    dim, spad = config.dim, depth(config, Memory.SPAD_IN)
    chunks = -(-k // dim)
    stride_ok = np.where(chunks == 1, a_stride == 0, (a_stride >= m) & (a_stride < _SAFE))
    in_end = c["in_row"] + (chunks - 1) * np.where(stride_ok, a_stride, 0) + m
    result: np.ndarray = (
        stride_ok & (m <= config.rows) & (c["n"] <= config.cols) & (in_end <= spad)
        & (c["wt_row"] + k <= spad) & (c["acc_row"] + m <= depth(config, Memory.ACC)))
    return result


def _store(c: Columns, config: ArrayConfig) -> np.ndarray:
    """Store.check's conditions."""
    m, n = c["m"], c["n"]
    row_bytes = np.where(c["raw"] != 0, RAW_BYTES * n, n * config.operand_bytes)
    result: np.ndarray = ((c["acc_row"] + m <= depth(config, Memory.ACC)) & (n <= config.cols)
                          & ((c["lut"] == 0) | config.has(OptionalUnit.TABLES))
                          & _writable(c, config, m, row_bytes))  # fmt: skip
    return result


def _add(c: Columns, config: ArrayConfig) -> np.ndarray:
    """Add.check's conditions."""
    m, lanes, spad = c["m"], c["lanes"], depth(config, Memory.SPAD_IN)
    b_rows = np.where(c["b_broadcast"] != 0, 1, m)
    result: np.ndarray = (
        ((c["mul"] == 0) | (config.input_width == 8)) & (lanes <= config.dim)
        & (c["a_row"] + m <= spad) & (c["b_row"] + b_rows <= spad)
        & _writable(c, config, m, lanes * config.operand_bytes))  # fmt: skip
    return result


def _writable(c: Columns, config: ArrayConfig, rows: np.ndarray, row_bytes: np.ndarray
              ) -> np.ndarray:
    """RowWriter._need_writable's conditions: flip_sign only with 8-bit one-byte inputs, and
    `rows` rows of `row_bytes` along the row pattern inside the external address space
    (rows and n0 below `_SAFE`, so no product of the extent overflows)."""
    flip_ok = (config.input_width == 8) and config.operand_bytes == 1
    ok = ((c["flip_sign"] == 0) | flip_ok) & (rows < _SAFE) & (c["n0"] < _SAFE)
    low, high = _row_extent(c["ext"], c["n0"], c["row_stride0"], c["row_stride1"], rows)
    result: np.ndarray = ok & (low >= 0) & (high + row_bytes - 1 < ADDRESS_LIMIT)
    return result


_ACCEPT: dict[tuple[type[Instruction], tuple[str, ...]],
              Callable[[Columns, ArrayConfig], np.ndarray]] = {
    (Load, ("mem", "flip_sign", "length", "row", "count", "ext", "n0", "row_stride0",
            "row_stride1", "k0", "run", "n_mid", "stride_mid", "stride_outer", "c0", "j0",
            "base_i0", "base_j0", "j_contiguous_1", "j_contiguous_2")): _load,
    (Preload, ("k", "n", "row")): _preload,
    (Compute, ("accumulate", "in_row", "m", "acc_row")): _compute,
    (ComputeOS, ("accumulate", "m", "n", "k", "in_row", "a_stride", "wt_row", "acc_row")):
        _compute_os,
    (Store, ("flip_sign", "lut", "raw", "n", "zero_point", "lo", "hi", "param_row", "acc_row",
             "m", "ext", "n0", "row_stride0", "row_stride1")): _store,
    (Add, ("flip_sign", "mul", "b_broadcast", "lanes", "shift", "zp_a", "zp_b", "zp_out", "lo",
           "hi", "a_row", "b_row", "m", "multiplier_a", "multiplier_b", "ext", "n0",
           "row_stride0", "row_stride1")): _add,
}
"""Per (class, its field names in FIELDS order): the acceptance test written for them."""
