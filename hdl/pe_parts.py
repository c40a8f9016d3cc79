"""The parts every processing element is built from (`pe.py`'s two PEs and `pe_both.py`'s).

Operand layouts (`ws_west_layout`, `weight_lane_layout`, `os_west_layout`), the parameter
checks, the base of the components with weight-stationary ports (`WeightLanePE`), and the
logic each `emit` writes into a module: the registers that pass activations east and preload
lanes south (`emit_passthrough`), the double-buffered weight (`emit_weights`) and the
output-stationary sum with its result register (`os_registers`, `emit_os_sum`). Every part is
in the sync domain and adds one cycle of latency on its registered paths; none has flow
control.
"""

from typing import NamedTuple

from amaranth import Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Member, Out

__all__ = [
    "Lane",
    "Passthrough",
    "WeightLanePE",
    "check_pe_parameters",
    "emit_os_sum",
    "emit_passthrough",
    "emit_weights",
    "os_registers",
    "os_west_layout",
    "row_index_shape",
    "weight_lane_layout",
    "ws_west_layout",
]


def row_index_shape(rows: int) -> unsigned:
    """Return the unsigned shape that numbers `rows` rows (at least one bit)."""
    return unsigned(max(1, (rows - 1).bit_length()))


def ws_west_layout(input_width: int) -> data.StructLayout:
    """Return the layout of one activation travelling east in the weight-stationary array.

    `flip` is set on the first activation of a new weight tile: each PE it reaches swaps its
    preloaded (shadow) weight in before multiplying.
    """
    return data.StructLayout({"data": signed(input_width), "flip": 1})


def weight_lane_layout(weight_width: int, rows: int) -> data.StructLayout:
    """Return the layout of one preload weight travelling south in the weight-stationary array.

    The weight is captured into the shadow register of the PE whose row equals `row`.
    """
    return data.StructLayout(
        {"valid": 1, "row": row_index_shape(rows), "data": signed(weight_width)}
    )


def os_west_layout(input_width: int) -> data.StructLayout:
    """Return the layout of one activation travelling east in the output-stationary array.

    `last` is set on the tile's final k: each PE it reaches ends its sum with this product.
    """
    return data.StructLayout({"data": signed(input_width), "last": 1})


def check_pe_parameters(component: object, *, input_width: int, weight_width: int,
                        acc_width: int, row: int = 0, rows: int = 1) -> None:  # fmt: skip
    """Raise ValueError unless `0 <= row < rows` and `acc_width >= input_width +
    weight_width` (marking the rejected `component` as not unused)."""
    message = None
    if not 0 <= row < rows:
        message = f"row must be from 0 to rows - 1 ({rows - 1}), not {row}"
    elif acc_width < input_width + weight_width:
        message = (f"acc_width ({acc_width}) must be at least input_width + weight_width "
                   f"({input_width + weight_width})")  # fmt: skip
    if message is not None:
        component._MustUse__silence = True  # type: ignore[attr-defined]  # rejected, not unused
        raise ValueError(message)


class WeightLanePE(wiring.Component):
    """The base of a PE with weight-stationary ports: `i_a` (`ws_west_layout`), `i_<sums>`,
    `i_lane` (`weight_lane_layout`) in and `o_a`, `o_<sums>`, `o_lane` out, after any `ports`
    of its own (`sums` names the sums travelling south). Keeps `row`, `rows` and the widths
    once `check_pe_parameters` accepts them."""

    def __init__(self, *, row: int, input_width: int, weight_width: int, acc_width: int,
                 rows: int, sums: str, ports: dict[str, Member] | None = None) -> None:  # fmt: skip
        check_pe_parameters(self, input_width=input_width, weight_width=weight_width,
                            acc_width=acc_width, row=row, rows=rows)  # fmt: skip
        self.row = row
        self.input_width, self.weight_width, self.acc_width = input_width, weight_width, acc_width
        self.rows = rows
        west, lane = ws_west_layout(input_width), weight_lane_layout(weight_width, rows)
        super().__init__({
            **(ports or {}),
            "i_a": In(west), f"i_{sums}": In(signed(acc_width)), "i_lane": In(lane),
            "o_a": Out(west), f"o_{sums}": Out(signed(acc_width)), "o_lane": Out(lane),
        })  # fmt: skip

    def _drive_outputs(self, m: Module, o_south: Value, outputs: tuple[Value, ...]) -> None:
        """Drive `o_a` (data, flip), `o_south` (this PE's `o_<sums>`) and `o_lane` from the
        registered `outputs` of its `emit`: (a, flag, south, lane valid, row, data)."""
        a, flag, south, *lane = outputs
        m.d.comb += [
            self.o_a.data.eq(a),
            self.o_a.flip.eq(flag),
            o_south.eq(south),
            *(o.eq(r) for o, r in zip((self.o_lane.valid, self.o_lane.row, self.o_lane.data),
                                      lane, strict=True)),
        ]


class Lane(NamedTuple):
    """One preload lane entry (`weight_lane_layout`'s fields as values)."""

    valid: Value
    row: Value
    data: Value


class Passthrough(NamedTuple):
    """The registered activation (with its flag bit) and preload lane of one PE."""

    a: Signal
    flag: Signal
    lane: Lane


def emit_passthrough(m: Module, name: str, flag_name: str, *, a: Value, flag: Value,
                     lane: Lane) -> Passthrough:  # fmt: skip
    """Write the registers that pass `a` and its `flag` (named `flag_name`) east and `lane`
    south, one cycle later, into `m`; return them."""
    out = Passthrough(
        a=Signal(a.shape(), name=f"{name}_a"),
        flag=Signal(name=f"{name}_{flag_name}"),
        lane=Lane(Signal(name=f"{name}_lane_valid"),
                  Signal(lane.row.shape(), name=f"{name}_lane_row"),
                  Signal(lane.data.shape(), name=f"{name}_lane_data")),
    )  # fmt: skip
    m.d.sync += [out.a.eq(a), out.flag.eq(flag),
                 *(o.eq(i) for o, i in zip(out.lane, lane, strict=True))]  # fmt: skip
    return out


def emit_weights(m: Module, name: str, *, row: int, weight_width: int, flip: Value,
                 lane: Lane) -> Value:  # fmt: skip
    """Write a double-buffered weight into `m` and return the weight that multiplies this
    cycle: the shadow one when `flip` (which then makes it the active one), else the active
    one. A valid `lane` entry addressed to `row` loads the shadow weight."""
    active = Signal(signed(weight_width), name=f"{name}_active")
    shadow = Signal(signed(weight_width), name=f"{name}_shadow")
    with m.If(flip):
        m.d.sync += active.eq(shadow)
    with m.If(lane.valid & (lane.row == row)):
        m.d.sync += shadow.eq(lane.data)
    return Mux(flip, shadow, active)


def os_registers(name: str, acc_width: int) -> tuple[Signal, Signal]:
    """Return an output-stationary PE's running sum `acc` and its `result` register."""
    return (Signal(signed(acc_width), name=f"{name}_acc"),
            Signal(signed(acc_width), name=f"{name}_result"))  # fmt: skip


def emit_os_sum(m: Module, acc: Signal, result: Signal, *, last: Value, total: Value,
                drain: Value) -> None:  # fmt: skip
    """Write the output-stationary sum into `m`: on `last` the `total` (acc + a * b) goes to
    `result` and `acc` restarts from zero; otherwise `acc` takes `total` and `result` the
    drain chain's `drain`."""
    with m.If(last):
        m.d.sync += [result.eq(total), acc.eq(0)]
    with m.Else():
        m.d.sync += [result.eq(drain), acc.eq(total)]
