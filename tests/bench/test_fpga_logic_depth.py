"""bench/fpga_logic_depth.py on a hand-made netlist: two LUTs between flip-flops, a carry chain
entered once, end points folded per register and paths named by the design's nets."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "fpga_logic_depth.py"


@pytest.fixture(scope="module")
def depth():
    spec = importlib.util.spec_from_file_location("fpga_logic_depth", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def _cell(kind, inputs, outputs):
    ports = {**dict.fromkeys(inputs, "input"), **dict.fromkeys(outputs, "output")}
    return {"type": kind, "port_directions": ports, "connections": {**inputs, **outputs}}


def _netlist() -> dict:
    lut = {"B": ["0"], "C": ["0"], "D": ["0"]}
    cells = {
        "ff_a": _cell("TRELLIS_FF", {"DI": [10]}, {"Q": [2]}),
        "lut1": _cell("LUT4", {"A": [2], **lut}, {"Z": [3]}),
        "lut2": _cell("LUT4", {"A": [3], **lut}, {"Z": [4]}),
        "ff_b0": _cell("TRELLIS_FF", {"DI": [4]}, {"Q": [5]}),
        "ff_b1": _cell("TRELLIS_FF", {"DI": [2]}, {"Q": [11]}),
        "c1": _cell("CCU2C", {"A0": [5], "CIN": ["0"]}, {"COUT": [6], "S0": [12]}),
        "c2": _cell("CCU2C", {"A0": ["0"], "CIN": [6]}, {"S0": [7]}),
        "ff_c": _cell("TRELLIS_FF", {"DI": [7]}, {"Q": [8]}),
    }
    names = {"a": [2], "mid": [3], "$auto$x": [4], "b": [5, 11], "carry": [6], "s": [7],
             "c": [8]}
    return {"ports": {}, "cells": cells,
            "netnames": {n: {"bits": b, "hide_name": int(n.startswith("$"))}
                         for n, b in names.items()}}


def test_levels_times_and_named_paths(depth) -> None:
    net = depth.Netlist(_netlist())
    walker = depth.DepthWalker(net)
    found = {key: (a, path) for a, key, path in depth.worst_paths(net, walker, 10)}
    assert set(found) == {"a", "b", "c"}  # ff_b0 and ff_b1 are one register, b
    d = depth.DELAYS
    b, b_path = found["b"]
    assert b.levels == 2
    assert b.time == pytest.approx(d["clk_to_q"] + 2 * (d["hop"] + d["LUT4"]))
    assert [net.name(bit) for bit in b_path] == ["a", "mid", "$auto$x"]
    c, _ = found["c"]
    assert c.levels == 1  # the chain counts once
    assert c.time == pytest.approx(d["clk_to_q"] + d["hop"] + 2 * d["CCU2C"])
    assert found["a"][0].levels == 0


def test_main_prints_the_worst_first(depth, tmp_path, capsys) -> None:
    path = tmp_path / "netlist.json"
    path.write_text(json.dumps({"modules": {"top": _netlist()}}))
    assert depth.main([str(path), "--top", "2"]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if "levels" in line]
    assert len(heads) == 2 and heads[0].endswith("  b")
