"""The STORE unit's issue-13 flags: STORE/COPY `lut`, ADD `mul` and `b_broadcast` (bits,
rules, configuration limits and footprints; docs/isa.md)."""

import dataclasses
import re

import pytest

from systolic.config import ArrayConfig
from systolic.isa.fields import InstructionError
from systolic.isa.instructions import Add, Copy, Store, decode
from systolic.isa.memories import Access, Memory, depth

WS = ArrayConfig(rows=8, cols=8)
WIDE = dataclasses.replace(WS, input_width=16)
SPAD = depth(WS, Memory.SPAD_IN)


def _add(**changes: object) -> Add:
    fields: dict[str, object] = {
        "a_row": 0, "b_row": 20, "m": 4, "lanes": 8, "multiplier_a": 1 << 30,
        "multiplier_b": 0, "shift": 0, "zp_a": 0, "zp_b": 0, "zp_out": 0, "lo": -128,
        "hi": 127, "ext": 0,
    }
    fields.update(changes)
    return Add(**fields)  # type: ignore[arg-type]


def _bits(instr: object) -> int:
    return int.from_bytes(instr.encode(), "little")  # type: ignore[attr-defined]


def test_flags_sit_at_their_bits_and_default_to_off() -> None:
    store = Store(0, 1, 1, 0, 0, -128, 127, 0)
    copy = Copy(0, 1, 1, 0)
    add = _add()
    assert not (store.lut or copy.lut or add.mul or add.b_broadcast)
    assert _bits(dataclasses.replace(store, lut=True)) ^ _bits(store) == 1 << 9
    assert _bits(dataclasses.replace(copy, lut=True)) ^ _bits(copy) == 1 << 9
    assert _bits(dataclasses.replace(add, mul=True)) ^ _bits(add) == 1 << 9
    assert _bits(dataclasses.replace(add, b_broadcast=True)) ^ _bits(add) == 1 << 10
    for instr in (dataclasses.replace(store, lut=True, flip_sign=True),
                  dataclasses.replace(copy, lut=True),
                  dataclasses.replace(add, mul=True, b_broadcast=True)):
        assert decode(instr.encode()) == instr


def test_mul_needs_multiplier_b_zero() -> None:
    with pytest.raises(InstructionError, match=r"^ADD multiplier_b must be 0 with mul, not 5$"):
        _add(mul=True, multiplier_b=5)


@pytest.mark.parametrize(
    ("instr", "config", "message"),
    [
        (_add(mul=True), WIDE, "ADD mul needs 8-bit activations (input_width 8), not 16"),
        (
            Copy(0, 1, 1, 0, lut=True),
            WIDE,
            "COPY lut needs 8-bit activations (input_width 8), not 16",
        ),
        (
            _add(b_broadcast=True, b_row=SPAD),
            WS,
            (f"ADD b_row + 1 must not exceed {SPAD} (the spad_in depth of this 8x8 array), "
            f"not {SPAD + 1}"),
        ),
        (
            _add(b_row=SPAD - 3),
            WS,
            (f"ADD b_row + m must not exceed {SPAD} (the spad_in depth of this 8x8 array), "
            f"not {SPAD + 1}"),
        ),
    ],
)
def test_configuration_limits(instr: object, config: ArrayConfig, message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        instr.check(config)  # type: ignore[attr-defined]


def test_flags_valid_where_the_spec_allows_them() -> None:
    Store(0, 1, 1, 0, 0, -128, 127, 0, lut=True).check(WIDE)  # (STORE's output is int8)
    _add(b_broadcast=True).check(WIDE)
    _add(b_broadcast=True, b_row=SPAD - 1, mul=True).check(WS)
    Copy(0, 1, 1, 0, lut=True).check(WS)


def test_b_broadcast_reads_only_row_b_row() -> None:
    reads = _add(b_broadcast=True).footprint(WS)[:2]
    assert reads == (Access(Memory.SPAD_IN, 0, 3, False), Access(Memory.SPAD_IN, 20, 20, False))
    assert _add().footprint(WS)[1] == Access(Memory.SPAD_IN, 20, 23, False)


def _raw(**changes: object) -> Store:
    fields: dict[str, object] = {"acc_row": 2, "m": 3, "n": 5, "param_row": 1,
                                 "zero_point": 0, "lo": 0, "hi": 0, "ext": 40,
                                 "row_stride1": 24, "raw": True}
    fields.update(changes)
    return Store(**fields)  # type: ignore[arg-type]


def test_raw_sits_at_bit_10_and_defaults_to_off() -> None:
    store = Store(0, 1, 1, 0, 0, 0, 0, 0)
    assert not store.raw
    assert _bits(dataclasses.replace(store, raw=True)) ^ _bits(store) == 1 << 10
    assert decode(_raw().encode()) == _raw()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"zero_point": 3, "hi": 5}, "STORE zero_point must be 0 with raw, not 3"),
        ({"lo": -1}, "STORE lo must be 0 with raw, not -1"),
        ({"hi": 127}, "STORE hi must be 0 with raw, not 127"),
        ({"flip_sign": True}, "STORE flip_sign must be 0 with raw, not 1"),
        ({"lut": True}, "STORE lut must be 0 with raw, not 1"),
    ],
)
def test_raw_rules(changes: dict[str, object], message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        _raw(**changes)


def test_raw_writes_rows_of_four_bytes_per_lane() -> None:
    # rows at 40, 64, 88 of 4 * 5 = 20 bytes, whatever operand_bytes is
    written = Access(Memory.EXTERNAL, 40, 107, True)
    for config in (WS, WIDE):
        assert _raw().footprint(config) == (Access(Memory.ACC, 2, 4, False),
                                            Access(Memory.PARAMS, 1, 1, False), written)
        assert [s.length for s in _raw().segments(config)] == [20, 20, 20]
        _raw().check(config)
    assert _raw(raw=False).footprint(WS)[2] == Access(Memory.EXTERNAL, 40, 92, True)


def test_raw_rows_must_stay_in_the_address_space() -> None:
    message = (f"STORE accesses external bytes {2**32 - 60}..{2**32 + 7}, outside "
               f"0..{2**32 - 1}; check ext and the strides")
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        _raw(ext=2**32 - 60).check(WS)
