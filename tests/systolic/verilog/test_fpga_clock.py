"""`systolic.verilog.fpga_clock`: the Nexus oscillator's divider for a target frequency."""

import pytest

from systolic.verilog.fpga_clock import NEXUS_OSC_WORST_MHZ, nexus_divider, oscillator_verilog


@pytest.mark.parametrize(("target", "divider"), [(100.0, 3), (96.3, 4), (120.375, 3),
                                                 (120.4, 2), (50.0, 8), (300.0, 1),
                                                 (1.0, 255)])
def test_divider_is_the_largest_still_at_or_above_the_target(target: float,
                                                             divider: int) -> None:
    assert nexus_divider(target) == divider
    if 1 < divider < 255:
        assert NEXUS_OSC_WORST_MHZ / (divider + 1) >= target
        assert NEXUS_OSC_WORST_MHZ / (divider + 2) < target


def test_no_oscillator_and_an_unknown_one() -> None:
    assert oscillator_verilog(None, 100.0, "c") == []
    assert oscillator_verilog("nexus", 50.0, "c")[0] == "  wire c;"
    with pytest.raises(ValueError, match=r"^unknown on-chip oscillator 'gowin'$"):
        oscillator_verilog("gowin", 100.0, "c")
