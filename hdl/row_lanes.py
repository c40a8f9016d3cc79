"""The row-normalisation unit's lanes (`SoftmaxUnit`): the per-chunk statistics of SOFTMAX and
LAYERNORM, the per-row stages' starts, and the output pipeline both modes share."""

from amaranth.hdl import Module, Mux, Signal, Value, signed
from amaranth.lib import data

from systolic.hdl.layernorm_scalar import LANE_BITS, P_SHIFT
from systolic.hdl.round_shift import COARSE_STEP, clamp_bounds, coarse_shift, fine_round_clamped
from systolic.hdl.row_maximum import emit_row_maximum
from systolic.hdl.shared_multipliers import multiply

__all__ = [
    "DIVIDE", "IDLE", "OUTPUT", "PHASES", "PRODUCT_SHAPES", "STATS", "SUM", "WAIT", "emit_lanes",
]

IDLE, STATS, SUM, DIVIDE, OUTPUT, WAIT = range(6)
"""Phases of a row: STATS is pass 1 (SOFTMAX's maximum, LAYERNORM's S1 and S2), SUM
SOFTMAX's pass 2, DIVIDE the per-row stage, OUTPUT the last pass, WAIT the row's end."""
PHASES = 6
SOFTMAX_SHIFT = 31
"""SOFTMAX's p = rhe(E r / 2^31)."""
P_BITS = 27
"""p's bits: SOFTMAX's p <= 2^17, LAYERNORM's |p| <= 2^24 + 1."""
WINDOW_BITS = 19
"""`coarse_shift`'s window of p * multiplier (out_width + 11, as the output stage's): a
saturated window's floor lies beyond the floor's saturation range [-257, 255]."""
_FINE_BITS = (COARSE_STEP - 1).bit_length()
PRODUCT_SHAPES = {"lane": (17, LANE_BITS + 1), "requant": (P_BITS, 32)}
"""The lanes' multiplications by name, (a width, b width) (`shared_multipliers`): "lane" (c + 3:
E or d times r, d or a) and "requant" (c + 6: p times the multiplier)."""


def _stage_layout(lanes: int) -> data.StructLayout:
    return data.StructLayout({"valid": 1, "phase": range(PHASES), "first": 1, "last": 1,
                              "mask": data.ArrayLayout(1, lanes)})


def emit_lanes(m: Module, unit, flags: Value, base: Value, divided: Value, table, reciprocal,
               scalar) -> None:
    """Add the lanes to `m`: `flags` is the read's registered {valid, phase, lanes, first,
    last} (the row on `unit.spad_data`), `base` the row's base address, `divided` the cycle
    the row's per-row stage is done.

    Pipeline from a read in cycle c: c + 1 the data (the exp table's index; SOFTMAX's
    maximum, `row_maximum.emit_row_maximum`, final at c + 4), c + 2 `looked` (E per lane, or
    LAYERNORM's d = x - in_zero_point), c + 3 the lane products E r, d^2 or d a (modulo 2^51), c + 4 the products minus b (LAYERNORM) and
    the chunk sums, c + 5 p, c + 6 p * multiplier, c + 7 and c + 8 its rounding (the coarse
    and the fine half, `round_shift.coarse_shift` and `fine_round_clamped`), c + 9 the chunk."""
    lanes, instr = len(unit.spad_data), unit.instr
    # The mode through a register loaded every cycle: `layernorm` is held from `start`, and the
    # lanes read it from the first read's data on (start + 2), so the STORE unit's decode of
    # it does not run into the lanes' multiplier operands
    ln = Signal(name="late_layernorm")
    m.d.sync += ln.eq(unit.layernorm)
    x = unit.spad_data
    in_lane = [Signal(name=f"lane{j}_valid") for j in range(lanes)]
    m.d.comb += [valid.eq(j < flags.lanes) for j, valid in enumerate(in_lane)]
    mx = emit_row_maximum(m, flags.valid & (flags.phase == STATS), flags.first, x, in_lane)

    looked = Signal(_stage_layout(lanes), name="looked")
    d = Signal(data.ArrayLayout(signed(9), lanes), name="d")
    m.d.comb += [table.i_index.valid.eq(flags.valid & (flags.phase != STATS) & ~ln),
                 unit.lookup.eq(table.i_index.valid)]
    m.d.sync += [looked.valid.eq(flags.valid), looked.phase.eq(flags.phase),
                 looked.first.eq(flags.first), looked.last.eq(flags.last)]
    for j in range(lanes):
        m.d.comb += table.i_index.payload[j].eq((mx - x[j])[:8])
        m.d.sync += [looked.mask[j].eq(in_lane[j]), d[j].eq(x[j] - instr.in_zero_point)]
    entry = table.o_entry.payload

    # c + 3: one multiplier per lane.
    product = Signal(data.ArrayLayout(LANE_BITS, lanes), name="lane_product")
    multiplied = Signal(_stage_layout(lanes), name="multiplied")
    shared = Signal(signed(LANE_BITS + 1), name="row_operand")  # r, or LAYERNORM's a
    squares = Signal(name="squares")  # LAYERNORM's pass 1: d * d
    m.d.comb += [shared.eq(Mux(ln, scalar.a, reciprocal.quotient)),
                 squares.eq(ln & (looked.phase == STATS))]
    m.d.sync += multiplied.eq(looked)
    for j in range(lanes):
        a = Mux(ln, d[j], entry[j])
        b = Mux(squares, d[j], shared)
        m.d.sync += product[j].eq(multiply(m, unit, "lane", j, a, b)[:LANE_BITS])

    _softmax_sum(m, looked, entry, reciprocal, scalar, ln)
    _layernorm_sums(m, looked, multiplied, d, product, scalar, ln, instr)
    _outputs(m, unit, ln, looked, product, scalar, base, divided)


