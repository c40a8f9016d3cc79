"""LAYERNORM: its opcode, unit, place and own fields (in_zero_point, eps), and the per-row
reciprocal square root (docs/isa.md, "LAYERNORM"); its word, text, the rules, configuration
limits and footprint it shares with SOFTMAX are tested for both in test_row_instruction."""

import math
import re

import numpy as np
import pytest

from systolic.isa.fields import InstructionError
from systolic.isa.instructions import INSTRUCTION_TYPES, LayerNorm, Unit
from systolic.isa.layernorm import inverse_sqrt, norm_shift


def test_opcode_mnemonic_unit_and_place() -> None:
    assert (LayerNorm.OPCODE, LayerNorm.MNEMONIC, LayerNorm.UNIT) == (0x0C, "LAYERNORM", Unit.ST)
    assert INSTRUCTION_TYPES[-1] is LayerNorm


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"in_zero_point": 128}, "LAYERNORM in_zero_point must be from -128 to 127, not 128"),
        ({"in_zero_point": -129}, "LAYERNORM in_zero_point must be from -128 to 127, not -129"),
        ({"eps": -1}, "LAYERNORM eps must be from 0 to 4294967295, not -1"),
        ({"eps": 2**32}, "LAYERNORM eps must be from 0 to 4294967295, not 4294967296"),
    ],
)
def test_own_field_rules(changes: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"in_row": 0, "m": 1, "length": 4, "multiplier": 1 << 30,
                                 "shift": 6, "zero_point": 0, "lo": -128, "hi": 127, "ext": 0}
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        LayerNorm(**fields, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(("v", "k"), [(0, 0), (1, 0), (2**30 - 1, 0), (2**30, 1),
                                      (2**31 - 1, 1), (2**31, 1), (2**32, 2), (2**49 - 1, 10)])
def test_norm_shift_is_the_smallest_k_below_2_to_30(v: int, k: int) -> None:
    assert norm_shift(v) == k
    assert v >> (2 * k) < 2**30
    assert k == 0 or v >> (2 * k - 2) >= 2**30


def test_inverse_sqrt_is_the_contract_and_within_2_to_minus_15() -> None:
    rng = np.random.default_rng(0)
    values = [1, 2, 3, 2**28, 2**30 - 1, 2**30, *(int(v) for v in rng.integers(1, 2**49, 500)),
              *(2**b + d for b in range(1, 49) for d in (-1, 0, 1))]
    for v in values:
        r, k = inverse_sqrt(v)
        vn = v >> (2 * k)
        assert r == math.isqrt(2**60 // vn) and r <= 2**30
        assert k == 0 or 2**28 <= vn < 2**30
        assert abs(r / 2 ** (30 + k) * math.sqrt(v) - 1) < 2**-15, v


def test_inverse_sqrt_of_zero_is_zero() -> None:
    assert inverse_sqrt(0) == (0, 0)
