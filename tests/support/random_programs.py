"""Random programs and instructions for the tests and the benchmarks (not part of the package).

`random_program(config, rng)` builds what a mapper emits for a few small layers, with every
instruction inside the configuration's limits: tiled GEMMs and im2col convolutions with
double-buffered LOADs of activations and weights, K chunks accumulated in a double-buffered
accumulator tile, STOREs through params rows, max and average POOLs, residual ADDs and COPYs
with strided row patterns. With `activation=True` the programs also use the activation unit
and ADD's modes (issue 13): TABLE loads of random tables, STOREs and COPYs with `lut`, ADDs
with `mul` and `b_broadcast` (the 8-bit-only ones when input_width is 8); without it, a seed
gives the same program as before these existed. With `softmax=True` (issue 13, second step)
they also hold SOFTMAX layers (a random exp table LOADed and made current by TABLE `wide`,
rows of random length LOADed, SOFTMAX; input_width 8 only) and whole GEMMs written with STORE
`raw`; without it, a seed gives the same program as before. With `layernorm=True` (issue 13,
session 8) they also hold LAYERNORM layers (rows of random length LOADed, wide, narrow or
constant, random zero point and eps, LAYERNORM; input_width 8 only), again without changing
the programs of a seed when it is off. `synthetic_program(config,
instructions)` repeats such layers until the program holds about `instructions` instructions
(for speed measurements). Buffers are placed at random byte offsets so that every bus alignment occurs; the returned memory
image holds random activations, weights and valid params rows.

`random_instruction(cls, rng)` returns one instruction of class `cls` whose fields span their
whole encodable ranges (for the encoding and native-engine tests).

The tests import this module relatively (`from ...support.random_programs import ...`); a
bench script imports `bench/repository_root.py` first, which puts the repository root on
`sys.path`, then `tests.support.random_programs`.
"""

import dataclasses
import enum
from collections.abc import Callable
from typing import Any

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import (
    DERIVED_FIELDS,
    Add,
    Compute,
    ComputeOS,
    Copy,
    Halt,
    Instruction,
    LayerNorm,
    Load,
    LoadTarget,
    Pool,
    PoolMode,
    Preload,
    Softmax,
    Store,
    Table,
)
from systolic.isa.memories import Memory, depth
from systolic.isa.params import pack_params
from systolic.isa.program import Program
from systolic.isa.softmax import softmax_row_chunks
from systolic.isa.store import RAW_BYTES
from systolic.isa.table import exp_table_rows, table_rows

__all__ = ["SyntheticProgram", "random_instruction", "random_program", "synthetic_program"]


@dataclasses.dataclass(frozen=True)
class SyntheticProgram:
    """A program and the external memory image it runs on."""

    program: Program
    memory: bytearray


class _Builder:
    """Bump allocator over external memory plus the instruction list of one program."""

    def __init__(self, config: ArrayConfig, rng: np.random.Generator, *,
                 scale: int = 1, activation: bool = False, softmax: bool = False,
                 layernorm: bool = False) -> None:
        self.config = config
        self.scale = scale  # layer sizes grow with it (1: tiny layers for RTL simulation)
        self.activation = activation  # issue 13's instructions and flags (off: older programs)
        self.int8 = activation and config.input_width == 8  # (TABLE, COPY lut, ADD mul)
        self.softmax = softmax  # SOFTMAX, TABLE wide and STORE raw (off: older programs)
        self.layernorm = layernorm  # LAYERNORM (off: older programs)
        self.rng = rng
        self.ob = config.operand_bytes
        self.top = int(rng.integers(0, 64))
        self.image: list[tuple[int, bytes]] = []
        self.instrs: list[Instruction] = []
        self.spad_in = depth(config, Memory.SPAD_IN)
        self.spad_wt = depth(config, Memory.SPAD_WT)
        self.acc = config.acc_depth
        self.params_used = 0

    def alloc(self, size: int, data: bytes | None = None) -> int:
        """Reserve `size` bytes (plus slack for over-reads) at a random alignment."""
        address = self.top + int(self.rng.integers(0, 2 * self.config.bus_bytes))
        if data is None:
            data = self.rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        self.image.append((address, data))
        self.top = address + size + 4 * self.config.dim * self.ob
        return address

    def params_row(self) -> int:
        """Place one params row with valid multipliers and shifts; return its params row."""
        cols = self.config.cols
        bias = self.rng.integers(-3000, 3000, cols)
        multiplier = self.rng.integers(2**30, 2**31, cols)
        shift = self.rng.integers(-2, 12, cols)
        ext = self.alloc(9 * cols, pack_params(bias, multiplier, shift))
        row = self.params_used % 512
        self.params_used += 1
        self.instrs.append(Load.params(row=row, count=1, ext=ext, row_stride=9 * cols))
        return row

    def clamp(self) -> dict[str, int]:
        zero_point = int(self.rng.integers(-20, 20))
        lo = int(self.rng.integers(-128, zero_point + 1))
        hi = int(self.rng.integers(zero_point, 128))
        return {"zero_point": zero_point, "lo": lo, "hi": hi}

    def randint(self, low: int, high: int) -> int:
        """Return a random integer in [low, high] (inclusive)."""
        return int(self.rng.integers(low, max(low, high), endpoint=True))

    def flag(self, allowed: bool) -> bool:
        """Return a random flag when `allowed` (drawing from the generator only then)."""
        return allowed and bool(self.rng.integers(2))


