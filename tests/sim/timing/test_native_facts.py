"""The native external facts (costs and external ranges) against the Python functions, on
random instructions of every LOAD and STORE-unit class, with and without the `lut`, `mul` and
`raw` flags, SOFTMAX (its own sum of row costs, not the max-plus form), and TABLE with and
without `wide` (a cost, no external range)."""

import dataclasses

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.encode_batch import encode_words
from systolic.isa.fields import InstructionError
from systolic.isa.instructions import Add, Copy, Load, Pool, Softmax, Store, Table
from systolic.isa.memories import Memory
from systolic.sim.native.build import load_library, unavailable_reason
from systolic.sim.timing.load_timing import load_beats
from systolic.sim.timing.native_facts import external_facts
from systolic.sim.timing.store_timing import duration

from ...support.random_programs import random_instruction

_SMALL = {"count": 40, "m": 40, "oh": 6, "ow": 6, "h": 12, "w": 12, "length": 300}
_STRIDES = ("row_stride0", "row_stride1", "stride_mid", "stride_outer")


def _small(instr, rng):
    """`instr` with its row counts, sizes and strides cut down (so both sides run quickly)."""
    changes = {name: int(rng.integers(1, limit + 1)) for name, limit in _SMALL.items()
               if hasattr(instr, name)}
    changes.update({name: int(rng.integers(-3000, 3000)) for name in _STRIDES
                    if hasattr(instr, name) and getattr(instr, name) != 0})
    for name in ("n0", "run", "n_mid"):
        if hasattr(instr, name) and getattr(instr, name) > 0:
            changes[name] = int(rng.integers(1, 9))
    if hasattr(instr, "k0") and isinstance(instr, Load) and instr.length:
        changes["k0"] = int(rng.integers(0, 50))
    if hasattr(instr, "ext"):
        changes["ext"] = int(rng.integers(10**6, 2 * 10**6))
    if isinstance(instr, Pool):
        changes.update(kh=int(rng.integers(1, 4)), kw=int(rng.integers(1, 4)),
                       sh=int(rng.integers(1, 3)), sw=int(rng.integers(1, 3)),
                       pad_top=int(rng.integers(-2, 2)), pad_left=int(rng.integers(-2, 2)))
    try:
        return dataclasses.replace(instr, **changes)
    except InstructionError:
        return None


@pytest.mark.parametrize("seed", range(6))
def test_costs_and_external_ranges_equal_the_python_ones(seed: int) -> None:
    if load_library("facts") is None:
        pytest.skip(unavailable_reason("facts") or "no native facts")
    rng = np.random.default_rng(seed)
    config = ArrayConfig(rows=int(rng.integers(1, 9)), cols=int(rng.integers(1, 9)),
                         input_width=(8, 12)[seed % 2], weight_width=8,
                         bus_bytes=int(2 ** rng.integers(0, 7)))
    instructions = []
    while len(instructions) < 300:
        cls = (Load, Store, Pool, Add, Copy, Table, Softmax, Store)[int(rng.integers(8))]
        instr = _small(random_instruction(cls, rng), rng)
        if instr is not None:
            instructions.append(instr)
    cost, first, last = external_facts(encode_words(instructions), config)
    for i, instr in enumerate(instructions):
        expected = load_beats(instr, config) if isinstance(instr, Load) else duration(
            instr, config)
        ranges = [(a.first, a.last) for a in instr.footprint(config)
                  if a.memory is Memory.EXTERNAL]
        (ext_first, ext_last), = ranges or [(0, 0)]  # (TABLE: none, and zeros)
        assert (cost[i], first[i], last[i]) == (expected, ext_first, ext_last), instr
    flags = {(type(i).__name__, *(f for f in ("lut", "mul", "raw", "wide") if getattr(i, f, False)))
             for i in instructions}
    assert {("Store", "lut"), ("Store", "raw"), ("Copy", "lut"), ("Add", "mul"), ("Table",),
            ("Table", "wide"), ("Softmax",)} <= flags
