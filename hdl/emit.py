"""Turning an Amaranth component into deterministic Verilog.

`component_ports` lists a component's Verilog ports from its signature (the same names
`amaranth.back.verilog` gives them: the member path joined by `__`); members whose value is a
constant, such as the `ready` of an always-ready stream, are not ports and are listed apart.
`to_verilog` converts with exactly those ports and rewrites every `src` attribute so the output
names source files relative to their package (`systolic/hdl/pe.py:120`) instead of by absolute
path: the same configuration gives the same bytes on any machine and in any install.
"""

import dataclasses
import importlib
import os
import re
from typing import Any

from amaranth.back import verilog
from amaranth.hdl import Const, Shape, Value
from amaranth.hdl._ir import PortDirection  # the port directions `convert(ports=...)` takes
from amaranth.lib import data, wiring

from systolic.config import ArrayConfig
from systolic.config_units import units_text

__all__ = [
    "ConstantMember",
    "Port",
    "build_accelerator",
    "component_ports",
    "layout_fields",
    "relativize_sources",
    "to_verilog",
    "top_name",
]


@dataclasses.dataclass(frozen=True)
class Port:
    """One Verilog port of a component.

    `path` is the signature member path (`("i_instr", "payload")`), `name` the Verilog name
    (`i_instr__payload`), `direction` "input" or "output", `width` in bits, and `shape` the
    member's shape (a `data.Layout` for structured members, used to list their fields).
    """

    path: tuple[str | int, ...]
    name: str
    direction: str
    width: int
    shape: Any


@dataclasses.dataclass(frozen=True)
class ConstantMember:
    """A signature member tied to a constant (not a Verilog port), e.g. an always-ready `ready`."""

    path: tuple[str | int, ...]
    name: str
    value: int


def top_name(config: ArrayConfig) -> str:
    """Return the top module's name for `config`, e.g. `systolic_accel_16x16_ws`, with the
    omitted units after it (`systolic_accel_8x8_ws_without_row_unit_tables`)."""
    name = f"systolic_accel_{config.rows}x{config.cols}_{config.dataflow.value}"
    if config.without:
        name += "_without_" + units_text(config.without).replace("-", "_").replace(",", "_")
    return name


def build_accelerator(config: ArrayConfig) -> wiring.Component:
    """Return the accelerator (`systolic.hdl.accelerator.Accelerator`) for `config`."""
    module = importlib.import_module("systolic.hdl.accelerator")
    component: wiring.Component = module.Accelerator(config)
    return component


def _port_name(path: tuple[str | int, ...]) -> str:
    return "__".join(str(part) for part in path)


def component_ports(
    component: wiring.Component,
) -> tuple[tuple[Port, ...], tuple[ConstantMember, ...]]:
    """Return the component's ports in signature order, and its constant members."""
    ports: list[Port] = []
    constants: list[ConstantMember] = []
    for path, member, value in component.signature.flatten(component):
        as_value = Value.cast(value)
        name = _port_name(path)
        if isinstance(as_value, Const):
            constants.append(ConstantMember(path, name, as_value.value))
            continue
        direction = "input" if member.flow == wiring.In else "output"
        ports.append(Port(path, name, direction, len(as_value), member.shape))
    return tuple(ports), tuple(constants)


def _convert_ports(component: wiring.Component) -> dict[str, tuple[Value, PortDirection]]:
    ports: dict[str, tuple[Value, PortDirection]] = {}
    for path, member, value in component.signature.flatten(component):
        as_value = Value.cast(value)
        if isinstance(as_value, Const):
            continue
        direction = PortDirection.Input if member.flow == wiring.In else PortDirection.Output
        ports[_port_name(path)] = (as_value, direction)
    return ports


def _source_roots() -> list[tuple[str, str]]:
    """Return (absolute folder, relative name) pairs for the packages the HDL comes from."""
    roots: list[tuple[str, str]] = []
    for package in ("systolic", "systolic.hdl", "systolic.sim", "systolic.mapper", "amaranth"):
        try:
            module = importlib.import_module(package)
        except ImportError:  # pragma: no cover - every install has these
            continue
        for folder in getattr(module, "__path__", []):
            roots.append((os.path.realpath(folder) + os.sep, package.replace(".", "/") + "/"))
    roots.sort(key=lambda pair: len(pair[0]), reverse=True)  # the most specific folder wins
    return roots


_SRC_ATTRIBUTE = re.compile(r'\(\* src = "([^"]*)" \*\)')
_LOCATION = re.compile(r"^(.*?)(:\d[\d.\-]*)?$")


def relativize_sources(text: str) -> str:
    """Rewrite the `src` attributes of Verilog `text` to package-relative file names.

    A location `/abs/path/hdl/pe.py:120` becomes `systolic/hdl/pe.py:120`; a file outside the
    known packages keeps only its base name. Several locations (joined by `|`) are each rewritten.
    """
    roots = _source_roots()

    def relative(location: str) -> str:
        match = _LOCATION.match(location)
        assert match is not None  # the pattern matches every string
        path, line = match.group(1), match.group(2) or ""
        if not os.path.isabs(path):
            return location
        real = os.path.realpath(path)
        for folder, name in roots:
            if real.startswith(folder):
                return name + real[len(folder):].replace(os.sep, "/") + line
        return os.path.basename(path) + line

    def rewrite(match: "re.Match[str]") -> str:
        locations = "|".join(relative(part) for part in match.group(1).split("|"))
        return f'(* src = "{locations}" *)'

    return _SRC_ATTRIBUTE.sub(rewrite, text)


def to_verilog(component: wiring.Component, name: str) -> str:
    """Return the Verilog of `component` with top module `name`, deterministic and relocatable."""
    text = verilog.convert(component, name=name, ports=_convert_ports(component))
    return relativize_sources(text)


def layout_fields(shape: Any) -> list[tuple[str, int, int]]:
    """Return (field path, lowest bit, width) for every leaf field of a structured shape.

    A plain shape gives no fields. Struct fields are named by their keys, array elements by
    `[i]` (`ranges[0].first`); an array of plain numbers is one field (`data`).
    """
    fields: list[tuple[str, int, int]] = []

    def walk(layout: Any, prefix: str, base: int) -> None:
        plain_array = isinstance(layout, data.ArrayLayout) and not isinstance(
            layout.elem_shape, data.Layout
        )
        if isinstance(layout, data.Layout) and not plain_array:
            for key, field in layout:
                label = f"{prefix}[{key}]" if isinstance(key, int) else (
                    f"{prefix}.{key}" if prefix else str(key)
                )
                walk(field.shape, label, base + field.offset)
            return
        width = layout.size if isinstance(layout, data.Layout) else Shape.cast(layout).width
        fields.append((prefix, base, width))

    if isinstance(shape, data.Layout):
        walk(shape, "", 0)
    return [field for field in fields if field[0]]  # a plain array is described by its shape
