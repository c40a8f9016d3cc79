"""`BothPE` against a cycle-by-cycle model of both dataflows, with the mode changing."""

import random

import pytest

from systolic.hdl.pe_both import BothPE

from .test_pe import _random_operand, _simulate, wrap


def _stimulus(rng: random.Random, acc_width: int, rows: int, cycles: int) -> list[dict]:
    """Random inputs, in runs of one mode; in OS the lane carries B (`valid` 0)."""
    stimulus, mode = [], 0
    for _ in range(cycles):
        if rng.random() < 0.05:
            mode ^= 1
        stimulus.append({
            "os": mode, "a": _random_operand(rng, 8), "flag": int(rng.random() < 0.2),
            "south": _random_operand(rng, acc_width),
            "valid": int(rng.random() < 0.5) if mode == 0 else 0,
            "row": rng.randrange(rows), "data": _random_operand(rng, 8)})
    return stimulus


@pytest.mark.parametrize("acc_width", [16, 32])
def test_each_mode_is_its_dataflows_pe_and_keeps_the_others_state(acc_width: int) -> None:
    """Mode 0 is `WeightStationaryPE` (south = psum), mode 1 `OutputStationaryPE` (south =
    the drain chain, B from the lane); the weights survive OS cycles and the OS sum survives
    WS cycles."""
    rng = random.Random(acc_width)
    row, rows = 1, 3
    dut = BothPE(row=row, input_width=8, weight_width=8, acc_width=acc_width, rows=rows)
    stimulus = _stimulus(rng, acc_width, rows, 600)
    inputs = {"os": dut.i_os, "a": dut.i_a.data, "flag": dut.i_a.flip, "south": dut.i_south,
              "valid": dut.i_lane.valid, "row": dut.i_lane.row, "data": dut.i_lane.data}
    seen = _simulate(dut, inputs, stimulus, {
        "a": dut.o_a.data, "flag": dut.o_a.flip, "south": dut.o_south,
        "valid": dut.o_lane.valid, "row": dut.o_lane.row, "data": dut.o_lane.data})
    active = shadow = acc = result = 0
    modes = set()
    for cycle, values in enumerate(stimulus):
        a, flag, south, b = values["a"], values["flag"], values["south"], values["data"]
        passed = {name: values[name] for name in ("a", "flag", "valid", "row", "data")}
        if values["os"]:
            expected_south = result
            total = wrap(acc + a * b, acc_width)
            result, acc = (total, 0) if flag else (south, total)
        else:
            expected_south = wrap(south + a * (shadow if flag else active), acc_width)
            if flag:
                active = shadow
        if values["valid"] and values["row"] == row:
            shadow = b
        assert seen[cycle] == {**passed, "south": expected_south}, f"cycle {cycle}"
        modes.add(values["os"])
    assert modes == {0, 1}


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^row must be from 0 to rows - 1 \(3\), not 4$"):
        BothPE(row=4, input_width=8, weight_width=8, acc_width=32, rows=4)
    with pytest.raises(ValueError, match=r"^acc_width \(15\) must be at least input_width \+ "
                                         r"weight_width \(16\)$"):
        BothPE(row=0, input_width=8, weight_width=8, acc_width=15, rows=4)
