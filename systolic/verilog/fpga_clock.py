"""Where the harness' clock comes from: the `clk` pin, or the Nexus parts' on-chip oscillator.

On ECP5 and Gowin the harness is clocked from its `clk` pin. On Lattice Nexus
(CrossLink-NX) nextpnr-nexus 0.11 inserts a clock buffer (DCC) behind the clock's pad, places
it by a search from the pad, routes the buffer's output to every flip-flop first
(`route_globals`, its wires locked), and only then lets the general router connect the pad to
the buffer's input. On the LIFCL-40 that connection fails ("Failed to route arc 0.0 of net
'accelerator.clk'", nextpnr exit status 125): from the PCLKT1_2 pin (L13) already on the
flow's smallest test design (the buffer found, DCC_R1, is fed only through the right clock
mux), and from K1 (no dedicated clock input: the path enters the left mux through a fabric
wire) on the 2x2 LOAD unit (3,887 OXIDE_COMB), probably because fabric wires that path needs
were taken. The on-chip oscillator (`OSCA`) reaches a buffer of the top mux (DCC_T1) by
dedicated wires, found by the same search; on that LOAD unit it routed where K1 failed. So the
Nexus harness is clocked by the oscillator, and its `clk` pin stays but is unused.

nextpnr-nexus derives the clock's constraint from the oscillator's divider: the worst case of
its 450 MHz +/- 7%, 481.5 MHz / (HF_CLK_DIV + 1). The flow picks the largest divider whose
worst-case frequency is still at or above the target (100 MHz: HF_CLK_DIV 3, 120.4 MHz), so a
design that meets the derived constraint meets the target; the reported Fmax is nextpnr's
own figure for the clock net, as on the other families.
"""

import math

__all__ = ["NEXUS_OSC_WORST_MHZ", "nexus_divider", "oscillator_verilog"]

NEXUS_OSC_WORST_MHZ = 450.0 * 1.07
"""The worst-case (fastest) frequency of the Nexus oscillator nextpnr assumes, MHz."""

_MAX_DIVIDER = 255


def nexus_divider(target_mhz: float) -> int:
    """Return the largest HF_CLK_DIV whose worst-case frequency is at or above `target_mhz`
    (1 for targets above 240.75 MHz, 255 below 1.9 MHz)."""
    divider = math.floor(NEXUS_OSC_WORST_MHZ / target_mhz) - 1
    return max(1, min(_MAX_DIVIDER, divider))


def oscillator_verilog(kind: str | None, target_mhz: float, wire: str) -> list[str]:
    """Return the harness lines that drive `wire` from the on-chip oscillator `kind`
    (`nexus`), or [] for None: the harness is then clocked from its `clk` pin."""
    if kind is None:
        return []
    if kind != "nexus":
        raise ValueError(f"unknown on-chip oscillator {kind!r}")
    divider = nexus_divider(target_mhz)
    enables = ".HFOUTEN(1'b1), .HFSDSCEN(1'b0)"
    return [
        f"  wire {wire};",
        f'  OSCA #(.HF_CLK_DIV("{divider}")) oscillator ({enables}, .HFCLKOUT({wire}));',
    ]
