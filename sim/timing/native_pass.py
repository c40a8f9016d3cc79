"""The cycle model's main loop in C (`sim/native/timing.c`), with the Python pass as fallback.

`native_pass(config, table_entries, queue_depth, facts)` returns the `ProgramTiming` that
`ProgramModel.python_pass` computes for the same `ProgramFacts` (every accept, issue and complete
cycle, the total and every counter; `rollbacks` is the C loop's own count), or None when the
native engine is unavailable (`systolic.sim.native.build.native_status`: not built at
install time, or `SYSTOLIC_NATIVE=0`) or the C code refuses its input or finds an
inconsistency (facts it does not expect, the completion merge not settling, a delivery that
differs from the exact merge): the caller then runs the Python pass, which raises its own
errors.
"""

import ctypes
from typing import Any

import numpy as np

from systolic.config import ArrayConfig
from systolic.sim.native.build import load_library
from systolic.sim.timing.execute_timing import ExecuteTiming
from systolic.sim.timing.load_timing import SETUP_CYCLES
from systolic.sim.timing.program_facts import (
    EX,
    K_COMPUTE,
    K_COMPUTE_OS,
    K_LD,
    K_PRELOAD,
    K_ST,
    LD,
    MEMORIES,
    SHARED,
    ST,
    ProgramFacts,
)
from systolic.sim.timing.program_timing import ProgramTiming

__all__ = ["native_pass", "timing_library"]

# The numbering timing.c is written for.
_LAYOUT_AGREES = (LD, EX, ST) == (0, 1, 2) and (K_LD, K_ST, K_COMPUTE, K_PRELOAD,
                                                 K_COMPUTE_OS) == (0, 1, 2, 3, 4)
_SHARED_BIT = SHARED.bit_length() - 1
_RESULTS = 9  # timing.c's R_COUNT
_UNIT_NAMES = ("ld", "ex", "st")
_P64 = ctypes.POINTER(ctypes.c_int64)
_I64 = ctypes.c_int64
_ARGTYPES = (
    _I64, _P64, _P64, _P64, _P64, _P64,  # n, kinds, units, masks, args, ks
    _I64, _P64, _P64, _I64, _P64,  # memories, spans, shared offsets, count, ranges
    _P64, _I64, _P64, _I64, _P64, _I64,  # params, ex_start, lengths (each with its count)
    _P64, _P64, _P64, _P64, _I64, _P64,  # accepts, issues, completes, results, failed
)


def timing_library() -> ctypes.CDLL | None:
    """Return the native engine for the timing pass (`load_library("timing")`), or None."""
    return load_library("timing")


def _pointer(array: np.ndarray) -> Any:
    return array.ctypes.data_as(_P64)


def _int64(values: Any) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int64)


def _shared(facts: ProgramFacts, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the SHARED footprints as CSR: offsets (n + 1) and rows of (mem, first, last,
    write)."""
    offsets = np.zeros(n + 1, dtype=np.int64)
    if not facts.shared:
        return offsets, np.zeros(0, dtype=np.int64)
    keys = sorted(facts.shared)
    offsets[np.array(keys, dtype=np.int64) + 1] = [len(facts.shared[k]) for k in keys]
    np.cumsum(offsets, out=offsets)
    ranges = _int64([value for k in keys for r in facts.shared[k] for value in r])
    return offsets, ranges


def native_pass(config: ArrayConfig, table_entries: int, queue_depth: int,
                facts: ProgramFacts) -> ProgramTiming | None:
    """Return `ProgramModel.python_pass`'s timing of `facts` from the C loop, or None (see the
    module docstring)."""
    library = timing_library() if _LAYOUT_AGREES else None
    if library is None:
        return None
    n = facts.kind_array.size
    kinds, units, masks, args, ks, spans = (_int64(array) for array in (
        facts.kind_array, facts.unit_array, facts.mask_array, facts.arg_array, facts.k_array,
        facts.span_array))
    shared_offsets, shared_ranges = _shared(facts, n)
    from systolic.sim.timing.program_model import (  # (program_model imports this module)
        CHECKPOINT_EVERY,
        CHECKPOINTS_KEPT,
        FIRST_ACCEPT,
        MAX_ROLLBACKS,
    )

    params = _int64([
        table_entries, queue_depth, config.mem_latency + SETUP_CYCLES, config.rows, config.dim,
        config.rows + config.cols - 1, 2 * config.rows + config.cols - 1, _SHARED_BIT,
        CHECKPOINT_EVERY, CHECKPOINTS_KEPT, MAX_ROLLBACKS, FIRST_ACCEPT])
    ex_start = _int64(ExecuteTiming(config).state())  # (reset state, timing.c's order)
    accepts, issues, completes = (np.zeros(n + 1, dtype=np.int64) for _ in range(3))
    results = np.zeros(_RESULTS, dtype=np.int64)
    failed = np.zeros(1, dtype=np.int64)
    inputs = (kinds, units, masks, args, ks, spans, shared_offsets, shared_ranges,
              accepts, issues, completes)
    lengths = _int64([array.size for array in inputs])
    function = library.timing_pass
    function.argtypes = _ARGTYPES
    function.restype = ctypes.c_int
    code = function(
        n, _pointer(kinds), _pointer(units), _pointer(masks), _pointer(args), _pointer(ks),
        MEMORIES, _pointer(spans), _pointer(shared_offsets), shared_ranges.size // 4,
        _pointer(shared_ranges), _pointer(params), params.size, _pointer(ex_start),
        ex_start.size, _pointer(lengths), lengths.size, _pointer(accepts), _pointer(issues),
        _pointer(completes), _pointer(results), results.size, _pointer(failed))
    if code != 0:
        return None
    (dispatch_stall, *rest) = results.tolist()
    hazard, busy, (halt, rollbacks) = rest[0:3], rest[3:6], rest[6:8]
    counters = {"cycles": halt, "instructions": n + 1, "dispatch_stall": dispatch_stall}
    for u, name in enumerate(_UNIT_NAMES):
        counters[f"unit_busy_{name}"] = busy[u]
    for u, name in enumerate(_UNIT_NAMES):
        counters[f"hazard_stall_{name}"] = hazard[u]
    return ProgramTiming(tuple(accepts.tolist()), tuple(issues.tolist()),
                         tuple(completes.tolist()), halt, counters, rollbacks)
