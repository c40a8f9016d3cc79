"""`absent_ports`: the ports of a unit the configuration leaves out (`ArrayConfig.without`).

The unit that would host an omitted unit (the STORE unit) keeps its wiring unchanged and
talks to these ports instead: they are plain signals with nothing behind them, so every
output of the omitted unit reads as its reset value (0: no request, no result, never done)
and whatever drives its inputs is read by nobody, which synthesis removes. The program check
refuses every instruction that would need the unit (`systolic.isa`, `need_unit`), so the
constant outputs are never waited on.
"""

from amaranth.lib import wiring

__all__ = ["absent_ports"]


def absent_ports(unit: wiring.Component, name: str) -> wiring.PureInterface:
    """Return an interface with `unit`'s ports (signals named `<name>__<port>`), for a unit
    that is not built; `unit` itself is dropped unelaborated (a template for its ports)."""
    unit._MustUse__silence = True  # a template, not unused
    ports: wiring.PureInterface = unit.signature.create(path=(name,))
    return ports
