"""Instruction fields: encode/decode round trips, exact rejection messages, footprints."""

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.fields import INSTRUCTION_BYTES, InstructionError
from systolic.isa.instructions import (
    INSTRUCTION_TYPES,
    Add,
    Compute,
    ComputeOS,
    Copy,
    Halt,
    Load,
    LoadTarget,
    Pool,
    PoolMode,
    Preload,
    Store,
    decode,
)
from systolic.isa.memories import Access, Memory
from systolic.isa.tables import field_table

from ...support.random_programs import random_instruction

WS = ArrayConfig(rows=8, cols=8)
OS = dataclasses.replace(WS, dataflow=Dataflow.OS)
BOTH = dataclasses.replace(WS, dataflow=Dataflow.BOTH)


def test_an_array_of_both_dataflows_runs_every_execute_instruction() -> None:
    """BOTH accepts PRELOAD, COMPUTE and COMPUTE.OS with each one's own limits."""
    for instr in (Preload(0, 8, 8), Compute(0, 4, 0), ComputeOS(0, 4, 8, 16, 0, 0, a_stride=4)):
        instr.check(BOTH)
    with pytest.raises(InstructionError, match=r"^PRELOAD k must not exceed 8 \(the array"):
        Preload(0, 9, 8).check(BOTH)
    with pytest.raises(InstructionError, match=r"^COMPUTE.OS a_stride must be at least m"):
        ComputeOS(0, 4, 8, 16, 0, 0, a_stride=2).check(BOTH)
DOCS = Path(__file__).resolve().parents[3] / "docs" / "isa.md"


@pytest.mark.parametrize("cls", INSTRUCTION_TYPES, ids=lambda c: c.MNEMONIC)
def test_encode_decode_round_trip(cls) -> None:
    rng = np.random.default_rng(cls.OPCODE)
    for _ in range(200):
        instr = random_instruction(cls, rng)
        word = instr.encode()
        assert len(word) == INSTRUCTION_BYTES
        assert decode(word) == instr
        words = instr.words()
        assert b"".join(w.to_bytes(8, "little") for w in words) == word
        assert word[0] == cls.OPCODE


@pytest.mark.parametrize("cls", INSTRUCTION_TYPES, ids=lambda c: c.MNEMONIC)
def test_fields_are_disjoint_aligned_and_documented(cls) -> None:
    used = 0xFF
    for field in cls.FIELDS:
        assert used & field.mask == 0, field.name
        used |= field.mask
        if field.width >= 8:
            assert field.offset % field.width == 0
        assert field.offset // 64 == (field.offset + field.width - 1) // 64
    assert field_table(cls) in DOCS.read_text(), (
        f"docs/isa.md lacks the current {cls.MNEMONIC} table: "
        "paste `python -m systolic.isa.tables`"
    )


def test_every_reserved_bit_is_rejected() -> None:
    instr = Store(acc_row=1, m=2, n=3, param_row=4, zero_point=-5, lo=-100, hi=100, ext=64)
    value = int.from_bytes(instr.encode(), "little")
    used = 0xFF
    for field in Store.FIELDS:
        used |= field.mask
    for bit in (b for b in range(512) if not used >> b & 1):
        word = (value | 1 << bit).to_bytes(64, "little")
        with pytest.raises(
            InstructionError, match=rf"^STORE word has reserved bits set \(bit {bit}\)"
        ):
            decode(word)


