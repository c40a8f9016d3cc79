"""Multipliers shared by two datapaths that are never busy at once (`share_multipliers`).

The STORE unit runs one instruction at a time and each instruction leaves its datapath empty,
so the vector unit (POOL, ADD) and the row-normalisation unit (SOFTMAX, LAYERNORM) can use the
same DSP blocks. A datapath names its multiplications (`name`: (a_width, b_width)); for
those among its `external_products` (a collection of names) it sends the operands on
`o_operands` and takes each product, in the same cycle, from `i_products` (`multiply`); its
registers load the product as they loaded `a * b`, so its timing is unchanged. `share_multipliers` pairs one multiplication of each datapath in
one multiplier as wide as the wider of the two.
"""

from amaranth.hdl import Module, Mux, Value, signed
from amaranth.lib import data

__all__ = ["multiply", "operands_layout", "products_layout", "share_multipliers"]


def operands_layout(shapes: dict[str, tuple[int, int]], lanes: int) -> data.ArrayLayout:
    """Per lane, per named multiplication: its signed operands {a, b}."""
    return data.ArrayLayout(data.StructLayout({
        name: data.StructLayout({"a": signed(a), "b": signed(b)})
        for name, (a, b) in shapes.items()}), lanes)


def products_layout(shapes: dict[str, tuple[int, int]], lanes: int) -> data.ArrayLayout:
    """Per lane, per named multiplication: its exact signed product (a_width + b_width bits)."""
    return data.ArrayLayout(data.StructLayout({
        name: signed(a + b) for name, (a, b) in shapes.items()}), lanes)


def multiply(m: Module, unit, name: str, lane: int, a: Value, b: Value) -> Value:
    """Return a * b: computed here, or, when `name` is among `unit.external_products`, the
    product of its `o_operands` (driven here with a and b) returned on `i_products`."""
    if name not in unit.external_products:
        return a * b
    operands = unit.o_operands[lane][name]
    m.d.comb += [operands.a.eq(a), operands.b.eq(b)]
    return unit.i_products[lane][name]


def share_multipliers(m: Module, first, second, pairs: dict[str, str], use_second: Value,
                      lanes: int) -> None:
    """Compute, per lane, each multiplication `pairs` names (first's name: second's name) in
    one multiplier: second's operands while `use_second`, else first's; both get the product
    (truncated to their product's width). Both units have external products."""
    for lane in range(lanes):
        for first_name, second_name in pairs.items():
            one = first.o_operands[lane][first_name]
            two = second.o_operands[lane][second_name]
            result = Mux(use_second, two.a, one.a) * Mux(use_second, two.b, one.b)
            m.d.comb += [first.i_products[lane][first_name].eq(result),
                         second.i_products[lane][second_name].eq(result)]
