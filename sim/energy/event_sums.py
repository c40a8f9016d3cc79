"""Event counts summed per group of instructions (per layer), vectorised over the words.

`group_event_sums(instructions, config, groups, count, starts=(), load_beats=None,
words=None)` returns `count` dicts (every name of `EVENTS`): the events of the instructions
whose `groups[i]` is that group's index (-1: none), exactly the sums of
`events.program_events` over each group (tested). The fields are read from the instruction
words (`words`, the program's `Program.words`; encoded here when not given): COMPUTE,
COMPUTE.OS, PRELOAD and LOAD, the bulk of a compiled model, are counted with numpy over
their field columns; every other instruction's events are those of the first instruction
with its event key (the words with the on-chip rows `events.POSITIONS` cleared and `ext`
taken modulo the bus width, which decide none of its events), counted once per key with
`events.instruction_events`. The weights of a weight-stationary COMPUTE are the latest
PRELOAD's after the latest HALT or run start (`starts`: the indices where an accelerator run
begins, from reset). `load_beats[i]`, when given, is instruction i's beats if it is a LOAD
(the native `external_facts` cost); else each distinct LOAD's beats are counted once.
"""

from collections.abc import Sequence

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.encode_batch import CLASS_OF_OPCODE, encode_words, field_columns, opcodes
from systolic.isa.instructions import Compute, ComputeOS, Instruction, Load, Preload
from systolic.isa.memories import params_row_bytes
from systolic.sim.energy.events import EVENTS, POSITIONS, BeatCounter, instruction_events

__all__ = ["group_event_sums"]

_COLUMN = {name: index for index, name in enumerate(EVENTS)}
_VECTORISED = ("COMPUTE", "COMPUTE.OS", "PRELOAD", "LOAD", "HALT")
_EMPTY = np.zeros(0, dtype=np.int64)


class _Totals:
    """Per-group event totals (int64), added to by instruction indices."""

    def __init__(self, groups: np.ndarray, count: int) -> None:
        self.groups = groups
        self.table = np.zeros((count, len(EVENTS)), dtype=np.int64)

    def add(self, name: str, where: np.ndarray, values: np.ndarray) -> None:
        group = self.groups[where]
        keep = group >= 0
        np.add.at(self.table[:, _COLUMN[name]], group[keep], values[keep])


def _by_class(words: np.ndarray) -> dict[str, np.ndarray]:
    """Return the indices of the rows of each instruction class present, by mnemonic."""
    codes = opcodes(words)
    order = np.argsort(codes, kind="stable")
    present, starts = np.unique(codes[order], return_index=True)
    ends = [*starts[1:].tolist(), len(order)]
    return {CLASS_OF_OPCODE[int(code)].MNEMONIC: order[start:end]
            for code, start, end in zip(present.tolist(), starts.tolist(), ends, strict=True)}  # fmt: skip


def _event_keys(words: np.ndarray, config: ArrayConfig) -> np.ndarray:
    """Return `words` with every `POSITIONS` field cleared and `ext` modulo the bus width."""
    keys = words.copy()
    codes = opcodes(words)
    for code in np.unique(codes).tolist():
        cls = CLASS_OF_OPCODE[code]
        rows = np.flatnonzero(codes == code)
        for field in cls.FIELDS:
            if field.name not in POSITIONS and field.name != "ext":
                continue
            word, shift = divmod(field.offset, 64)
            keys[rows, word] &= ~np.uint64(((1 << field.width) - 1) << shift)
            if field.name == "ext":
                (ext,) = field_columns(words[rows], cls, ("ext",))
                keys[rows, word] |= (ext % config.bus_bytes).astype(np.uint64) << np.uint64(shift)
    return keys


def _distinct(words: np.ndarray, config: ArrayConfig) -> tuple[np.ndarray, np.ndarray]:
    """Return (the first row of each distinct event key, each row's distinct key index)."""
    _, first, inverse = np.unique(_event_keys(words, config), axis=0, return_index=True,
                                  return_inverse=True)  # fmt: skip
    return first, inverse.reshape(-1)


def _active_weights(where: np.ndarray, preloads: np.ndarray, sizes: np.ndarray,
                    resets: np.ndarray) -> np.ndarray:
    """Return k*n of the weights each COMPUTE at `where` multiplies with: the latest PRELOAD's
    at or after the first instruction of its run (`resets`: the first instruction of every
    run, sorted), else 0."""
    if len(preloads) == 0:
        return np.zeros(len(where), dtype=np.int64)
    last = np.searchsorted(preloads, where) - 1
    found = np.where(last >= 0, preloads[np.maximum(last, 0)], -1)
    reset = np.searchsorted(resets, where, side="right") - 1
    since = np.where(reset >= 0, resets[np.maximum(reset, 0)], 0)
    return np.where((last >= 0) & (found >= since), sizes[np.maximum(last, 0)], 0)