def _softmax_sum(m, looked, entry, reciprocal, scalar, ln):
    """SOFTMAX's pass 2: S, then the divider (driven by the LAYERNORM stage in that mode)."""
    lanes = len(looked.mask)
    chunk_sum = Signal(16 + max(1, (lanes - 1).bit_length()), name="chunk_sum")
    total = Signal(32, name="row_sum")
    summed = Signal(data.StructLayout({"valid": 1, "last": 1}), name="summed")
    finished = Signal(name="sum_finished")
    divisor, start = Signal(32, name="softmax_divisor"), Signal(name="softmax_divide")
    summing = looked.valid & (looked.phase == SUM)
    m.d.sync += [
        chunk_sum.eq(sum(Mux(looked.mask[j], entry[j], 0) for j in range(lanes))),
        summed.valid.eq(summing), summed.last.eq(summing & looked.last),
        finished.eq(summed.last),
        divisor.eq(total),
        start.eq(finished),
    ]
    with m.If(looked.valid & (looked.phase == STATS)):
        m.d.sync += total.eq(0)
    with m.Elif(summed.valid):
        m.d.sync += total.eq(total + chunk_sum)
    m.d.comb += [
        reciprocal.start.eq(Mux(ln, scalar.div_start, start)),
        reciprocal.divisor.eq(Mux(ln, scalar.div_divisor, divisor)),
        reciprocal.wide.eq(ln),
        scalar.div_pair_valid.eq(reciprocal.pair_valid),
        scalar.div_pair.eq(reciprocal.pair),
    ]


def _layernorm_sums(m, looked, multiplied, d, product, scalar, ln, instr):
    """LAYERNORM's pass 1: S1 and S2 of the valid lanes (c + 4), then the scalar stage."""
    lanes = len(looked.mask)
    extra = max(1, (lanes - 1).bit_length())
    chunk_s1 = Signal(signed(9 + extra), name="chunk_s1")
    late_s1 = Signal(signed(9 + extra), name="chunk_s1_late")
    chunk_s2 = Signal(17 + extra, name="chunk_s2")
    summed = Signal(data.StructLayout({"valid": 1, "first": 1, "last": 1}), name="ln_summed")
    s1, s2 = Signal(signed(25), name="row_s1"), Signal(32, name="row_s2")
    finished = Signal(name="ln_sums_finished")
    m.d.sync += [
        chunk_s1.eq(sum(Mux(looked.mask[j], d[j], 0) for j in range(lanes))),
        late_s1.eq(chunk_s1),
        chunk_s2.eq(sum(Mux(multiplied.mask[j], product[j][:17], 0) for j in range(lanes))),
        summed.valid.eq(multiplied.valid & (multiplied.phase == STATS) & ln),
        summed.first.eq(multiplied.first), summed.last.eq(multiplied.last),
        finished.eq(summed.valid & summed.last),
    ]
    with m.If(summed.valid):
        m.d.sync += [s1.eq(Mux(summed.first, 0, s1) + late_s1),
                     s2.eq(Mux(summed.first, 0, s2) + chunk_s2)]
    m.d.comb += [scalar.start.eq(finished), scalar.s1.eq(s1), scalar.s2.eq(s2),
                 scalar.length.eq(instr.length), scalar.eps.eq(instr.eps)]


def _requantize(m, unit, p, scaled):
    """c + 6: scaled = p * multiplier, registered here or, with `external_requant`, summed from
    the pieces registered outside (the same cycle)."""
    multiplier = unit.instr.multiplier
    if unit.external_requant:
        m.d.comb += unit.o_requant.multiplier.eq(multiplier)
        for j in range(len(p)):
            m.d.comb += [unit.o_requant.p[j].eq(p[j]), scaled[j].eq(unit.i_requant[j])]
        return
    m.d.sync += [scaled[j].eq(multiply(m, unit, "requant", j, p[j], multiplier))
                 for j in range(len(p))]


