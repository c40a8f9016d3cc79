"""`systolic.verilog.fpga_report` on real nextpnr-ecp5 output (fpga_data/, recorded by
make_fpga_data.py): `mac_ram` (one 8x8 product, a 512 x 16 memory) fits an ECP5-25K,
`dsp_hog` (40 registered 8x8 products) needs 40 DSP multipliers of its 28."""

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
PART = PARTS["ecp5-25k"]


def _json(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _log(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_log_table_equals_the_report_after_routing() -> None:
    table = parse_utilisation(_log("fits_nextpnr.log"))
    assert table == _json("fits_report.json")["utilization"]


def test_resources_of_a_design_that_fits() -> None:
    used = resources(PART, parse_utilisation(_log("fits_nextpnr.log")))
    harness = top_ports(MAC_RAM, "mac_ram").flip_flops
    assert used["dsps"] == {"used": 1, "available": 28}  # the 8x8 product
    assert used["brams"] == {"used": 1, "available": 56}  # 512 x 16 bits in one DP16KD
    assert used["flip_flops"] == {"used": harness + 16, "available": 24_288}  # + p_r
    assert 0 < used["luts"]["used"] < used["flip_flops"]["used"]
    assert shortfall(PART, parse_utilisation(_log("fits_nextpnr.log"))) == []


def test_shortfall_names_the_resource_and_the_excess() -> None:
    table = parse_utilisation(_log("overflow_nextpnr.log"))
    assert "no BELs remaining to implement cell type 'MULT18X18D'" in _log("overflow_nextpnr.log")
    assert shortfall(PART, table) == [
        {"resource": "dsps", "cell_type": "MULT18X18D", "used": 40, "available": 28, "over": 12},
    ]


def test_shortfall_orders_by_relative_excess_and_keeps_unreported_types() -> None:
    table = {"TRELLIS_COMB": {"used": 30, "available": 20},
             "TRELLIS_IO": {"used": 400, "available": 197},
             "DP16KD": {"used": 3, "available": 56}}
    assert [item["resource"] for item in shortfall(PART, table)] == ["TRELLIS_IO", "luts"]


def test_log_without_a_table_gives_nothing() -> None:
    assert parse_utilisation("Info: Packing IOs..\nERROR: something else\n") == {}


def test_fmax_is_the_inverse_of_the_critical_path() -> None:
    report = _json("fits_report.json")
    namer = signal_namer(_json("fits_netlist.json"), HARNESS_TOP)
    path = critical_path(report, namer)
    achieved, constraint = fmax_mhz(report)
    assert path is not None and achieved is not None
    assert constraint == 100.0
    assert achieved == pytest.approx(1000.0 / path["delay_ns"], rel=1e-3)
    assert 0 < path["logic_ns"] < path["delay_ns"]
    assert path["clock"].startswith("posedge ")


def test_critical_path_ends_are_signal_names() -> None:
    report = _json("fits_report.json")
    path = critical_path(report, signal_namer(_json("fits_netlist.json"), HARNESS_TOP))
    assert path is not None
    steps = next(p for p in report["critical_paths"] if p["from"] == p["to"])["path"]
    first, last = steps[0]["from"], steps[-1]["to"]
    assert path["start_cell"] == f"{first['cell']}.{first['port']}"
    assert path["end_cell"] == f"{last['cell']}.{last['port']}"
    # The memory's read data (q) into the harness's output chain: both by register names.
    assert path["start"].startswith("accelerator.q[")
    assert path["end"].startswith("chain_out[")


def test_namer_prefers_the_accelerator_and_falls_back_to_the_cell() -> None:
    netlist = {"modules": {"top": {
        "cells": {"ff": {"type": "TRELLIS_FF", "connections": {"Q": [7], "DI": [8]}}},
        "netnames": {
            "result": {"hide_name": 0, "bits": [6, 7]},
            "accelerator.acc.value": {"hide_name": 0, "bits": [7, 9, 10]},
            "$auto$x": {"hide_name": 1, "bits": [8]},
        },
    }}}
    name = signal_namer(netlist, "top")
    assert name("ff", "Q") == "accelerator.acc.value[0]"
    assert name("ff", "DI") == "ff.DI"  # only a hidden name
    assert name("absent", "Q") == "absent.Q"


def test_no_clocked_path_gives_no_fmax() -> None:
    assert fmax_mhz({}) == (None, None)
    assert critical_path({"critical_paths": []}, lambda cell, port: cell) is None


def test_outcome_of_both_runs() -> None:
    report, netlist = _json("fits_report.json"), _json("fits_netlist.json")
    fits = read_outcome(PART, _log("fits_nextpnr.log"), report, netlist)
    assert fits["fits"] and fits["shortfall"] == []
    assert fits["resources"] == resources(PART, report["utilization"])
    assert fits["fmax_mhz"] == round(fmax_mhz(report)[0], 2)
    assert fits["critical_path"] == critical_path(report, signal_namer(netlist, HARNESS_TOP))
    stopped = read_outcome(PART, _log("overflow_nextpnr.log"), None, None)
    assert not stopped["fits"] and stopped["fmax_mhz"] is None
    assert stopped["critical_path"] is None and stopped["shortfall"][0]["resource"] == "dsps"
