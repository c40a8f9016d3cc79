"""Wide signed products in DSP-sized pieces: `partial_products` and `sum_partials`.

An FPGA's DSP block multiplies 18 x 18 signed bits (ECP5's MULT18X18D; wider blocks take
18-bit pieces as well). A wider product written as one `*` is split by the synthesis tool into
such blocks whose partial products are summed by carry chains in the same cycle, a path far
longer than one block. Here the operands are split into limbs explicitly, so that a pipeline
can register every limb product (each one DSP block) and sum them in the next stage.
"""

from amaranth.hdl import Cat, Const, Value

__all__ = ["LIMB_BITS", "limbs", "partial_products", "sum_partials"]

LIMB_BITS = 17
"""Unsigned bits of every limb but the top one: a limb zero-extended to 18 signed bits fits
an 18 x 18 signed multiplier, and the top limb (signed, at most 18 bits) does too."""


def limbs(value: Value) -> list[tuple[Value, int]]:
    """Split signed `value` into (limb, offset) with value == sum(limb * 2**offset).

    Every limb but the last is `value`'s next LIMB_BITS bits zero-extended to a signed
    LIMB_BITS + 1-bit value (non-negative); the last is the remaining top bits, signed, of
    1 to LIMB_BITS + 1 bits (a value of up to LIMB_BITS + 1 bits is one signed limb).
    """
    width = len(value)
    pieces, offset = [], 0
    while width - offset > LIMB_BITS + 1:
        low = Cat(value[offset:offset + LIMB_BITS], Const(0, 1)).as_signed()
        pieces.append((low, offset))
        offset += LIMB_BITS
    pieces.append((value[offset:].as_signed(), offset))
    return pieces


def partial_products(a: Value, b: Value) -> list[tuple[Value, int]]:
    """Return (product, offset) pairs, one per limb pair, with a * b == sum(product * 2**offset).

    `a` and `b` are signed; each product is one signed multiplication of at most 18 x 18 bits
    (one DSP block). Register them, then add them with `sum_partials`.
    """
    return [(x * y, i + j) for x, i in limbs(a) for y, j in limbs(b)]


def sum_partials(products: list[Value], offsets: list[int], width: int) -> Value:
    """Return sum(product * 2**offset) as a signed `width`-bit value (an adder tree of depth
    ceil(log2(len(products)))). `width` must hold the exact sum (len(a) + len(b) for a * b)."""
    terms = [(p.as_signed() << k) for p, k in zip(products, offsets, strict=True)]
    while len(terms) > 1:
        pairs = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + terms[len(pairs) * 2:]
    return terms[0][:width].as_signed()
