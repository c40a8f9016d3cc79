# amaranth: UnusedElaboratable=no

"""The parts the PEs are built from: parameter checks, the weight-stationary ports, and the
double-buffered weight and output-stationary sum alone in a module (the whole PEs are tested
in test_pe and test_pe_both)."""

import re

import pytest
from amaranth import Module, Signal, signed
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from systolic.hdl.pe_parts import (
    Lane,
    WeightLanePE,
    check_pe_parameters,
    emit_os_sum,
    emit_weights,
    os_registers,
    weight_lane_layout,
    ws_west_layout,
)


class _Component:
    """A stand-in for a component being rejected."""


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"row": 3, "rows": 3}, "row must be from 0 to rows - 1 (2), not 3"),
        ({"row": -1, "rows": 3}, "row must be from 0 to rows - 1 (2), not -1"),
        ({"acc_width": 15}, "acc_width (15) must be at least input_width + weight_width (16)"),
        ({"row": 5, "acc_width": 15}, "row must be from 0 to rows - 1 (0), not 5"),
    ],
)
def test_parameters_are_checked_row_first(fields: dict[str, int], message: str) -> None:
    component = _Component()
    arguments = {"input_width": 8, "weight_width": 8, "acc_width": 32, **fields}
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_pe_parameters(component, **arguments)
    assert component._MustUse__silence is True  # type: ignore[attr-defined]


def test_the_largest_row_and_the_smallest_acc_width_are_accepted() -> None:
    check_pe_parameters(_Component(), input_width=8, weight_width=4, acc_width=12, row=2, rows=3)


class _Mode(WeightLanePE):
    def __init__(self) -> None:
        super().__init__(row=1, input_width=8, weight_width=4, acc_width=16, rows=3,
                         sums="south", ports={"i_os": In(1)})  # fmt: skip


def test_weight_lane_pe_ports_follow_its_own_in_order() -> None:
    dut = _Mode()
    west, lane = ws_west_layout(8), weight_lane_layout(4, 3)
    assert dict(dut.signature.members.items()) == {
        "i_os": In(1), "i_a": In(west), "i_south": In(signed(16)), "i_lane": In(lane),
        "o_a": Out(west), "o_south": Out(signed(16)), "o_lane": Out(lane)}
    assert list(dut.signature.members) == ["i_os", "i_a", "i_south", "i_lane", "o_a", "o_south",
                                           "o_lane"]
    assert (dut.row, dut.rows, dut.input_width, dut.weight_width, dut.acc_width) == (1, 3, 8, 4,
                                                                                      16)


def test_weights_flip_and_load_and_the_os_sum_ends_on_last() -> None:
    """One double-buffered weight (row 1) and one OS sum, driven cycle by cycle."""
    m = Module()
    flip, last, valid, row = Signal(), Signal(), Signal(), Signal(2)
    data, total, drain = Signal(signed(8)), Signal(signed(16)), Signal(signed(16))
    weight_now = Signal(signed(8))
    m.d.comb += weight_now.eq(emit_weights(m, "w", row=1, weight_width=8, flip=flip,
                                           lane=Lane(valid, row, data)))  # fmt: skip
    acc, result = os_registers("s", 16)
    emit_os_sum(m, acc, result, last=last, total=total, drain=drain)
    steps = [  # inputs, then (weight this cycle, acc, result) after the edge
        ({"valid": 1, "row": 1, "data": 7}, (0, 0, 0)),  # loads the shadow weight
        ({"valid": 1, "row": 2, "data": 9}, (0, 0, 0)),  # another row's: ignored
        ({"flip": 1, "total": 5}, (7, 5, 0)),  # the shadow multiplies and becomes active
        ({"total": 11, "drain": 3}, (7, 11, 3)),
        ({"last": 1, "total": 20, "drain": 4}, (7, 0, 20)),
    ]
    ports = {"flip": flip, "last": last, "valid": valid, "row": row, "data": data,
             "total": total, "drain": drain}
    seen: list[tuple[int, int, int]] = []

    async def testbench(ctx):  # type: ignore[no-untyped-def]
        for values, _ in steps:
            for name, port in ports.items():
                ctx.set(port, values.get(name, 0))
            now = ctx.get(weight_now)
            await ctx.tick()
            seen.append((now, ctx.get(acc), ctx.get(result)))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert seen == [expected for _, expected in steps]
