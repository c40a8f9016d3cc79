"""Random valid STORE-unit instructions (STORE, COPY, POOL, ADD, TABLE, SOFTMAX) for a
configuration.

A kind is a mnemonic, optionally with flags after dots: "STORE.lut", "STORE.raw", "COPY.lut",
"ADD.mul", "ADD.b_broadcast", "ADD.mul.b_broadcast", "TABLE.wide".
"""

import dataclasses

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.instructions import (
    Add,
    Copy,
    Instruction,
    Pool,
    PoolMode,
    Softmax,
    Store,
    Table,
)
from systolic.isa.memories import Memory, depth
from systolic.isa.softmax import softmax_row_chunks
from systolic.isa.table import exp_table_rows, table_rows

from .store_harness import MEMORY_BYTES


def _pattern(rng: np.random.Generator, rows: int, row_bytes: int) -> dict:
    n0 = int(rng.integers(1, 5))
    stride0 = int(rng.integers(-2 * row_bytes - 3, 3 * row_bytes + 4))
    stride1 = int(rng.integers(-4 * row_bytes - 9, 6 * row_bytes + 10))
    return {"ext": int(rng.integers(0, MEMORY_BYTES)), "n0": n0,
            "row_stride0": stride0, "row_stride1": stride1}


def _clamp(rng: np.random.Generator) -> tuple[int, int]:
    if rng.random() < 0.5:
        return -128, 127
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2))
    return lo, hi


def _fits(instr: Instruction, config: ArrayConfig) -> bool:
    written = instr.footprint(config)[-1]
    return written.first >= 0 and written.last < MEMORY_BYTES


def _candidate(kind: str, config: ArrayConfig, rng: np.random.Generator,
               max_rows: int) -> Instruction:
    ob, spad = config.operand_bytes, depth(config, Memory.SPAD_IN)
    flip = bool(ob == 1 and config.input_width == 8 and rng.random() < 0.3)
    lo, hi = _clamp(rng)
    if kind == "STORE":
        m, n = int(rng.integers(1, max_rows + 1)), int(rng.integers(1, config.cols + 1))
        return Store(acc_row=int(rng.integers(0, config.acc_depth - m + 1)), m=m, n=n,
                     param_row=int(rng.integers(0, 512)), zero_point=int(rng.integers(-128, 128)),
                     lo=lo, hi=hi, flip_sign=flip, **_pattern(rng, m, n * ob))
    if kind == "SOFTMAX":
        return _softmax(config, rng, max_rows, flip, lo, hi)
    lanes = int(rng.integers(1, config.dim + 1))
    if kind == "COPY":
        m = int(rng.integers(1, max_rows + 1))
        return Copy(in_row=int(rng.integers(0, spad - m + 1)), m=m, lanes=lanes, flip_sign=flip,
                    **_pattern(rng, m, lanes * ob))
    if kind == "ADD":
        m = int(rng.integers(1, max_rows + 1))
        return Add(a_row=int(rng.integers(0, spad - m + 1)),
                   b_row=int(rng.integers(0, spad - m + 1)), m=m, lanes=lanes,
                   multiplier_a=int(rng.integers(-(2**31), 2**31)) >> int(rng.integers(0, 4)),
                   multiplier_b=int(rng.integers(-(2**31), 2**31)) >> int(rng.integers(0, 4)),
                   shift=int(rng.integers(-31, 32)) if rng.random() < 0.2 else
                   int(rng.integers(0, 8)),
                   zp_a=int(rng.integers(-128, 128)), zp_b=int(rng.integers(-128, 128)),
                   zp_out=int(rng.integers(-128, 128)), lo=lo, hi=hi, flip_sign=flip,
                   **_pattern(rng, m, lanes * ob))
    h, w = (int(v) for v in rng.integers(1, 7, 2))
    kh, kw = int(rng.integers(1, h + 2)), int(rng.integers(1, w + 2))
    sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    pad_top = int(rng.integers(-(h - 1), kh))
    pad_left = int(rng.integers(-(w - 1), kw))
    oh = max(1, (h - 1 + pad_top) // sh + 1 - int(rng.integers(0, 2)))
    ow = max(1, (w - 1 + pad_left) // sw + 1 - int(rng.integers(0, 2)))
    mode = PoolMode.AVG if rng.random() < 0.5 else PoolMode.MAX
    scaled = {}
    if mode is PoolMode.AVG:
        scaled = {"multiplier": int(rng.integers(2**30, 2**31)) * int(rng.choice([1, -1])),
                  "shift": int(rng.integers(-2, 4)) if rng.random() < 0.8 else
                  int(rng.integers(-31, 32)),
                  "zp_in": int(rng.integers(-128, 128)), "zp_out": int(rng.integers(-128, 128))}
    return Pool(mode=mode, in_row=int(rng.integers(0, spad - h * w + 1)), lanes=lanes, h=h, w=w,
                kh=kh, kw=kw, sh=sh, sw=sw, pad_top=pad_top, pad_left=pad_left, oh=oh, ow=ow,
                lo=lo, hi=hi, flip_sign=flip, **scaled, **_pattern(rng, oh * ow, lanes * ob))


def _softmax(config: ArrayConfig, rng: np.random.Generator, max_rows: int, flip: bool,
             lo: int, hi: int) -> Softmax:
    length = int(rng.integers(1, 3 * config.dim + 2))
    m = int(rng.integers(1, min(max_rows, 4) + 1))
    rows = m * softmax_row_chunks(length, config)
    spad = depth(config, Memory.SPAD_IN)
    return Softmax(in_row=int(rng.integers(0, max(1, spad - rows + 1))), m=m, length=length,
                   multiplier=int(rng.integers(2**30, 2**31)) * int(rng.choice([1, 1, 1, -1])),
                   shift=int(rng.integers(0, 11)) if rng.random() < 0.9 else
                   int(rng.integers(-31, 32)),
                   zero_point=int(rng.integers(-128, 128)), lo=lo, hi=hi, flip_sign=flip,
                   **_pattern(rng, m, length))


def _with_flags(instr: Instruction, flags: list[str], rng: np.random.Generator) -> Instruction:
    changes: dict[str, object] = dict.fromkeys(flags, True)
    if "raw" in flags:  # the output stage's parameters must be 0
        changes.update(zero_point=0, lo=0, hi=0, flip_sign=False)
    if "mul" in flags:  # products are ~2**16 times larger than sums: shift them further
        changes.update(multiplier_b=0, shift=int(rng.integers(0, 17)))
    return dataclasses.replace(instr, **changes)  # type: ignore[type-var]


def random_instruction(kind: str, config: ArrayConfig, rng: np.random.Generator,
                       max_rows: int = 12) -> Instruction:
    """Return a random valid `kind` instruction whose writes lie inside the test memory."""
    mnemonic, *flags = kind.split(".")
    if mnemonic == "TABLE":
        wide = "wide" in flags
        used = exp_table_rows(config) if wide else table_rows(config)
        return Table(row=int(rng.integers(0, depth(config, Memory.SPAD_IN) - used + 1)),
                     wide=wide)
    for _ in range(1000):
        try:
            instr = _with_flags(_candidate(mnemonic, config, rng, max_rows), flags, rng)
            instr.check(config)
        except ValueError:
            continue
        if _fits(instr, config):
            return instr
    raise AssertionError(f"no valid {kind} found")
