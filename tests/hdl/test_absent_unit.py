"""Optional STORE-side units left out (`ArrayConfig.without`, hdl/absent_unit.py): the STORE
unit elaborates without them, and the slim accelerator runs random programs bit-exact with the
golden machine, with every time, counter and energy event equal to the cycle model's."""

import dataclasses

from amaranth.hdl import Fragment

from systolic.config import ArrayConfig, Dataflow, OptionalUnit
from systolic.hdl.absent_unit import absent_ports
from systolic.hdl.softmax_unit import SoftmaxUnit
from systolic.hdl.store_unit import StoreUnit
from systolic.isa.instructions import Copy, Store, Table
from systolic.isa.program import Program

from ..support.random_programs import SyntheticProgram
from .accelerator_programs import small_config
from .feature_programs import assert_rtl_matches, feature_case, features

ROW_UNIT, TABLES = OptionalUnit.ROW_UNIT, OptionalUnit.TABLES


def _submodules(config: ArrayConfig) -> list[str]:
    return [name for _, name, _ in Fragment.get(StoreUnit(config), None).subfragments]


def test_store_unit_elaborates_without_the_omitted_units() -> None:
    full = ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1)
    assert {"table", "softmax"} <= set(_submodules(full))
    for without, gone in ((frozenset({ROW_UNIT}), {"softmax"}), (frozenset({TABLES}), {"table"}),
                          (frozenset({ROW_UNIT, TABLES}), {"softmax", "table"})):
        names = _submodules(dataclasses.replace(full, without=without))
        assert set(names) == set(_submodules(full)) - gone


def test_absent_ports_have_the_units_ports() -> None:
    unit = SoftmaxUnit(lanes=4, bus_bytes=8)
    ports = absent_ports(SoftmaxUnit(lanes=4, bus_bytes=8), "softmax")
    assert set(dict(ports.signature.members)) == set(dict(unit.signature.members))
    assert ports.spad_en.name == "softmax__spad_en"
    unit._MustUse__silence = True  # type: ignore[attr-defined]


def test_accelerator_without_row_unit_runs_tables_and_mul() -> None:
    """ADD mul then uses the vector unit's own multipliers (not the row unit's)."""
    config = small_config(2, 2, Dataflow.WS, mem_latency=1, bus_bytes=4,
                          without=frozenset({ROW_UNIT}))
    case = feature_case(config, 200, frozenset({"TABLE", "lut", "mul"}))
    assert_rtl_matches(case)


def _without_tables(case: SyntheticProgram, config: ArrayConfig) -> SyntheticProgram:
    """Return `case`'s program on `config`, its TABLEs dropped and its `lut` flags cleared."""
    instrs = tuple(dataclasses.replace(i, lut=False) if isinstance(i, Store | Copy) else i
                   for i in case.program.instructions if not isinstance(i, Table))
    program = Program(config, instrs, case.program.segments)
    return SyntheticProgram(program, case.memory)


def test_accelerator_without_both_units_runs_mul_and_broadcast() -> None:
    full = small_config(4, 4, Dataflow.OS, mem_latency=2, bus_bytes=8)
    case = feature_case(full, 401, frozenset({"mul", "b_broadcast"}))
    slim = _without_tables(case, dataclasses.replace(full, without=frozenset(OptionalUnit)))
    assert {"mul", "b_broadcast"} <= features(slim.program.instructions)
    assert not {"TABLE", "lut"} & features(slim.program.instructions)
    assert_rtl_matches(slim)
