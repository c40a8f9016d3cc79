"""Compact footprints (`hdl/range_overlap.py`): the contract every instruction keeps, the width."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.range_overlap import compact_contract_holds, onchip_addr_width
from systolic.isa.memories import Access, Memory
from tests.support.random_programs import random_program


@pytest.mark.parametrize(("config", "width"), [
    (ArrayConfig(rows=8, cols=8, spad_kib=8, acc_kib=8), 9),  # params: 512 rows
    (ArrayConfig(rows=2, cols=2, spad_kib=8, acc_kib=2), 11),  # spad: 2,048 rows of 2 bytes
    (ArrayConfig(rows=16, cols=16), 13),  # spad: 8,192 rows of 16 bytes
    (ArrayConfig(), 14),
])
def test_onchip_addr_width_covers_the_deepest_memory(config, width):
    assert onchip_addr_width(config) == width


def test_contract_rejects_two_external_ranges_and_wide_rows():
    external = Access(Memory.EXTERNAL, 0, 2**32 - 1, False)
    assert compact_contract_holds([external, Access(Memory.ACC, 0, 511, True)], 9)
    assert not compact_contract_holds([external, external], 9)
    assert not compact_contract_holds([Access(Memory.SPAD_IN, 0, 512, True)], 9)


@pytest.mark.parametrize("config", [
    ArrayConfig(rows=2, cols=2, spad_kib=8, acc_kib=2),
    ArrayConfig(rows=4, cols=4, spad_kib=8, acc_kib=4, dataflow=Dataflow.OS),
    ArrayConfig(rows=8, cols=8, spad_kib=8, acc_kib=8),
], ids=["2x2", "4x4-os", "8x8"])
def test_every_instruction_keeps_the_compact_contract(config):
    width = onchip_addr_width(config)
    rng = np.random.default_rng(config.rows)
    for _ in range(3):
        program = random_program(config, rng, layers=3, activation=True, softmax=True,
                                 layernorm=True).program
        for instr in program.instructions:
            assert compact_contract_holds(instr.footprint(config), width), instr
