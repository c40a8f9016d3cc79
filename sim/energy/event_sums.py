"""Event counts summed per group of instructions (per layer), vectorised by instruction class.

`group_event_sums(instructions, config, groups, count, starts=(), load_beats=None)` returns
`count` dicts (every name of `EVENTS`): the events of the instructions whose `groups[i]` is
that group's index (-1: none), exactly the sums of `events.program_events` over each group
(tested). COMPUTE, COMPUTE.OS, PRELOAD and LOAD, the bulk of a compiled model, are counted
with numpy class by class; the others one by one with `events.instruction_events`. The
weights of a weight-stationary COMPUTE are the latest PRELOAD's after the latest HALT or run
start (`starts`: the indices where an accelerator run begins, from reset). `load_beats[i]`,
when given, is instruction i's beats if it is a LOAD (the native `external_facts` cost).
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.instructions import Instruction
from systolic.isa.memories import params_row_bytes
from systolic.sim.energy.events import EVENTS, BeatCounter, instruction_events

__all__ = ["group_event_sums"]

_COLUMN = {name: index for index, name in enumerate(EVENTS)}
_VECTORISED = ("COMPUTE", "COMPUTE.OS", "PRELOAD", "LOAD", "HALT")


class _Totals:
    """Per-group event totals (int64), added to by instruction indices."""

    def __init__(self, groups: np.ndarray, count: int) -> None:
        self.groups = groups
        self.table = np.zeros((count, len(EVENTS)), dtype=np.int64)

    def add(self, name: str, where: np.ndarray, values: np.ndarray) -> None:
        group = self.groups[where]
        keep = group >= 0
        np.add.at(self.table[:, _COLUMN[name]], group[keep], values[keep])


def _column(instructions: Sequence[Any], where: np.ndarray, field: str) -> np.ndarray:
    return np.fromiter((getattr(instructions[i], field) for i in where), dtype=np.int64,
                       count=len(where))  # fmt: skip


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
) -> list[dict[str, int]]:
    """Return the events of each group (module docstring)."""
    totals = _Totals(np.asarray(groups, dtype=np.int64), count)
    by_name: dict[str, list[int]] = {}
    for index, instr in enumerate(instructions):
        by_name.setdefault(instr.MNEMONIC, []).append(index)
    at = {name: np.array(indices, dtype=np.int64) for name, indices in by_name.items()}
    empty = np.zeros(0, dtype=np.int64)
    preloads = at.get("PRELOAD", empty)
    k, n = (_column(instructions, preloads, f) for f in ("k", "n"))
    totals.add("spad_wt_reads", preloads, k)
    resets = np.union1d(at.get("HALT", empty) + 1, np.asarray(starts, dtype=np.int64))
    _ws_computes(instructions, config, at.get("COMPUTE", empty), (preloads, k * n, resets),
                 totals)  # fmt: skip
    _os_computes(instructions, config, at.get("COMPUTE.OS", empty), totals)
    _loads(instructions, config, at.get("LOAD", empty), load_beats, totals)
    beats = BeatCounter(config)
    for name, indices in by_name.items():
        if name in _VECTORISED:
            continue
        for index in indices:
            group = totals.groups[index]
            if group >= 0:
                for event, value in instruction_events(instructions[index], config,
                                                       beats=beats).items():  # fmt: skip
                    totals.table[group, _COLUMN[event]] += value
    return [dict(zip(EVENTS, (int(v) for v in row), strict=True)) for row in totals.table]


def _ws_computes(instructions: Sequence[Instruction], config: ArrayConfig, where: np.ndarray,
                 weights: tuple[np.ndarray, np.ndarray, np.ndarray], totals: _Totals) -> None:
    m = _column(instructions, where, "m")
    accumulate = _column(instructions, where, "accumulate")
    totals.add("mac_slots", where, config.pes * m)
    totals.add("macs", where, m * _active_weights(where, *weights))
    for name in ("spad_in_reads", "acc_writes"):
        totals.add(name, where, m)
    totals.add("acc_rmw", where, m * accumulate)


def _os_computes(instructions: Sequence[Instruction], config: ArrayConfig, where: np.ndarray,
                 totals: _Totals) -> None:
    m, n, k, accumulate = (_column(instructions, where, f) for f in ("m", "n", "k", "accumulate"))
    totals.add("mac_slots", where, config.pes * k)
    totals.add("macs", where, m * n * k)
    totals.add("spad_in_reads", where, m * -(-k // config.dim))
    totals.add("spad_wt_reads", where, k)
    totals.add("acc_writes", where, m)
    totals.add("acc_rmw", where, m * accumulate)


def _loads(instructions: Sequence[Instruction], config: ArrayConfig, where: np.ndarray,
           load_beats: "Sequence[int] | np.ndarray | None", totals: _Totals) -> None:
    mem, count, length = (_column(instructions, where, f) for f in ("mem", "count", "length"))
    for code, target in enumerate(("spad_in", "spad_wt", "params")):
        totals.add(f"{target}_writes", where, np.where(mem == code, count, 0))
    row_bytes = np.where(mem == 2, params_row_bytes(config), length * config.operand_bytes)
    totals.add("ext_read_bytes", where, count * row_bytes)
    if load_beats is not None:
        beats = np.asarray(load_beats, dtype=np.int64)[where]
    else:
        counter = BeatCounter(config)
        beats = np.fromiter((counter.beats(instructions[i]) for i in where), dtype=np.int64,
                            count=len(where))  # fmt: skip
    totals.add("ext_read_beats", where, beats)
