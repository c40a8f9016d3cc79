"""The external facts of LOAD and STORE-unit instructions, computed by native code.

`external_facts(words, config)` returns per instruction (int64 arrays) its cost (LOAD: bus
beats, `load_timing.load_beats`; STORE, POOL, ADD, COPY, SOFTMAX, LAYERNORM, TABLE:
`store_timing.duration`) and
the first and last external byte of its footprint, from the instruction words, with the C
code of `systolic.sim.native` (facts.c); rows of other instructions are 0, and so are the
external bytes of TABLE, which has no external range. Returns None when
the native engine is unavailable (`systolic.sim.native.build.native_status`) or an
instruction's fields are not valid (the caller then uses the Python `Describer`, which raises
the exact error).
"""

import ctypes

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.encode_batch import UNIT_CODES, WORDS, opcodes, unit_codes
from systolic.isa.instructions import Table, Unit
from systolic.isa.memories import params_row_bytes
from systolic.isa.program import Program
from systolic.sim.native.build import load_library

__all__ = ["external_facts", "memory_end"]

_RUN_SCRATCH = 65536  # (facts.c MAX_RUNS: one row's segments of a 16-bit element count)


def _pointer(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def external_facts(words: np.ndarray, config: ArrayConfig
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Return (cost, first, last) of every row of `words` (see the module docstring)."""
    library = load_library("facts")
    if library is None:
        return None
    words = np.ascontiguousarray(words, dtype=np.uint64)
    if words.ndim != 2 or words.shape[1] != WORDS:
        raise ValueError(f"words must have shape (n, {WORDS}), not {words.shape}")
    count = words.shape[0]
    cost = np.zeros(count, dtype=np.int64)
    first = np.zeros(count, dtype=np.int64)
    last = np.zeros(count, dtype=np.int64)
    settings = np.array([config.operand_bytes, config.bus_bytes, params_row_bytes(config),
                         config.dim], dtype=np.int64)
    scratch = np.zeros((2, _RUN_SCRATCH), dtype=np.int64)
    failed = ctypes.c_int64(0)
    function = library.external_facts
    function.restype = ctypes.c_int
    status = function(_pointer(words), ctypes.c_int64(count), _pointer(settings),
                      _pointer(scratch[0]), _pointer(scratch[1]), _pointer(cost),
                      _pointer(first), _pointer(last), ctypes.byref(failed))
    if status != 0:
        return None
    return cost, first, last


def memory_end(program: Program) -> int:
    """Return `program.memory_end`, from the native external ranges when they build."""
    if "memory_end" in program.__dict__:  # (already computed by the specification)
        return program.memory_end
    facts = external_facts(program.words, program.config)
    if facts is None:
        return program.memory_end
    end = program.data_end
    units = unit_codes(program.words)
    off_chip = ((units == UNIT_CODES[Unit.LD]) | (units == UNIT_CODES[Unit.ST])) & (
        opcodes(program.words) != Table.OPCODE)  # (TABLE: no external range)
    if off_chip.any():
        end = max(end, int(facts[2][off_chip].max()) + 1)
    program.__dict__["memory_end"] = end  # (the cached_property's slot)
    return end
