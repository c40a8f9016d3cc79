"""`encode_command` packs exactly what the Accelerator's `i_instr` port decodes."""

import pytest
from amaranth.lib import data

from systolic.config import ArrayConfig
from systolic.hdl.accelerator import command_layout
from systolic.hdl.range_overlap import MEMORY_IDS
from systolic.isa.instructions import (
    Compute,
    Copy,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Preload,
    Store,
    decode,
)
from systolic.sim.rtl.commands import (
    COMMAND_BITS,
    COMMAND_WORDS32,
    encode_command,
    split_words32,
)

CONFIG = ArrayConfig(rows=4, cols=4, spad_kib=4, acc_kib=4)


@pytest.mark.parametrize(("instr", "unit"), [
    (Load.dense(LoadTarget.SPAD_WT, 3, 4, 0x1234, 16, 4), 0),
    (Preload(2, 3, 4), 1),
    (Compute(5, 7, 9, accumulate=True), 1),
    (Store(1, 2, 3, 4, 0, -128, 127, 0xFFFF_0000, row_stride1=100), 2),
    (Copy(0, 3, 4, 0x40, row_stride1=8), 2),
    (Halt(), 3),
])
def test_fields_decode_from_the_port_layout(instr: Instruction, unit: int) -> None:
    command = encode_command(instr, CONFIG)
    assert 0 <= command < 1 << COMMAND_BITS
    view = data.Const(command_layout(), command)
    assert decode(int(view.payload).to_bytes(64, "little")) == instr
    assert view.unit == unit
    footprint = instr.footprint(CONFIG)
    for index in range(3):
        entry = view.ranges[index]
        if index < len(footprint):
            access = footprint[index]
            assert (entry.valid, entry.first, entry.last, entry.write) == (
                1, access.first, access.last, int(access.write))
            assert MEMORY_IDS[entry.mem] == access.memory.value
        else:
            assert entry.valid == 0 and int(entry.as_bits()) == 0


def test_words32() -> None:
    command = encode_command(Store(1, 2, 3, 4, 0, -128, 127, 0xFFFF_0000), CONFIG)
    words = split_words32(command)
    assert len(words) == COMMAND_WORDS32 == 23
    assert sum(w << (32 * i) for i, w in enumerate(words)) == command
