"""`systolic.hdl.emit`: ports from the signature, relocatable deterministic Verilog."""

import re
from pathlib import Path

from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.emit import (
    component_ports,
    layout_fields,
    relativize_sources,
    to_verilog,
    top_name,
)

PAIR = data.StructLayout({"lo": 4, "hi": data.ArrayLayout(2, 3)})


class Passthrough(wiring.Component):
    """A registered copy of an always-ready input stream, plus a plain input and output."""

    i_beats: In(stream.Signature(PAIR, always_ready=True))
    o_beats: Out(stream.Signature(PAIR))
    enable: In(1)
    count: Out(8)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        with m.If(self.enable & self.i_beats.valid):
            m.d.sync += [self.o_beats.payload.eq(self.i_beats.payload), self.count.eq(self.count + 1)]
        m.d.sync += self.o_beats.valid.eq(self.i_beats.valid)
        return m


def _declared_ports(verilog: str, top: str) -> dict[str, tuple[str, int]]:
    """Return {name: (direction, width)} of the top module's declarations."""
    body = verilog[verilog.index(f"module {top}(") : verilog.index("endmodule")]
    ports = {}
    for direction, high, name in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\S+);",
                                            body, re.MULTILINE):
        ports[name] = (direction, int(high) + 1 if high else 1)
    return ports


def test_top_name_names_size_and_dataflow() -> None:
    config = ArrayConfig(rows=16, cols=8, dataflow=Dataflow.OS)
    assert top_name(config) == "systolic_accel_16x8_os"


def test_ports_come_from_the_signature_and_constants_are_not_ports() -> None:
    component = Passthrough()
    component._MustUse__silence = True  # only its signature is read, it is never elaborated
    ports, constants = component_ports(component)
    assert [(p.name, p.direction, p.width) for p in ports] == [
        ("i_beats__payload", "input", 10),
        ("i_beats__valid", "input", 1),
        ("o_beats__payload", "output", 10),
        ("o_beats__valid", "output", 1),
        ("o_beats__ready", "input", 1),
        ("enable", "input", 1),
        ("count", "output", 8),
    ]
    assert [(c.name, c.value) for c in constants] == [("i_beats__ready", 1)]


def test_verilog_declares_exactly_the_listed_ports_plus_clock_and_reset() -> None:
    component = Passthrough()
    ports, _ = component_ports(component)
    text = to_verilog(component, "pass_top")
    expected = {p.name: (p.direction, p.width) for p in ports}
    expected |= {"clk": ("input", 1), "rst": ("input", 1)}
    assert _declared_ports(text, "pass_top") == expected


def test_layout_fields_flatten_structs_and_arrays() -> None:
    nested = data.StructLayout({
        "unit": 2,
        "ranges": data.ArrayLayout(data.StructLayout({"valid": 1, "first": 5}), 2),
        "row": data.ArrayLayout(8, 4),
    })
    assert layout_fields(nested) == [
        ("unit", 0, 2),
        ("ranges[0].valid", 2, 1),
        ("ranges[0].first", 3, 5),
        ("ranges[1].valid", 8, 1),
        ("ranges[1].first", 9, 5),
        ("row", 14, 32),
    ]
    assert layout_fields(8) == []
    assert layout_fields(data.ArrayLayout(8, 4)) == []  # a plain array is described by its shape


def test_source_locations_are_relative_to_their_package() -> None:
    import amaranth

    import systolic.hdl

    hdl_dir = systolic.hdl.__path__[0]
    amaranth_dir = amaranth.__path__[0]
    text = (
        f'(* src = "{hdl_dir}/pe.py:120" *)\n'
        f'  (* src = "{amaranth_dir}/lib/stream.py:5.1-6.2|{hdl_dir}/mesh.py:7" *)\n'
        '(* src = "/somewhere/else/tb.py:3" *)\n'
        '(* src = "relative.py:9" *)\n'
    )
    assert relativize_sources(text) == (
        '(* src = "systolic/hdl/pe.py:120" *)\n'
        '  (* src = "amaranth/lib/stream.py:5.1-6.2|systolic/hdl/mesh.py:7" *)\n'
        '(* src = "tb.py:3" *)\n'
        '(* src = "relative.py:9" *)\n'
    )


def test_emitted_verilog_has_no_absolute_paths() -> None:
    text = to_verilog(Passthrough(), "pass_top")
    sources = re.findall(r'src = "([^"]*)"', text)
    assert sources, "the Verilog keeps source locations"
    assert all(not part.startswith("/") for s in sources for part in s.split("|"))
    assert str(Path(__file__).resolve().parents[2]) not in text  # the checkout's path
    assert "site-packages" not in text
