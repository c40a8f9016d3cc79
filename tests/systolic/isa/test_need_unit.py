"""The program check refuses an instruction whose optional unit the configuration omits
(`need_unit`, systolic/isa/table.py): SOFTMAX, LAYERNORM and TABLE wide without the
row-normalisation unit; TABLE and STORE/COPY `lut` without the activation table; the batch
acceptance test of STORE agrees."""

import pytest

from systolic.config import ArrayConfig, OptionalUnit
from systolic.config_units import absent_message
from systolic.isa.batch_check import accepted
from systolic.isa.encode_batch import encode_words
from systolic.isa.fields import InstructionError
from systolic.isa.instructions import Copy, Instruction, LayerNorm, Softmax, Store, Table

ROW_UNIT, TABLES = OptionalUnit.ROW_UNIT, OptionalUnit.TABLES
FULL = ArrayConfig(rows=4, cols=4)

CASES = [
    (Softmax(in_row=0, m=1, length=4, multiplier=1 << 30, shift=7, zero_point=0, lo=-128, hi=127, ext=0),
     ROW_UNIT, "SOFTMAX"),
    (LayerNorm(in_row=0, m=1, length=4, multiplier=1 << 30, shift=7, zero_point=0, lo=-128, hi=127, ext=0),
     ROW_UNIT, "LAYERNORM"),
    (Table(0, wide=True), ROW_UNIT, "TABLE wide"),
    (Table(0), TABLES, "TABLE"),
    (Store(acc_row=0, m=1, n=4, param_row=0, zero_point=0, lo=-128, hi=127, ext=0, lut=True), TABLES, "STORE lut"),
    (Copy(in_row=0, m=1, lanes=4, ext=0, lut=True), TABLES, "COPY lut"),
]


@pytest.mark.parametrize(("instr", "unit", "what"), CASES, ids=[c[2] for c in CASES])
def test_refused_without_its_unit(instr: Instruction, unit: OptionalUnit, what: str) -> None:
    instr.check(FULL)
    other = next(u for u in OptionalUnit if u is not unit)
    instr.check(ArrayConfig(rows=4, cols=4, without=frozenset({other})))
    with pytest.raises(InstructionError) as error:
        instr.check(ArrayConfig(rows=4, cols=4, without=frozenset({unit})))
    assert str(error.value) == f"{what} cannot run: {absent_message(unit)}"


def test_store_acceptance_test_leaves_lut_to_check_without_tables() -> None:
    stores = [Store(acc_row=0, m=1, n=4, param_row=0, zero_point=0, lo=-128, hi=127, ext=0,
                    lut=lut) for lut in (False, True)]
    words = encode_words(stores)
    slim = ArrayConfig(rows=4, cols=4, without=frozenset({TABLES}))
    assert accepted(Store, words, FULL).tolist() == [True, True]
    assert accepted(Store, words, slim).tolist() == [True, False]
