"""`systolic.verilog.fpga_report` on real nextpnr-nexus and nextpnr-himbaechel (Gowin) output
(fpga_data/<part>_*, recorded by make_fpga_family_data.py): `mac_ram` (one 8x8 product, a
512 x 16 memory) fits the LIFCL-17 and the GW1N-9C; `dsp_hog` has more 8x8 products than
either has multipliers."""

import json
from pathlib import Path
from typing import Any

import pytest

from systolic.verilog.fpga_harness import HARNESS_TOP, top_ports
from systolic.verilog.fpga_parts import PARTS
from systolic.verilog.fpga_report import (
    critical_path,
    fmax_mhz,
    parse_utilisation,
    read_outcome,
    resources,
    shortfall,
    signal_namer,
)

from .make_fpga_data import MAC_RAM

DATA = Path(__file__).parent / "fpga_data"
GOWIN = PARTS["gw1n-9c"]
NEXUS = PARTS["nexus-17k"]


def _json(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _log(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _outcome(name: str) -> dict[str, Any]:
    return read_outcome(PARTS[name], _log(f"{name}_fits_nextpnr.log"),
                        _json(f"{name}_fits_report.json"), _json(f"{name}_fits_netlist.json"))


@pytest.mark.parametrize(("name", "multipliers", "product_flip_flops"), [
    # Yosys makes the product a MULT18X18: two 9x9 multipliers (MULT9_CORE), and p_r the DSP
    # block's own output register (REG18_CORE).
    ("nexus-17k", 2, 0),
    ("gw1n-9c", 1, 16),
])
def test_small_design_fits_with_one_product_and_one_block_ram(
        name: str, multipliers: int, product_flip_flops: int) -> None:
    outcome = _outcome(name)
    used = outcome["resources"]
    harness = top_ports(MAC_RAM, "mac_ram").flip_flops
    assert outcome["fits"] and outcome["shortfall"] == []
    assert used["dsps"]["used"] == multipliers and used["brams"]["used"] == 1
    assert used["flip_flops"]["used"] == harness + product_flip_flops  # the chains, p_r
    assert 0 < used["luts"]["used"] < used["luts"]["available"]
    report = _json(f"{name}_fits_report.json")
    assert used == resources(PARTS[name], report["utilization"])


def test_available_counts_are_the_devices() -> None:
    nexus = _outcome("nexus-17k")["resources"]
    assert {name: counts["available"] for name, counts in nexus.items()} == {
        "luts": 13_824, "flip_flops": 13_824, "dsps": 48, "brams": 24}
    gowin = _outcome("gw1n-9c")["resources"]
    assert {name: counts["available"] for name, counts in gowin.items()} == {
        "luts": 8_640, "flip_flops": 6_480, "dsps": 40, "brams": 26}


def test_gowin_pseudo_cell_is_no_shortfall() -> None:
    table = _json("gw1n-9c_fits_report.json")["utilization"]
    assert table["DUMMY_CELL"] == {"available": 0, "used": 1}  # nextpnr-himbaechel's own
    assert shortfall(GOWIN, table) == []


def test_gowin_overflow_names_the_multipliers() -> None:
    log = _log("gw1n-9c_overflow_nextpnr.log")
    assert "no BELs remaining to implement cell type 'MULT9X9'" in log
    assert shortfall(GOWIN, parse_utilisation(log)) == [
        {"resource": "dsps", "cell_type": "MULT9X9", "used": 48, "available": 40, "over": 8}]


def test_nexus_overflow_names_the_multipliers_before_the_rest_of_the_dsp_block() -> None:
    log = _log("nexus-17k_overflow_nextpnr.log")
    assert "no BELs remaining to implement cell type 'PREADD9_CORE'" in log
    assert shortfall(NEXUS, parse_utilisation(log)) == [
        {"resource": "dsps", "cell_type": "MULT9_CORE", "used": 56, "available": 48, "over": 8},
        *({"resource": cell_type, "cell_type": cell_type, "used": 56, "available": 48,
           "over": 8} for cell_type in ("PREADD9_CORE", "REG18_CORE")),
    ]


def test_gowin_wider_multipliers_and_carries_count_in_their_resource() -> None:
    table = {"LUT4": {"used": 100, "available": 8640}, "ALU": {"used": 30, "available": 6480},
             "MULT9X9": {"used": 30, "available": 40}, "MULT18X18": {"used": 4, "available": 20},
             "MULT36X36": {"used": 1, "available": 5}}
    used = resources(GOWIN, table)
    assert used["luts"] == {"used": 130, "available": 8640}
    assert used["dsps"] == {"used": 30 + 2 * 4 + 8, "available": 40}
    assert shortfall(GOWIN, table) == [
        {"resource": "dsps", "cell_type": "MULT9X9", "used": 46, "available": 40, "over": 6}]


@pytest.mark.parametrize("name", ["nexus-17k", "gw1n-9c"])
def test_fmax_and_critical_path_by_signal_names(name: str) -> None:
    report = _json(f"{name}_fits_report.json")
    path = critical_path(report, signal_namer(_json(f"{name}_fits_netlist.json"), HARNESS_TOP))
    achieved, constraint = fmax_mhz(report)
    assert path is not None and achieved is not None and constraint == 100.0
    assert achieved == pytest.approx(1000.0 / path["delay_ns"], rel=1e-2)
    assert 0 < path["logic_ns"] < path["delay_ns"]
    assert path["start"].startswith("accelerator.")  # a chain register by the port it drives


def test_nexus_path_starts_after_its_clock_skew_and_ends_at_the_dsp_cell() -> None:
    report = _json("nexus-17k_fits_report.json")
    steps = next(p for p in report["critical_paths"] if p["from"] == p["to"])["path"]
    assert steps[0]["type"] == "clk-skew" and steps[0]["from"]["port"] == "CLK"
    path = critical_path(report, signal_namer(_json("nexus-17k_fits_netlist.json"),
                                              HARNESS_TOP))
    assert path is not None
    assert path["start_cell"] == f"{steps[1]['from']['cell']}.Q"
    # The product's register inside the DSP block: nextpnr's sub-cell of Yosys' MULT18X18.
    assert path["end_cell"].startswith(path["end"] + "/")
    assert path["end"].startswith("accelerator.p_r_")  # Yosys' cell of mac_ram's p_r
