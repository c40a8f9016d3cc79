"""Independent oracles for the "systolic" fused integer operators: plain Python loops over
Python integers and exact rational rounding (fractions.Fraction), sharing no code with the
reference (no im2col, no object-array shifts)."""

import itertools
from fractions import Fraction

import numpy as np

from systolic.ir import Attrs
from systolic.isa.requant import quantize_multiplier
from systolic.reference.ops.op_systolic_qadd import QAdd
from systolic.reference.ops.op_systolic_qaveragepool import QAveragePool
from systolic.reference.ops.op_systolic_qconv import QConv
from systolic.reference.ops.op_systolic_qmatmul import QMatMul
from systolic.reference.ops.op_systolic_qmaxpool import QMaxPool

CLASSES = {"QConv": QConv, "QMatMul": QMatMul, "QAdd": QAdd, "QMaxPool": QMaxPool,
           "QAveragePool": QAveragePool}


def run(op_type, attrs, *inputs):
    """Run the reference operator `op_type` with `attrs` on numpy inputs."""
    op = CLASSES[op_type](Attrs(attrs), 1, "node")
    return op.run(list(inputs))[0]


def round_even(value: Fraction) -> int:
    """Round an exact rational half to even."""
    floor = value.numerator // value.denominator
    rest = value - floor
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2 == 1):
        return floor + 1
    return floor


def requant(acc: int, m: int, s: int, zp: int, lo: int, hi: int) -> int:
    """clamp(round_half_to_even(acc * m / 2**(31 + s)) + zp, lo, hi), exactly."""
    return min(max(round_even(Fraction(acc * m, 2 ** (31 + s))) + zp, lo), hi)


def conv(x, w, b, *, strides, pads, dilations, group, x_zp, mult, shift, y_zp, lo, hi, dtype):
    """Naive N-D convolution with padding value x_zp, then the output stage."""
    n, _, *spatial = x.shape
    m, cg, *kernel = w.shape
    rank = len(spatial)
    out = [(spatial[i] + pads[i] + pads[rank + i] - (kernel[i] - 1) * dilations[i] - 1)
           // strides[i] + 1 for i in range(rank)]
    y = np.zeros((n, m, *out), dtype)
    for batch, oc in itertools.product(range(n), range(m)):
        g = oc // (m // group)
        for pos in itertools.product(*(range(o) for o in out)):
            acc = int(b[oc]) if b is not None else 0
            for ic, kpos in itertools.product(range(cg), itertools.product(*map(range, kernel))):
                idx = [pos[i] * strides[i] - pads[i] + kpos[i] * dilations[i]
                       for i in range(rank)]
                inside = all(0 <= idx[i] < spatial[i] for i in range(rank))
                value = int(x[(batch, g * cg + ic, *idx)]) if inside else x_zp
                acc += (value - x_zp) * int(w[(oc, ic, *kpos)])
            y[(batch, oc, *pos)] = requant(acc, mult[oc], shift[oc], y_zp, lo, hi)
    return y


def matmul(a, b, bias, *, a_zp, mult, shift, y_zp, lo, hi, dtype):
    """Naive [..., K] x [K, N] product, then the output stage per column."""
    lead = a.shape[:-1]
    k, n = b.shape
    y = np.zeros((*lead, n), dtype)
    for pos in itertools.product(*(range(d) for d in lead)):
        for col in range(n):
            acc = int(bias[col]) if bias is not None else 0
            acc += sum((int(a[(*pos, i)]) - a_zp) * int(b[i, col]) for i in range(k))
            y[(*pos, col)] = requant(acc, mult[col], shift[col], y_zp, lo, hi)
    return y


def add(a, b, *, a_zp, b_zp, ma, mb, shift, y_zp, lo, hi, dtype):
    """Element-wise (a - a_zp) * ma + (b - b_zp) * mb, rounded once."""
    y = np.zeros(a.shape, dtype)
    for pos in itertools.product(*(range(d) for d in a.shape)):
        total = (int(a[pos]) - a_zp) * ma + (int(b[pos]) - b_zp) * mb
        y[pos] = requant(total, 1, shift, y_zp, lo, hi)
    return y


def pool_cells(x, kernel, strides, pads, batch, channel, pos):
    """Yield (inside, value) for each cell of one pooling window."""
    rank = len(kernel)
    spatial = x.shape[2:]
    for kpos in itertools.product(*map(range, kernel)):
        idx = [pos[i] * strides[i] - pads[i] + kpos[i] for i in range(rank)]
        inside = all(0 <= idx[i] < spatial[i] for i in range(rank))
        yield inside, (int(x[(batch, channel, *idx)]) if inside else None)


def out_shape(x, kernel, strides, pads):
    rank = len(kernel)
    return [(x.shape[2 + i] + pads[i] + pads[rank + i] - kernel[i]) // strides[i] + 1
            for i in range(rank)]


def max_pool(x, *, kernel, strides, pads, lo, hi):
    """Naive max pooling over input cells only, then the clamp."""
    n, c = x.shape[:2]
    out = out_shape(x, kernel, strides, pads)
    y = np.zeros((n, c, *out), x.dtype)
    for batch, channel in itertools.product(range(n), range(c)):
        for pos in itertools.product(*(range(o) for o in out)):
            best = max(v for inside, v in pool_cells(x, kernel, strides, pads, batch, channel,
                                                     pos) if inside)
            y[(batch, channel, *pos)] = min(max(best, lo), hi)
    return y


def average_pool(x, *, kernel, strides, pads, count_include_pad, x_zp, scale, y_zp, lo, hi,
                 dtype):
    """Naive average: exact sum of (x - x_zp), times the contract's (M, s) of
    float32(scale) / count (golden `quantize_multiplier`), rounded once, exactly."""
    n, c = x.shape[:2]
    out = out_shape(x, kernel, strides, pads)
    real = float(np.float32(scale))
    y = np.zeros((n, c, *out), dtype)
    for batch, channel in itertools.product(range(n), range(c)):
        for pos in itertools.product(*(range(o) for o in out)):
            cells = list(pool_cells(x, kernel, strides, pads, batch, channel, pos))
            total = sum(v - x_zp for inside, v in cells if inside)
            count = len(cells) if count_include_pad else sum(inside for inside, _ in cells)
            m, shift = quantize_multiplier(real / count)
            y[(batch, channel, *pos)] = requant(total, m, shift, y_zp, lo, hi)
    return y
