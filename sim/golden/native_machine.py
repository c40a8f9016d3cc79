"""The golden machine in C: whole programs at native speed, the same state bit for bit.

`run_native(config, words, memory)` executes an encoded program (`encode_words`: uint64,
shape (n, 8), HALT last) on `memory` (uint8, changed in place) with the C engine
`sim/native/golden.c`, exactly as `Machine.run` would (docs/isa.md, docs/numeric-contract.md),
and returns True; it returns False, touching nothing, when the native library is unavailable
(`systolic.sim.native.build.native_status`: not built at install time, or SYSTOLIC_NATIVE=0),
so the caller runs the Python `Machine` instead.

The C engine checks each instruction before it changes any state and stops at the first one
the Python machine would reject (an invalid field, an access beyond the memory, a params
shift outside -31..31, an instruction after HALT, no HALT) or whose arithmetic it leaves to
Python (state values beyond 16 bits, intermediates beyond 64 bits, table indexes or entries
outside int8, which no LOAD makes, exp table entries outside 0..65535). `run_native` then
continues in Python from that instruction on the state the C engine left, so it raises the
Python machine's exact error (the earlier instructions have taken effect, as with
`Machine.run`) or finishes the program; either way the caller need not run anything again.

`state` (a `Machine` of the same configuration whose `memory` is `memory`) starts the run from
that machine's state and leaves the final state in it: scratchpads, accumulators, params and
the activation and exp tables updated in place, `weights`, `shadow` and `halted` replaced, as
`Machine.run` would leave them.
"""

import ctypes
import functools
from collections.abc import Iterator, Sequence

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Instruction, decode
from systolic.isa.memories import Memory, depth
from systolic.isa.table import TABLE_ENTRIES
from systolic.sim.golden.machine import Machine
from systolic.sim.native.build import load_library

__all__ = ["NativeStatus", "native_execute", "run_native"]

_DATAFLOW_CODE = {Dataflow.WS: 0, Dataflow.OS: 1, Dataflow.BOTH: 2}
"""golden.c's `output_stationary`: 0 runs PRELOAD/COMPUTE, 1 COMPUTE.OS, 2 either."""


class NativeStatus:
    """The return codes of `golden_run` (sim/native/golden.c)."""

    OK = 0
    INVALID = 1
    MEMORY = 2
    ARITHMETIC = 3
    NO_HALT = 4
    AFTER_HALT = 5
    STATE = 6
    NO_MEMORY = 7
    BAD_ARGUMENT = 8


class _State(ctypes.Structure):
    """`golden_state` of golden.c: the configuration and the state arrays with their sizes."""

    _fields_ = [
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("input_width", ctypes.c_int64),
        ("weight_width", ctypes.c_int64),
        ("acc_width", ctypes.c_int64),
        ("output_stationary", ctypes.c_int64),
        ("spad_depth", ctypes.c_int64),
        ("acc_depth", ctypes.c_int64),
        ("memory_size", ctypes.c_int64),
        ("memory", ctypes.c_void_p),
        ("spad_size", ctypes.c_int64),
        ("spad_in", ctypes.c_void_p),
        ("spad_wt", ctypes.c_void_p),
        ("acc_size", ctypes.c_int64),
        ("acc", ctypes.c_void_p),
        ("params_size", ctypes.c_int64),
        ("bias", ctypes.c_void_p),
        ("multiplier", ctypes.c_void_p),
        ("shift", ctypes.c_void_p),
        ("weights_size", ctypes.c_int64),
        ("weights", ctypes.c_void_p),
        ("shadow", ctypes.c_void_p),
        ("has_shadow", ctypes.c_int64),
        ("halted", ctypes.c_int64),
        ("table_size", ctypes.c_int64),
        ("table", ctypes.c_void_p),
        ("exp_table_size", ctypes.c_int64),
        ("exp_table", ctypes.c_void_p),
    ]


@functools.cache
def _entry(library: ctypes.CDLL) -> "ctypes._NamedFuncPointer":
    function = library.golden_run
    function.argtypes = [ctypes.POINTER(_State), ctypes.c_void_p, ctypes.c_int64,
                         ctypes.POINTER(ctypes.c_int64)]
    function.restype = ctypes.c_int
    return function


