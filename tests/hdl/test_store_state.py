"""StoreInstruction: the class flags and the fields of the held word, as the ISA encodes them
(`Instruction.encode`); `pick` takes the first condition that holds."""

from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from systolic.hdl.store_state import CLASSES, StoreInstruction, pick
from systolic.isa.instructions import Add, Copy, Pool, Store, Table


def held(instruction) -> dict[str, int]:
    """Hold `instruction`'s word and return its flags, `m`, `lanes` (COPY/POOL/ADD) and
    whether `pick` chose ADD's `a_row`."""
    m = Module()
    instr = StoreInstruction(m)
    lanes = instr.common("lanes", (Copy, Pool, Add))
    rows = instr.common("m", (Store, Copy, Add))
    chosen = pick([(instr.is_[Store], 1), (instr.is_[Add], 2)], 3)
    seen: dict[str, int] = {}

    async def testbench(ctx):
        ctx.set(instr.word, int.from_bytes(instruction.encode(), "little"))
        seen.update({cls.MNEMONIC: ctx.get(instr.is_[cls]) for cls in CLASSES})
        seen.update(m=ctx.get(rows), lanes=ctx.get(lanes), chosen=ctx.get(chosen))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    return seen


def test_an_add_is_flagged_and_read_as_an_add() -> None:
    seen = held(Add(a_row=3, b_row=9, m=7, lanes=5, ext=0, n0=1, row_stride0=0, row_stride1=5,
                    multiplier_a=1 << 30, multiplier_b=1 << 30, shift=0, zp_a=0, zp_b=0,
                    zp_out=0, lo=-128, hi=127))
    assert {name for name in seen if seen[name] == 1 and name.isupper()} == {"ADD"}
    assert (seen["m"], seen["lanes"], seen["chosen"]) == (7, 5, 2)


def test_a_table_is_none_of_the_writers() -> None:
    seen = held(Table(row=4, wide=True))
    assert [name for name in ("STORE", "COPY", "POOL", "ADD", "SOFTMAX") if seen[name]] == []
    assert seen["TABLE"] == 1 and seen["chosen"] == 3


def test_pick_with_no_options_is_the_default() -> None:
    value = Signal(4)
    assert pick([], value) is value
