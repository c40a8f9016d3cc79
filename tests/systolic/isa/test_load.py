"""LOAD's decode hints: derived from the element pattern, encoded, checked when decoded."""

import dataclasses

import numpy as np
import pytest

from systolic.isa.assembler import parse_instruction
from systolic.isa.disassembler import format_instruction
from systolic.isa.fields import InstructionError
from systolic.isa.instructions import decode
from systolic.isa.load import HINT_NAMES, Load, LoadTarget, load_hints

_CONV = Load(LoadTarget.SPAD_IN, 0, 20, 0, n0=5, row_stride0=6, row_stride1=66, k0=8,
             length=8, run=3, n_mid=3, stride_mid=3, stride_outer=33)


def _field(name: str):
    return next(f for f in Load.FIELDS if f.name == name)


def _with_hint(word: bytes, name: str, value: int) -> bytes:
    field = _field(name)
    number = int.from_bytes(word, "little") & ~field.mask | value << field.offset
    return number.to_bytes(len(word), "little")


def test_the_hints_of_a_convolution_row_pattern() -> None:
    # k0 = 8 = (0 * 3 + 2) * 3 + 2: c0 = 2, j0 = 2, i0 = 0; gap = 33 - 2 * 3 = 27 != run
    assert (_CONV.c0, _CONV.j0, _CONV.base_i0, _CONV.base_j0) == (2, 2, 0, 6)
    assert (_CONV.j_contiguous_1, _CONV.j_contiguous_2) == (False, False)


@pytest.mark.parametrize("seed", range(4))
def test_the_hints_give_the_offset_of_element_k0(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(200):
        run, n_mid = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        k0 = int(rng.integers(0, 4 * run * n_mid))
        stride_mid, stride_outer = (int(x) for x in rng.integers(-2**31, 2**31, size=2))
        c0, j0, base_i0, base_j0, _, _ = load_hints(k0, run, n_mid, stride_mid, stride_outer)
        i0 = k0 // (run * n_mid)
        assert (c0, j0) == (k0 % run, k0 // run % n_mid)
        assert base_i0 == i0 * stride_outer % 2**32
        assert base_j0 == (i0 * stride_outer + j0 * stride_mid) % 2**32


@pytest.mark.parametrize("operand_bytes", [1, 2])
def test_j_contiguous_says_whether_a_wrap_of_j_is_contiguous(operand_bytes: int) -> None:
    run, n_mid, stride_mid = 3, 4, 5
    for stride_outer in range(40):
        hints = load_hints(0, run, n_mid, stride_mid, stride_outer)
        last_of_group = (n_mid - 1) * stride_mid + (run - 1) * operand_bytes
        contiguous = stride_outer == last_of_group + operand_bytes
        assert hints[3 + operand_bytes] == contiguous


def test_params_loads_have_zero_hints() -> None:
    load = Load.params(row=0, count=2, ext=64, row_stride=72)
    assert [getattr(load, name) for name in HINT_NAMES] == [0, 0, 0, 0, False, False]


def test_the_hints_are_no_constructor_arguments_and_replace_derives_them_again() -> None:
    with pytest.raises(TypeError):
        Load(LoadTarget.SPAD_IN, 0, 1, 0, k0=1, length=1, run=2, n_mid=1, c0=1)  # type: ignore[call-arg]
    moved = dataclasses.replace(_CONV, k0=0)
    assert (moved.c0, moved.j0, moved.base_j0) == (0, 0, 0)


def test_a_word_decodes_to_the_same_load_with_the_same_hints() -> None:
    decoded = decode(_CONV.encode())
    assert decoded == _CONV
    assert [getattr(decoded, name) for name in HINT_NAMES] == [
        getattr(_CONV, name) for name in HINT_NAMES]


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("c0", 5, 2), ("j0", 0, 2), ("base_i0", 1, 0), ("base_j0", 7, 6), ("j_contiguous_1", 1, 0),
])
def test_a_word_whose_hint_disagrees_is_refused(name: str, value: int, expected: int) -> None:
    word = _with_hint(_CONV.encode(), name, value)
    message = rf"^LOAD {name} must be {expected} \(derived from the other fields\), not {value}$"
    with pytest.raises(InstructionError, match=message):
        decode(word)


def test_the_text_form_leaves_the_hints_out_and_checks_them_when_written() -> None:
    text = format_instruction(_CONV)
    assert "c0=" not in text and "base_j0" not in text
    assert parse_instruction(text + " c0=2 base_j0=6") == _CONV
    with pytest.raises(InstructionError, match=r"^LOAD c0 must be 2 \(derived"):
        parse_instruction(text + " c0=1")