def group_event_sums(
    instructions: Sequence[Instruction],
    config: ArrayConfig,
    groups: np.ndarray,
    count: int,
    starts: Sequence[int] = (),
    load_beats: "Sequence[int] | np.ndarray | None" = None,
    words: np.ndarray | None = None,
) -> list[dict[str, int]]:
    """Return the events of each group (module docstring)."""
    if words is None:
        words = encode_words(instructions)
    totals = _Totals(np.asarray(groups, dtype=np.int64), count)
    at = _by_class(words)
    preloads = at.get("PRELOAD", _EMPTY)
    k, n = field_columns(words[preloads], Preload, ("k", "n"))
    totals.add("spad_wt_reads", preloads, k)
    resets = np.union1d(at.get("HALT", _EMPTY) + 1, np.asarray(starts, dtype=np.int64))
    _ws_computes(words, config, at.get("COMPUTE", _EMPTY), (preloads, k * n, resets), totals)
    _os_computes(words, config, at.get("COMPUTE.OS", _EMPTY), totals)
    _loads(instructions, words, config, at.get("LOAD", _EMPTY), load_beats, totals)
    others = [where for name, where in at.items() if name not in _VECTORISED]
    if others:
        _by_event_key(instructions, words, config, np.concatenate(others), totals)
    return [dict(zip(EVENTS, (int(v) for v in row), strict=True)) for row in totals.table]


def _by_event_key(instructions: Sequence[Instruction], words: np.ndarray, config: ArrayConfig,
                  where: np.ndarray, totals: _Totals) -> None:
    """Add the events of the instructions at `where` that belong to a group, counted once per
    distinct event key (module docstring)."""
    where = where[totals.groups[where] >= 0]
    if len(where) == 0:
        return
    first, inverse = _distinct(words[where], config)
    beats = BeatCounter(config)
    events = np.zeros((len(first), len(EVENTS)), dtype=np.int64)
    for row, index in enumerate(where[first].tolist()):
        for name, value in instruction_events(instructions[index], config, beats=beats).items():
            events[row, _COLUMN[name]] = value
    np.add.at(totals.table, totals.groups[where], events[inverse])


def _ws_computes(words: np.ndarray, config: ArrayConfig, where: np.ndarray,
                 weights: tuple[np.ndarray, np.ndarray, np.ndarray], totals: _Totals) -> None:
    m, accumulate = field_columns(words[where], Compute, ("m", "accumulate"))
    totals.add("mac_slots", where, config.pes * m)
    totals.add("macs", where, m * _active_weights(where, *weights))
    for name in ("spad_in_reads", "acc_writes"):
        totals.add(name, where, m)
    totals.add("acc_rmw", where, m * accumulate)


def _os_computes(words: np.ndarray, config: ArrayConfig, where: np.ndarray,
                 totals: _Totals) -> None:
    m, n, k, accumulate = field_columns(words[where], ComputeOS, ("m", "n", "k", "accumulate"))
    totals.add("mac_slots", where, config.pes * k)
    totals.add("macs", where, m * n * k)
    totals.add("spad_in_reads", where, m * -(-k // config.dim))
    totals.add("spad_wt_reads", where, k)
    totals.add("acc_writes", where, m)
    totals.add("acc_rmw", where, m * accumulate)


def _loads(instructions: Sequence[Instruction], words: np.ndarray, config: ArrayConfig,
           where: np.ndarray, load_beats: "Sequence[int] | np.ndarray | None",
           totals: _Totals) -> None:
    mem, count, length = field_columns(words[where], Load, ("mem", "count", "length"))
    for code, target in enumerate(("spad_in", "spad_wt", "params")):
        totals.add(f"{target}_writes", where, np.where(mem == code, count, 0))
    row_bytes = np.where(mem == 2, params_row_bytes(config), length * config.operand_bytes)
    totals.add("ext_read_bytes", where, count * row_bytes)
    if load_beats is not None:
        beats = np.asarray(load_beats, dtype=np.int64)[where]
    elif len(where):
        first, inverse = _distinct(words[where], config)
        counter = BeatCounter(config)
        distinct = [counter.beats(instructions[index]) for index in where[first].tolist()]
        beats = np.asarray(distinct, dtype=np.int64)[inverse]
    else:
        beats = _EMPTY
    totals.add("ext_read_beats", where, beats)
