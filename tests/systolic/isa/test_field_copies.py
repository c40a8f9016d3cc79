"""`copy_with`: a LOAD, STORE or ADD with free fields changed equals the constructor's result."""

import dataclasses

import numpy as np
import pytest

from systolic.isa.field_copies import FREE_FIELDS, copy_with
from systolic.isa.fields import InstructionError
from systolic.isa.load import HINT_NAMES, Load, LoadTarget
from systolic.isa.store import Add, Store

_LOAD = Load(LoadTarget.SPAD_IN, 3, 20, 640, n0=5, row_stride0=6, row_stride1=66, k0=8,
             length=8, run=3, n_mid=3, stride_mid=3, stride_outer=33, flip_sign=True)
_STORE = Store(4, 16, 8, 2, -3, -100, 90, 4096, n0=4, row_stride0=32, row_stride1=256,
               flip_sign=True, lut=True)
_ADD = Add(8, 40, 30, 16, 1 << 20, -(1 << 19), 12, -3, 5, -7, -100, 90, 8192, n0=5,
           row_stride0=16, row_stride1=96, flip_sign=True, b_broadcast=True)


def _random_value(rng: np.random.Generator, instr: object, name: str) -> int:
    field = next(f for f in type(instr).FIELDS if f.name == name)
    return int(rng.integers(field.minimum, min(field.maximum, 1 << 40) + 1))


@pytest.mark.parametrize("instr", [_LOAD, _STORE, _ADD], ids=["load", "store", "add"])
def test_a_copy_equals_the_constructed_instruction_field_for_field_and_word(instr) -> None:
    rng = np.random.default_rng(1)
    free = sorted(FREE_FIELDS[type(instr)])
    for _ in range(50):
        changes = {name: _random_value(rng, instr, name)
                   for name in free if rng.random() < 0.6}  # fmt: skip
        copy = copy_with(instr, **changes)
        built = dataclasses.replace(instr, **changes)
        assert copy == built
        assert copy.__dict__ == built.__dict__  # (the LOAD hints and the check mark too)
        assert copy.encode() == built.encode()


def test_a_load_copy_keeps_the_hints_the_prototype_derived() -> None:
    copy = copy_with(_LOAD, row=9, ext=1 << 20)
    assert [getattr(copy, name) for name in HINT_NAMES] == [
        getattr(_LOAD, name) for name in HINT_NAMES]  # fmt: skip
    assert copy._checked_for is None


@pytest.mark.parametrize("value", [-1, 1 << 32, True])
def test_a_value_outside_its_field_raises_the_constructors_error(value: int) -> None:
    with pytest.raises(InstructionError, match="row"):
        copy_with(_LOAD, row=value)


def test_a_field_that_a_rule_reads_is_refused() -> None:
    with pytest.raises(KeyError):
        copy_with(_LOAD, k0=0)
    with pytest.raises(KeyError):
        copy_with(_STORE, lo=0)
    with pytest.raises(KeyError):
        copy_with(_ADD, multiplier_b=0)