@pytest.mark.parametrize(
    ("word", "message"),
    [
        (bytes(64), "unknown opcode 0x00 in instruction word"),
        (bytes([0x42]) + bytes(63), "unknown opcode 0x42 in instruction word"),
        (bytes(63), "an instruction word is 64 bytes, not 63"),
        (bytes([0x01, 0x03]) + bytes(62), "LOAD mem has no meaning for the value 3"),
        (bytes([0x02]) + bytes(63), "PRELOAD k must be from 1 to 65535, not 0"),
    ],
)
def test_bad_words_are_rejected(word: bytes, message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        decode(word)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Load(LoadTarget.SPAD_IN, 0, 0, 0, length=1, run=1, n_mid=1),
            "LOAD count must be from 1 to 4294967295, not 0",
        ),
        (
            lambda: Load(LoadTarget.SPAD_IN, 0, 1, 2**32, length=1, run=1, n_mid=1),
            "LOAD ext must be from 0 to 4294967295, not 4294967296",
        ),
        (
            lambda: Load(LoadTarget.SPAD_IN, 0, 1, 0, row_stride0=2**31, length=1, run=1, n_mid=1),
            "LOAD row_stride0 must be from -2147483648 to 2147483647, not 2147483648",
        ),
        (
            lambda: Load(LoadTarget.SPAD_IN, 0, 1, 0, length=1, run=0, n_mid=1),
            "LOAD run must be at least 1 when mem is SPAD_IN, not 0",
        ),
        (
            lambda: Load(LoadTarget.PARAMS, 0, 1, 0, length=4),
            (
                "LOAD length must be 0 when mem is PARAMS (a params row is 9 * cols contiguous "
                "bytes), not 4"
            ),
        ),
        (
            lambda: Load(1, 0, 1, 0),  # type: ignore[arg-type]
            "LOAD mem must be one of SPAD_IN, SPAD_WT, PARAMS, not 1",
        ),
        (
            lambda: Load(LoadTarget.SPAD_IN, True, 1, 0),  # type: ignore[arg-type]
            "LOAD row must be an integer, not True",
        ),
        (
            lambda: Compute(0, 1, 0, accumulate=1),  # type: ignore[arg-type]
            "COMPUTE accumulate must be True or False, not 1",
        ),
        (lambda: Store(0, 1, 1, 512, 0, 0, 0, 0), "STORE param_row must be from 0 to 511, not 512"),
        (lambda: Store(0, 1, 1, 0, 0, 5, 4, 0), "STORE lo (5) must not exceed hi (4)"),
        (
            lambda: Store(0, 1, 1, 0, 128, -1, 4, 0),
            "STORE zero_point must be from -128 to 127, not 128",
        ),
        (
            lambda: Add(0, 0, 1, 1, 1, 1, 32, 0, 0, 0, 0, 0, 0),
            "ADD shift must be from -31 to 31, not 32",
        ),
        (
            lambda: Pool(PoolMode.MAX, 0, 1, 4, 4, 2, 2, 2, 2, 0, 0, 2, 2, 0, 0, 0, multiplier=3),
            "POOL multiplier must be 0 when mode is MAX, not 3",
        ),
        (
            lambda: Pool(PoolMode.MAX, 0, 1, 4, 4, 2, 2, 2, 2, 2, 0, 2, 2, 0, 0, 0),
            (
                "POOL windows must overlap the tile: with rows pad 2, kernel 2, stride 2 and 2 "
                "outputs, a window lies outside 0..3"
            ),
        ),
        (
            lambda: Pool(PoolMode.MAX, 0, 1, 4, 4, 2, 2, 2, 2, 0, 0, 2, 4, 0, 0, 0),
            (
                "POOL windows must overlap the tile: with columns pad 0, kernel 2, stride 2 and 4 "
                "outputs, a window lies outside 0..3"
            ),
        ),
    ],
)
def test_out_of_range_fields_are_rejected(build, message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        build()


SPAD_DEPTH = 256 * 512 // 8  # half of 256 KiB in rows of 8 bytes


@pytest.mark.parametrize(
    ("instr", "config", "message"),
    [
        (
            Load.dense(LoadTarget.SPAD_IN, SPAD_DEPTH - 1, 2, 0, 8, 8),
            WS,
            (
                f"LOAD row + count must not exceed {SPAD_DEPTH} (the spad_in depth of this 8x8 "
                f"array), not {SPAD_DEPTH + 1}"
            ),
        ),
        (
            Load.dense(LoadTarget.SPAD_WT, 0, 1, 0, 8, 9),
            WS,
            "LOAD length must not exceed 8 (the scratchpad row width dim), not 9",
        ),
        (
            Load.params(511, 2, 0, 72),
            WS,
            "LOAD row + count must not exceed 512 (the params depth of this 8x8 array), not 513",
        ),
        (
            Load.dense(LoadTarget.SPAD_IN, 0, 3, 2**32 - 8, 4, 4),
            WS,
            (
                "LOAD accesses external bytes 4294967288..4294967299, outside 0..4294967295; "
                "check ext and the strides"
            ),
        ),
        (
            Load(LoadTarget.SPAD_IN, 0, 2, 4, row_stride1=-8, length=1, run=1, n_mid=1),
            WS,
            "LOAD accesses external bytes -4..4, outside 0..4294967295; check ext and the strides",
        ),
        (
            Load.dense(LoadTarget.SPAD_IN, 0, 1, 0, 8, 8, flip_sign=True),
            dataclasses.replace(WS, input_width=12),
            (
                "LOAD flip_sign needs 8-bit operands stored in one byte (input_width 8, "
                "operand_bytes 1); this array has input_width 12 and operand_bytes 2"
            ),
        ),
        (Preload(0, 9, 8), WS, "PRELOAD k must not exceed 8 (the array's rows), not 9"),
        (Preload(0, 8, 8), OS, "PRELOAD needs a ws (dataflow ws) array; this array is os"),
        (Compute(0, 4, 0), OS, "COMPUTE needs a ws (dataflow ws) array; this array is os"),
        (
            Compute(0, 4, 2047),
            WS,
            "COMPUTE acc_row + m must not exceed 2048 (the acc depth of this 8x8 array), not 2051",
        ),
        (
            ComputeOS(0, 4, 8, 16, 0, 0, a_stride=2),
            OS,
            "COMPUTE.OS a_stride must be at least m (4) when k > dim (8), not 2",
        ),
        (
            ComputeOS(0, 4, 8, 8, 0, 0, a_stride=4),
            OS,
            "COMPUTE.OS a_stride must be 0 when k <= dim (8), not 4",
        ),
        (
            ComputeOS(0, 9, 8, 8, 0, 0),
            OS,
            "COMPUTE.OS m must not exceed 8 (the array's rows), not 9",
        ),
        (
            Store(0, 1, 9, 0, 0, -128, 127, 0),
            WS,
            "STORE n must not exceed 8 (the array's cols), not 9",
        ),
        (
            Copy(0, 1, 9, 0),
            WS,
            "COPY lanes must not exceed 8 (the scratchpad row width dim), not 9",
        ),
    ],
)
def test_configuration_limits(instr, config: ArrayConfig, message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        instr.check(config)


def test_footprints() -> None:
    load = Load(
        LoadTarget.SPAD_IN,
        10,
        5,
        1000,
        n0=2,
        row_stride0=3,
        row_stride1=-100,
        length=4,
        run=2,
        n_mid=2,
        stride_mid=10,
        stride_outer=0,
    )
    # rows: bases 1000, 1003, 900, 903, 800; element offsets 0, 1, 10, 11
    assert load.footprint(WS) == (
        Access(Memory.SPAD_IN, 10, 14, True),
        Access(Memory.EXTERNAL, 800, 1014, False),
    )
    assert Load.params(3, 2, 100, 80).footprint(WS) == (
        Access(Memory.PARAMS, 3, 4, True),
        Access(Memory.EXTERNAL, 100, 100 + 80 + 72 - 1, False),
    )
    store = Store(4, 3, 5, 7, 0, -128, 127, 200, row_stride1=16)
    assert store.footprint(WS) == (
        Access(Memory.ACC, 4, 6, False),
        Access(Memory.PARAMS, 7, 7, False),
        Access(Memory.EXTERNAL, 200, 200 + 32 + 5 - 1, True),
    )
    os_compute = ComputeOS(in_row=2, m=3, n=4, k=20, wt_row=50, acc_row=9, a_stride=5)
    assert os_compute.footprint(OS) == (
        Access(Memory.SPAD_IN, 2, 2 + 2 * 5 + 3 - 1, False),
        Access(Memory.SPAD_WT, 50, 69, False),
        Access(Memory.ACC, 9, 11, True),
    )
    pool = Pool(
        PoolMode.MAX,
        6,
        8,
        4,
        5,
        3,
        3,
        2,
        2,
        1,
        1,
        2,
        3,
        -128,
        127,
        0,
        n0=3,
        row_stride0=8,
        row_stride1=100,
    )
    assert pool.footprint(WS) == (
        Access(Memory.SPAD_IN, 6, 25, False),
        Access(Memory.EXTERNAL, 0, 100 + 16 + 8 - 1, True),
    )
    assert Halt().footprint(WS) == ()


def test_conflicts_need_a_write_and_an_overlap() -> None:
    write = Access(Memory.ACC, 4, 7, True)
    assert write.conflicts(Access(Memory.ACC, 7, 9, False))
    assert not write.conflicts(Access(Memory.ACC, 8, 9, True))
    assert not write.conflicts(Access(Memory.SPAD_IN, 4, 7, True))
    assert not Access(Memory.ACC, 0, 9, False).conflicts(Access(Memory.ACC, 0, 9, False))


def test_check_once_checks_each_configuration_object() -> None:
    """`check_once` skips only a repeat check against the very same configuration object."""
    big = ArrayConfig(rows=8, cols=8, dataflow=Dataflow.WS)
    small = ArrayConfig(rows=4, cols=4, dataflow=Dataflow.WS)
    preload = Preload(row=0, k=8, n=8)
    preload.check_once(big)
    preload.check_once(big)
    with pytest.raises(InstructionError, match=r"^PRELOAD k must not exceed 4"):
        preload.check_once(small)
    other = ArrayConfig(rows=8, cols=8, dataflow=Dataflow.OS)
    with pytest.raises(InstructionError, match=r"^PRELOAD needs a ws \(dataflow ws\) array"):
        preload.check_once(other)
    assert dataclasses.replace(preload) == preload  # the mark is not a field
