"""`systolic.verilog.lint`: every unit and the accelerator lint clean under `-Wall`, and the
waivers are narrow enough that a real problem is still reported."""

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError
from systolic.hdl.accumulator import Accumulator
from systolic.hdl.dispatcher import Dispatcher
from systolic.hdl.emit import build_accelerator, to_verilog, top_name
from systolic.hdl.execute_unit import ExecuteUnit
from systolic.hdl.load_unit import LoadUnit
from systolic.hdl.store_unit import StoreUnit
from systolic.hdl.systolic_array import SystolicArray
from systolic.verilog.lint import LINT_CONFIG, find_verilator, lint


@pytest.fixture(scope="module", autouse=True)
def _verilator() -> None:
    try:
        find_verilator()
    except ConfigError as err:
        pytest.skip(str(err))


def _config(size: int, dataflow: str) -> ArrayConfig:
    return ArrayConfig(rows=size, cols=size, dataflow=Dataflow(dataflow), spad_kib=8, acc_kib=4)


UNITS = {
    "load_unit": lambda c: LoadUnit(c, mem_latency=c.mem_latency),
    "execute_unit": ExecuteUnit,
    "store_unit": StoreUnit,
    "accumulator": Accumulator.from_config,
    "systolic_array": SystolicArray,
}


def _lint_component(tmp_path, component: wiring.Component, top: str) -> list[str]:
    path = tmp_path / f"{top}.v"
    path.write_text(to_verilog(component, top))
    result = lint(path, top)
    assert result.returncode == 0 or result.warnings, result.output
    return list(result.warnings)


DATAFLOW_UNITS = ("execute_unit", "systolic_array")
"""The units whose hardware depends on the dataflow; the others are linted in OS too in the
slow set (their OS build emits the same Verilog, byte for byte)."""


@pytest.mark.parametrize(("unit", "dataflow"), [
    pytest.param(unit, dataflow, marks=() if dataflow == "ws" or unit in DATAFLOW_UNITS
                 else (pytest.mark.slow,))
    for unit in sorted(UNITS) for dataflow in ("ws", "os")])
def test_unit_lints_clean(tmp_path, unit: str, dataflow: str) -> None:
    component = UNITS[unit](_config(2, dataflow))
    assert _lint_component(tmp_path, component, unit) == []


@pytest.mark.parametrize("unit", DATAFLOW_UNITS)
def test_units_of_both_dataflows_lint_clean(tmp_path, unit: str) -> None:
    """The units whose hardware depends on the dataflow, built for `both`."""
    assert _lint_component(tmp_path, UNITS[unit](_config(2, "both")), unit) == []


@pytest.mark.slow
def test_accelerator_of_both_dataflows_lints_clean(tmp_path) -> None:
    config = _config(2, "both")
    assert _lint_component(tmp_path, build_accelerator(config), top_name(config)) == []


def test_dispatcher_lints_clean(tmp_path) -> None:
    assert _lint_component(tmp_path, Dispatcher(payload_shape=512), "dispatcher") == []


@pytest.mark.parametrize("dataflow", ["ws", pytest.param("os", marks=pytest.mark.slow)])
# the 2x2 WS by default (~11 s idle); its OS twin and the 4x4 tops (about 40 s each idle:
# elaboration, Verilog and lint of a bigger design, the same generators) are in the slow set.
@pytest.mark.parametrize("size", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_accelerator_lints_clean(tmp_path, size: int, dataflow: str) -> None:
    config = _config(size, dataflow)
    assert _lint_component(tmp_path, build_accelerator(config), top_name(config)) == []


class _Narrowing(wiring.Component):
    """Registers 8 bits and uses 4: Verilator must still say so through the waivers."""

    a: In(8)
    o: Out(4)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        held = Signal(8)
        m.d.sync += held.eq(self.a)
        m.d.comb += self.o.eq(held[:4])
        return m


def test_waivers_keep_unused_bits_of_named_signals(tmp_path) -> None:
    warnings = _lint_component(tmp_path, _Narrowing(), "narrowing")
    assert len(warnings) == 2, warnings  # the warning, then Verilator's "Exiting due to"
    assert warnings[0].startswith("%Warning-UNUSEDSIGNAL: narrowing.v:")
    assert warnings[0].endswith("Bits of signal are not used: 'held'[7:4]")


def test_every_waiver_is_explained() -> None:
    lines = LINT_CONFIG.splitlines()
    assert lines[0] == "`verilator_config"
    for index, line in enumerate(lines):
        if line.startswith("lint_off"):
            before = [text for text in lines[:index] if text and not text.startswith("lint_off")]
            assert lines[index - 1].startswith(("//", "lint_off")), line
            assert before[-1].startswith("//"), line