def _words(words: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(words, dtype=np.uint64)
    if array.ndim != 2 or array.shape[1] != 8:
        raise ValueError(f"words must have shape (n, 8), not {array.shape}")
    return array


def _int64_array(machine: Machine, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Return the machine's array `name`, checked to be C-contiguous int64 of `shape`."""
    array: np.ndarray = getattr(machine, name)
    if (array.dtype != np.int64 or array.shape != shape or not array.flags.c_contiguous
            or not array.flags.writeable):
        raise ValueError(f"Machine.{name} must be a writeable C-contiguous int64 array of "
                         f"shape {shape}")
    return array


def native_execute(config: ArrayConfig, words: np.ndarray, memory: np.ndarray,
                   machine: Machine) -> tuple[int, int] | None:
    """Run `words` with the C engine from `machine`'s state on `memory`; return (status,
    index of the failed instruction), or None when the library is unavailable.

    The state the C engine leaves (the effect of every instruction before the failed one) is
    in `machine` afterwards, `memory` aside (`machine.memory` is not used). The status is a
    `NativeStatus` code.
    """
    library = load_library("golden")
    if library is None:
        return None
    code = _words(words)
    if (not isinstance(memory, np.ndarray) or memory.dtype != np.uint8 or memory.ndim != 1
            or not memory.flags.c_contiguous or not memory.flags.writeable):
        raise ValueError("memory must be a writeable one-dimensional C-contiguous uint8 array")
    if machine.config != config:
        raise ValueError("the machine's configuration differs from config")
    spad_depth, dim, cols = depth(config, Memory.SPAD_IN), config.dim, config.cols
    spad_in = _int64_array(machine, "spad_in", (spad_depth, dim))
    spad_wt = _int64_array(machine, "spad_wt", (spad_depth, dim))
    acc = _int64_array(machine, "acc", (config.acc_depth, cols))
    params = [_int64_array(machine, name, machine.bias.shape)
              for name in ("bias", "multiplier", "shift")]
    tile = (config.rows, cols)
    weights = np.array(machine.weights, dtype=np.int64, order="C")  # (replaced, never changed)
    if weights.shape != tile:
        raise ValueError(f"Machine.weights must have shape {tile}, not {weights.shape}")
    had_shadow = machine.shadow is not None
    shadow = (np.array(machine.shadow, dtype=np.int64, order="C") if had_shadow
              else np.zeros(tile, dtype=np.int64))
    if shadow.shape != tile:
        raise ValueError(f"Machine.shadow must have shape {tile}, not {shadow.shape}")
    table = _int64_array(machine, "table", (TABLE_ENTRIES,))
    exp_table = _int64_array(machine, "exp_table", (TABLE_ENTRIES,))
    state = _State(
        config.rows, cols, config.input_width, config.weight_width, config.acc_width,
        _DATAFLOW_CODE[config.dataflow], spad_depth, config.acc_depth,
        memory.size, memory.ctypes.data,
        spad_in.size, spad_in.ctypes.data, spad_wt.ctypes.data,
        acc.size, acc.ctypes.data,
        params[0].size, params[0].ctypes.data, params[1].ctypes.data, params[2].ctypes.data,
        weights.size, weights.ctypes.data, shadow.ctypes.data,
        int(had_shadow), int(machine.halted), table.size, table.ctypes.data,
        exp_table.size, exp_table.ctypes.data,
    )
    failed = ctypes.c_int64(0)
    status = int(_entry(library)(ctypes.byref(state), code.ctypes.data, code.shape[0],
                                 ctypes.byref(failed)))
    if status == NativeStatus.BAD_ARGUMENT:
        raise ValueError("the native golden machine rejected the state arrays' sizes")
    machine.weights = weights
    machine.shadow = shadow if state.has_shadow else None
    machine.halted = bool(state.halted)
    return status, int(failed.value)


def _decoded(words: np.ndarray, first: int) -> Iterator[Instruction]:
    for row in words[first:]:
        yield decode(row.astype("<u8").tobytes())


def run_native(config: ArrayConfig, words: np.ndarray, memory: np.ndarray, *,
               state: Machine | None = None,
               instructions: Sequence[Instruction] | None = None) -> bool:
    """Run a whole program (see the module docstring); return False when native code is
    unavailable, else True after the program ran to HALT.

    `instructions` (the decoded program, e.g. `Program.instructions`) are what the Python
    machine runs from an instruction the C engine stopped at; by default the words are
    decoded. Raises what `Machine.run` raises for the program.
    """
    if state is not None and state.memory is not memory:
        raise ValueError("with a state, memory must be state.memory")
    machine = state if state is not None else Machine(config, 0)
    result = native_execute(config, words, memory, machine)
    if result is None:
        return False
    status, failed = result
    if status == NativeStatus.OK:
        return True
    machine.memory = memory  # (the same array: the Python machine continues in place)
    tail = instructions[failed:] if instructions is not None else _decoded(_words(words), failed)
    machine.run(tail)
    return True