def _clamp_copies(m, instr):
    """Registered copies of the last stage's parameters, loaded every cycle (`instr` is held
    from the instruction's start, long before its first output): the zero point, hi, lo (or hi
    when lo > hi), and lo - zero point and hi - zero point, which the rounded floor is compared
    with (clamp(v + zero point, lo, hi) without the adder before the comparisons)."""
    clamp = Signal(data.StructLayout({"zero": signed(8), "low": signed(8), "high": signed(8),
                                      "low_rel": signed(9), "high_rel": signed(9)}),
                   name="clamp")
    m.d.sync += [
        clamp.zero.eq(instr.zero_point),
        clamp.low.eq(Mux(instr.lo > instr.hi, instr.hi, instr.lo)),
        clamp.high.eq(instr.hi),
        clamp.low_rel.eq(instr.lo - instr.zero_point),
        clamp.high_rel.eq(instr.hi - instr.zero_point),
    ]
    return clamp


def _outputs(m, unit, ln, looked, product, scalar, base, divided):
    """The output pass: p, the requantization and the chunk's address and byte count."""
    lanes, instr = len(looked.mask), unit.instr
    stage_valid = [Signal(name=f"out_valid{k}") for k in range(3, 9)]
    m.d.sync += [stage_valid[0].eq(looked.valid & (looked.phase == OUTPUT)),
                 *(stage_valid[k].eq(stage_valid[k - 1]) for k in range(1, 6))]
    diff = Signal(data.ArrayLayout(LANE_BITS, lanes), name="lane_difference")
    p = Signal(data.ArrayLayout(signed(P_BITS), lanes), name="p")
    scaled = Signal(data.ArrayLayout(signed(P_BITS + 32), lanes), name="p_times_multiplier")
    coarse = Signal(data.StructLayout({"window": data.ArrayLayout(signed(WINDOW_BITS), lanes),
                                       "sticky": data.ArrayLayout(1, lanes)}),
                    name="coarse")
    rounded = Signal(data.StructLayout({"floor": data.ArrayLayout(signed(10), lanes),
                                        "round_up": data.ArrayLayout(1, lanes)}),
                     name="rounded")
    out = unit.o_chunk.payload
    amount = Signal(6, name="requant_amount")  # loaded every cycle: instr is held from start
    m.d.sync += amount.eq((instr.shift + 31).as_unsigned()[:6])
    bounds = clamp_bounds(m, amount[:_FINE_BITS], -257, 255, name="requant_bounds")
    clamp = _clamp_copies(m, instr)
    for j in range(lanes):
        value = diff[j]
        ln_floor = value[P_SHIFT:].as_signed()
        ln_up = value[P_SHIFT - 1] & (value[:P_SHIFT - 1].any() | ln_floor[0])
        sm_floor = value[SOFTMAX_SHIFT:]
        sm_up = value[SOFTMAX_SHIFT - 1] & (value[:SOFTMAX_SHIFT - 1].any() | sm_floor[0])
        window, sticky = coarse_shift(scaled[j], amount[_FINE_BITS:], WINDOW_BITS)
        q_floor, q_up = fine_round_clamped(coarse.window[j], coarse.sticky[j],
                                           amount[:_FINE_BITS], bounds, -257, 255)
        level = rounded.floor[j] + rounded.round_up[j]  # compared beside the zero point's adder
        m.d.sync += [
            diff[j].eq(product[j] - Mux(ln, scalar.b, 0)),
            p[j].eq(Mux(ln, ln_floor + ln_up, sm_floor + sm_up)),
            coarse.window[j].eq(window),
            coarse.sticky[j].eq(sticky),
            rounded.floor[j].eq(q_floor),
            rounded.round_up[j].eq(q_up),
            out.data[j].eq(Mux(level < clamp.low_rel, clamp.low, Mux(
                level > clamp.high_rel, clamp.high, level + clamp.zero))),
        ]
    m.d.sync += unit.o_chunk.valid.eq(stage_valid[5])
    _requantize(m, unit, p, scaled)

    # The chunk's place in the row's segment.
    addr = Signal(32, name="chunk_addr")
    left = Signal(17, name="row_bytes_left")
    m.d.comb += [out.addr.eq(addr), out.bytes.eq(Mux(left < lanes, left, lanes))]
    with m.If(divided):
        m.d.sync += [addr.eq(base), left.eq(instr.length)]
    with m.Elif(unit.o_chunk.valid):
        m.d.sync += [addr.eq(addr + lanes), left.eq(left - lanes)]