def _gemm(b: _Builder) -> None:
    """A tiled GEMM (or an im2col convolution) with double-buffered operands."""
    config, rng, ob = b.config, b.rng, b.ob
    rows, cols, dim = config.rows, config.cols, config.dim
    ws = config.dataflow is Dataflow.WS or (  # BOTH: either dataflow, per GEMM
        config.dataflow is Dataflow.BOTH and b.flag(True))
    conv = bool(rng.integers(2))
    if conv:  # 2-D convolution over an (H, W, C) input: K = kh * kw * C
        channels, kh, kw = b.randint(1, 5 * b.scale), b.randint(1, 2), b.randint(1, 3)
        height, width = kh + b.randint(0, 3 * b.scale), kw + b.randint(0, 3 * b.scale)
        oh, ow = height - kh + 1, width - kw + 1
        m_total, k_total = oh * ow, kh * kw * channels
        a_ext = b.alloc(height * width * channels * ob)
    else:
        m_total = b.randint(1, (3 * rows + 2) * b.scale)
        k_total = b.randint(1, 3 * dim * b.scale)
        a_ext = b.alloc(m_total * k_total * ob)
    n_total = b.randint(1, 2 * cols * b.scale)
    w_ext = b.alloc(k_total * n_total * ob)
    raw = b.flag(b.softmax)  # (int32 outputs: 4-byte elements)
    out_bytes = RAW_BYTES if raw else ob
    y_ext = b.alloc(m_total * n_total * out_bytes)
    param_row = b.params_row()
    acc_tile = min(b.acc // 2, rows if not ws else b.randint(1, (2 * rows + 1) * b.scale))
    if ws:
        k_step = rows
        m_tile = min(acc_tile, b.spad_in // 2)
    else:
        k_step = dim * b.randint(1, 3)
        m_tile = min(rows, acc_tile, b.spad_in // (2 * -(-k_step // dim)))
        k_step = min(k_step, b.spad_wt // 2)
    k_step = max(1, min(k_step, b.spad_wt // 2))

    if conv:  # tiles of one output row's pixels, or of whole output rows (n0 = ow)
        per_tile = max(1, m_tile // ow)
        if m_tile >= ow:
            tiles = [(m0, min(per_tile * ow, m_total - m0))
                     for m0 in range(0, m_total, per_tile * ow)]
        else:
            tiles = [(oy * ow + ox, min(m_tile, ow - ox))
                     for oy in range(oh) for ox in range(0, ow, m_tile)]
    else:
        tiles = [(m0, min(m_tile, m_total - m0)) for m0 in range(0, m_total, m_tile)]

    def a_rows(row: int, m0: int, m: int, k0: int, k: int, chunks: int) -> Load:
        if conv:
            oy, ox = divmod(m0, ow)
            return Load(LoadTarget.SPAD_IN, row, m, a_ext + (oy * width + ox) * channels * ob,
                        n0=ow if m_tile >= ow else 1, row_stride0=channels * ob,
                        row_stride1=(width if m_tile >= ow else 1) * channels * ob, k0=k0,
                        length=k, run=channels, n_mid=kw, stride_mid=channels * ob,
                        stride_outer=width * channels * ob)
        if chunks == 1:
            return Load.dense(LoadTarget.SPAD_IN, row, m, a_ext + (m0 * k_total + k0) * ob,
                              k_total * ob, k)
        return Load(LoadTarget.SPAD_IN, row, m * chunks, a_ext + (m0 * k_total + k0) * ob,
                    n0=m, row_stride0=k_total * ob, row_stride1=dim * ob, k0=0, length=dim,
                    run=dim, n_mid=1)

    tile = 0
    for n0 in range(0, n_total, cols):
        n = min(cols, n_total - n0)
        for m0, m in tiles:
            acc_row = (tile % 2) * acc_tile
            tile += 1
            for chunk, k0 in enumerate(range(0, k_total, k_step)):
                k = min(k_step, k_total - k0)
                wt_row = (chunk % 2) * k_step
                b.instrs.append(Load.dense(LoadTarget.SPAD_WT, wt_row, k,
                                           w_ext + (k0 * n_total + n0) * ob, n_total * ob, n))
                if ws:
                    in_row = (chunk % 2) * m_tile
                    b.instrs.append(a_rows(in_row, m0, m, k0, k, 1))
                    b.instrs.append(Preload(row=wt_row, k=k, n=n))
                    split = b.randint(1, m) if m > 1 and rng.integers(3) == 0 else m
                    b.instrs.append(Compute(in_row=in_row, m=split, acc_row=acc_row,
                                            accumulate=chunk > 0))
                    if split < m:
                        b.instrs.append(Compute(in_row=in_row + split, m=m - split,
                                                acc_row=acc_row + split, accumulate=chunk > 0))
                else:
                    chunks = -(-k // dim)
                    in_row = (chunk % 2) * m_tile * chunks
                    if conv:
                        for c in range(chunks):
                            kc = min(dim, k - c * dim)
                            b.instrs.append(a_rows(in_row + c * m, m0, m, k0 + c * dim, kc, 1))
                    else:
                        b.instrs.append(a_rows(in_row, m0, m, k0, k, chunks))
                    b.instrs.append(ComputeOS(in_row=in_row, m=m, n=n, k=k, wt_row=wt_row,
                                              acc_row=acc_row,
                                              a_stride=m if chunks > 1 else 0,
                                              accumulate=chunk > 0))
            clamp = {"zero_point": 0, "lo": 0, "hi": 0} if raw else b.clamp()
            b.instrs.append(Store(acc_row=acc_row, m=m, n=n, param_row=param_row,
                                  ext=y_ext + (m0 * n_total + n0) * out_bytes, n0=1,
                                  row_stride1=n_total * out_bytes, flip_sign=False, **clamp,
                                  lut=not raw and b.flag(b.activation), raw=raw))


def _vector_op(b: _Builder) -> None:
    """A POOL, ADD or COPY on rows LOADed from an NHWC tensor."""
    config, rng, ob = b.config, b.rng, b.ob
    kind = int(rng.integers(3))
    lanes = b.randint(1, config.dim)
    channels = lanes + b.randint(0, 2)
    if kind == 0:
        h, w = b.randint(1, 4), b.randint(1, 4)
        while h * w > b.spad_in:
            h, w = max(1, h - 1), max(1, w - 1)
        src = b.alloc(h * w * channels * ob)
        b.instrs.append(Load.dense(LoadTarget.SPAD_IN, 0, h * w, src, channels * ob, lanes))
        kh, kw, sh, sw = b.randint(1, 3), b.randint(1, 3), b.randint(1, 2), b.randint(1, 2)
        pad_top, pad_left = b.randint(0, kh - 1), b.randint(0, kw - 1)
        oh = (h - 1 + pad_top) // sh + 1
        ow = (w - 1 + pad_left) // sw + 1
        dst = b.alloc(oh * ow * channels * ob)
        avg = bool(rng.integers(2))
        scaled = {"multiplier": int(rng.integers(2**29, 2**31)), "shift": b.randint(0, 4),
                  "zp_in": b.randint(-10, 10), "zp_out": b.randint(-10, 10)}
        clamp = b.clamp()
        b.instrs.append(Pool(mode=PoolMode.AVG if avg else PoolMode.MAX, in_row=0, lanes=lanes,
                             h=h, w=w, kh=kh, kw=kw, sh=sh, sw=sw, pad_top=pad_top,
                             pad_left=pad_left, oh=oh, ow=ow, lo=clamp["lo"], hi=clamp["hi"],
                             ext=dst, n0=ow, row_stride0=channels * ob,
                             row_stride1=ow * channels * ob,
                             multiplier=scaled["multiplier"] if avg else 0,
                             shift=scaled["shift"] if avg else 0,
                             zp_in=scaled["zp_in"] if avg else 0,
                             zp_out=scaled["zp_out"] if avg else 0))
        return
    m = b.randint(1, min(12, b.spad_in // 2))
    src = b.alloc(m * channels * ob)
    b.instrs.append(Load.dense(LoadTarget.SPAD_IN, 0, m, src, channels * ob, lanes))
    n0 = b.randint(1, m)
    dst = b.alloc(3 * m * channels * ob)
    row_stride1 = (n0 + b.randint(0, 2)) * channels * ob
    if kind == 1:
        mul, broadcast = b.flag(b.int8), b.flag(b.activation)
        b_rows = 1 if broadcast else m
        other = b.alloc(b_rows * channels * ob)
        b_row = b.randint(m, b.spad_in - b_rows)
        b.instrs.append(Load.dense(LoadTarget.SPAD_IN, b_row, b_rows, other, channels * ob,
                                   lanes))
        clamp = b.clamp()
        multiplier_a = int(rng.integers(2**29, 2**31))
        multiplier_b = int(rng.integers(-(2**31), 2**31))
        if mul:  # (a product of two 9-bit differences: a smaller real scale)
            multiplier_a, multiplier_b = multiplier_a * (1 - 2 * b.randint(0, 1)), 0
        b.instrs.append(Add(a_row=0, b_row=b_row, m=m, lanes=lanes,
                            multiplier_a=multiplier_a, multiplier_b=multiplier_b,
                            shift=b.randint(0, 4) + (b.randint(4, 8) if mul else 0),
                            zp_a=b.randint(-5, 5), zp_b=b.randint(-5, 5),
                            zp_out=clamp["zero_point"], lo=clamp["lo"], hi=clamp["hi"],
                            ext=dst, n0=n0, row_stride0=channels * ob, row_stride1=row_stride1,
                            mul=mul, b_broadcast=broadcast))
    else:
        b.instrs.append(Copy(in_row=0, m=m, lanes=lanes, ext=dst, n0=n0,
                             row_stride0=channels * ob, row_stride1=row_stride1,
                             lut=b.flag(b.int8)))


def _table(b: _Builder) -> None:
    """A random activation table LOADed into spad_in rows and made current by TABLE (8-bit
    activations only; else nothing)."""
    rows = table_rows(b.config)
    if not b.int8 or rows > b.spad_in:
        return
    row_bytes = b.config.dim * b.ob
    src = b.alloc(rows * row_bytes)
    row = b.randint(0, b.spad_in - rows)
    b.instrs.append(Load.dense(LoadTarget.SPAD_IN, row, rows, src, row_bytes, b.config.dim))
    b.instrs.append(Table(row=row))


def _softmax(b: _Builder) -> None:
    """A random exp table LOADed and made current by TABLE wide, then SOFTMAX over `m` rows
    of random length LOADed as ceil(length / dim) spad_in rows each (8-bit activations only;
    else nothing)."""
    config, ob, dim = b.config, b.ob, b.config.dim
    table = exp_table_rows(config)
    if config.input_width != 8 or table > b.spad_in:
        return
    src = b.alloc(table * dim * ob)
    row = b.randint(0, b.spad_in - table)
    b.instrs.append(Load.dense(LoadTarget.SPAD_IN, row, table, src, dim * ob, dim))
    b.instrs.append(Table(row=row, wide=True))
    length = b.randint(1, 3 * dim)
    chunks = softmax_row_chunks(length, config)
    m = b.randint(1, min(4, b.spad_in // chunks))
    x = b.alloc(m * chunks * dim * ob)
    in_row = b.randint(0, b.spad_in - m * chunks)
    b.instrs.append(Load.dense(LoadTarget.SPAD_IN, in_row, m * chunks, x, dim * ob, dim))
    row_stride1 = (length + b.randint(0, 2)) * ob
    dst = b.alloc(m * row_stride1 + length * ob)
    b.instrs.append(Softmax(in_row=in_row, m=m, length=length,
                            multiplier=int(b.rng.integers(2**29, 2**31)),
                            shift=b.randint(3, 8), **b.clamp(), ext=dst,
                            row_stride1=row_stride1, flip_sign=b.flag(ob == 1)))


def _layernorm_rows(b: _Builder, rows: int, length: int) -> bytes:
    """`rows` spad_in rows of int8 values for LAYERNORM: uniform, narrow (a few values around a
    random centre) or constant, the lanes beyond `length` of each tensor row random."""
    dim, ob = b.config.dim, b.ob
    chunks = softmax_row_chunks(length, b.config)
    data = b.rng.integers(-128, 128, (rows // chunks, chunks * dim))
    for row in data:
        kind, centre = b.randint(0, 2), b.randint(-128, 127)
        if kind:  # 1: narrow, 2: constant
            spread = 2 if kind == 1 else 0
            row[:length] = np.clip(centre + b.rng.integers(-spread, spread + 1, length), -128, 127)
    values = data.astype(np.int64).reshape(-1)
    if ob == 1:
        return values.astype(np.int8).tobytes()
    return values.astype("<i2").tobytes()


def _layernorm(b: _Builder) -> None:
    """LAYERNORM over `m` rows of random length LOADed as ceil(length / dim) spad_in rows each,
    random in_zero_point and eps (0, small or up to 2^32 - 1), an output stage that keeps most
    outputs unclamped (8-bit activations only; else nothing)."""
    config, ob, dim = b.config, b.ob, b.config.dim
    if config.input_width != 8:
        return
    length = b.randint(1, 3 * dim)
    chunks = softmax_row_chunks(length, config)
    if chunks > b.spad_in:
        return
    m = b.randint(1, min(4, b.spad_in // chunks))
    x = b.alloc(m * chunks * dim * ob, _layernorm_rows(b, m * chunks, length))
    in_row = b.randint(0, b.spad_in - m * chunks)
    b.instrs.append(Load.dense(LoadTarget.SPAD_IN, in_row, m * chunks, x, dim * ob, dim))
    row_stride1 = (length + b.randint(0, 2)) * ob
    dst = b.alloc(m * row_stride1 + length * ob)
    eps = (0, b.randint(1, 1000), int(b.rng.integers(0, 2**32)))[b.randint(0, 2)]
    b.instrs.append(LayerNorm(in_row=in_row, m=m, length=length, in_zero_point=b.randint(-128, 127),
                              eps=eps, multiplier=int(b.rng.integers(2**29, 2**31)),
                              shift=b.randint(8, 14), **b.clamp(), ext=dst,
                              row_stride1=row_stride1, flip_sign=b.flag(ob == 1)))


_LAYERS: tuple[Callable[[_Builder], None], ...] = (_gemm, _gemm, _vector_op)
_ACTIVATION_LAYERS: tuple[Callable[[_Builder], None], ...] = (*_LAYERS, _table)


def _finish(b: _Builder) -> SyntheticProgram:
    b.instrs.append(Halt())
    program = Program(b.config, tuple(b.instrs))
    memory = bytearray(b.top + 64)
    for address, data in b.image:
        memory[address : address + len(data)] = data
    return SyntheticProgram(program, memory)


def _add_layer(builder: _Builder) -> None:
    """Append one random layer (a TABLE load too, with `activation`; a SOFTMAX too, with
    `softmax`; a LAYERNORM too, with `layernorm`)."""
    choices = _ACTIVATION_LAYERS if builder.activation else _LAYERS
    if builder.softmax:
        choices = (*choices, _softmax)
    if builder.layernorm:
        choices = (*choices, _layernorm)
    choices[int(builder.rng.integers(len(choices)))](builder)


def random_program(config: ArrayConfig, rng: np.random.Generator, *,
                   layers: int = 2, activation: bool = False, softmax: bool = False,
                   layernorm: bool = False) -> SyntheticProgram:
    """Return a program of `layers` random layers (GEMM, convolution, POOL/ADD/COPY, and with
    `activation` a TABLE load, plus the `lut`, `mul` and `b_broadcast` flags; with `softmax`
    a SOFTMAX layer and STORE `raw`; with `layernorm` a LAYERNORM layer)."""
    builder = _Builder(config, rng, activation=activation, softmax=softmax, layernorm=layernorm)
    for _ in range(layers):
        _add_layer(builder)
    return _finish(builder)


def synthetic_program(config: ArrayConfig, instructions: int, *, seed: int = 0,
                      scale: int = 4, activation: bool = False,
                      softmax: bool = False, layernorm: bool = False) -> Program:
    """Return a program of at least `instructions` instructions made of random layers.

    `scale` multiplies the layer sizes (channels, pixels, K and N): with the default the
    layers repeat their tile shapes as a network's do. `activation`, `softmax` and `layernorm`
    as for `random_program`.
    """
    builder = _Builder(config, np.random.default_rng(seed), scale=scale, activation=activation,
                       softmax=softmax, layernorm=layernorm)
    while len(builder.instrs) < instructions:
        _add_layer(builder)
    return _finish(builder).program


# -- instructions with random fields ----------------------------------------------------------------


def _value(field: Any, rng: np.random.Generator) -> object:
    if field.kind is bool:
        return bool(rng.integers(2))
    if issubclass(field.kind, enum.Enum):
        return list(field.kind)[rng.integers(len(field.kind))]
    choice = rng.integers(4)
    if choice == 0:
        return field.minimum
    if choice == 1:
        return field.maximum
    if choice == 2:  # a small value: the common case
        return int(min(field.maximum, field.minimum + rng.integers(0, 16)))
    return int(rng.integers(field.minimum, field.maximum, endpoint=True))


def random_instruction(cls: type[Instruction], rng: np.random.Generator) -> Instruction:
    """Return an instance of `cls` whose fields span their whole encodable ranges."""
    derived = DERIVED_FIELDS[cls]  # (LOAD's decode hints: computed by the instruction)
    values = {field.name: _value(field, rng) for field in cls.FIELDS if field.name not in derived}
    if "lo" in values:
        values["lo"], values["hi"] = sorted((values["lo"], values["hi"]))
    if cls is Load:
        if values["mem"] is LoadTarget.PARAMS:
            for name in ("k0", "length", "run", "n_mid", "stride_mid", "stride_outer"):
                values[name] = 0
            values["flip_sign"] = False
        else:
            for name in ("length", "run", "n_mid"):
                values[name] = max(values[name], 1)
    if cls is Pool:
        if values["mode"] is PoolMode.MAX:
            for name in ("multiplier", "shift", "zp_in", "zp_out"):
                values[name] = 0
        for pad, k, s, out, size in (
            ("pad_top", "kh", "sh", "oh", "h"),
            ("pad_left", "kw", "sw", "ow", "w"),
        ):
            low = (values[out] - 1) * values[s] - values[size] + 1
            high = values[k] - 1
            if low > high or low > 32767:
                values[out] = 1
                low = 1 - values[size]
            low, high = max(low, -32768), min(high, 32767)
            values[pad] = int(rng.integers(low, high, endpoint=True))
    if cls is Add and values["mul"]:
        values["multiplier_b"] = 0
    if cls is Store and values["raw"]:
        values.update(zero_point=0, lo=0, hi=0, flip_sign=False, lut=False)
    instance = cls(**values)
    assert {f.name for f in dataclasses.fields(instance)} == set(values) | set(derived)
    return instance
