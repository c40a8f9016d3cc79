"""A simulated run as a Chrome trace (`systolic simulate --trace run.json`), the JSON form of the
Trace Event Format that Perfetto and chrome://tracing open as a timeline.

One microsecond of the trace is one accelerator cycle. The accelerator is process 1, with
tracks (threads) per unit: LOAD, EXECUTE, STORE / vector (POOL, ADD, COPY run there), and a host
track. Every instruction is one complete event (`"ph": "X"`) on its unit's track, named after
its layer, from the cycle it issued to the cycle it completed (`ts` = run offset + issue,
`dur` = complete - issue; `args` hold the instruction's index in the whole program, mnemonic,
and accept, issue and complete cycles within its run), so a unit that waits shows as a gap.
A unit works on several instructions at once (a LOAD issues while the previous one's data
still arrives): an instruction that starts before the unit's earlier ones have completed goes
to the unit's next lane, a track of its own ("LOAD", "LOAD 2", ...; thread id 100·(unit + 1)
+ lane), since the events of one track must not overlap.
Accelerator runs follow each other: a run's cycles start where the previous run's total ended.
Host layers take no accelerator cycles: each is an instant event (`"ph": "i"`) on the host
track at the cycle between the runs it separates; each run's HALT is an instant event there
too (`args` without an instruction index: the HALT a run ends with is not one of the
program's instructions). Metadata events (`"ph": "M"`) name the process and the tracks.
"""

import json
from collections.abc import Iterator, Sequence
from typing import Any

from systolic.isa.encode_batch import UNIT_CODES, unit_codes
from systolic.isa.instruction_base import Unit
from systolic.mapper.lowering.compiled import AcceleratorStep, CompiledModel
from systolic.simulation.layer_timing import RunTimes

__all__ = ["PID", "TRACKS", "trace_document", "trace_events"]

PID = 1
"""The accelerator's process id in the trace."""
TRACKS = {UNIT_CODES[Unit.LD]: "LOAD", UNIT_CODES[Unit.EX]: "EXECUTE",
          UNIT_CODES[Unit.ST]: "STORE / vector", UNIT_CODES[Unit.DISPATCH]: "host"}  # fmt: skip
"""Track name by unit code (HALT's DISPATCH is the host track)."""
_HOST = UNIT_CODES[Unit.DISPATCH]
_HOST_TID = 100 * (_HOST + 1)


def trace_document(compiled: CompiledModel, runs: Sequence[RunTimes], label: str) -> str:
    """Return the trace of `runs` (the accelerator runs of `compiled`, in order) as JSON text."""
    config = compiled.config
    document = {
        "traceEvents": trace_events(compiled, runs, f"{label} {config.shape_text} "
                                                    f"{config.dataflow.value}"),
        "displayTimeUnit": "ns",
        "otherData": {"model": label, "time unit": "1 us = 1 accelerator cycle"},
    }  # fmt: skip
    return json.dumps(document, indent=None, separators=(",", ":")) + "\n"


def trace_events(compiled: CompiledModel, runs: Sequence[RunTimes],
                 process: str = "accelerator") -> list[dict[str, Any]]:  # fmt: skip
    """Return the trace events (module docstring): metadata, then the steps in order."""
    steps = _in_lanes(list(_step_events(compiled, runs)))
    tids = sorted({event["tid"] for event in steps} | {_HOST_TID})
    events = [_meta("process_name", 0, "name", process)]
    for tid in tids:
        unit, lane = divmod(tid, 100)
        name = TRACKS[unit - 1] + (f" {lane + 1}" if lane else "")
        events += [_meta("thread_name", tid, "name", name),
                   _meta("thread_sort_index", tid, "sort_index", tid)]  # fmt: skip
    return events + steps


def _meta(kind: str, tid: int, key: str, value: object) -> dict[str, Any]:
    return {"name": kind, "ph": "M", "ts": 0, "pid": PID, "tid": tid, "args": {key: value}}


def _instant(name: str, ts: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "i", "s": "t", "ts": ts, "pid": PID, "tid": _HOST_TID,
            "args": args}  # fmt: skip


def _in_lanes(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Move each complete event that overlaps an earlier one of its unit to the first lane
    free at its start (events of a unit come in issue order)."""
    ends: dict[int, list[int]] = {}
    for event in events:
        if event["ph"] != "X":
            continue
        lanes = ends.setdefault(event["tid"], [])
        lane = next((i for i, end in enumerate(lanes) if end <= event["ts"]), len(lanes))
        if lane == len(lanes):
            lanes.append(0)
        lanes[lane] = event["ts"] + event["dur"]
        event["tid"] += lane
    return events


def _step_events(compiled: CompiledModel, runs: Sequence[RunTimes]) -> Iterator[dict[str, Any]]:
    program = compiled.program
    layer_of = [""] * len(program.instructions)
    for layer in program.layers:
        layer_of[layer.first:layer.end] = [layer.name] * layer.count
    pending = iter(runs)
    offset = 0
    for step in compiled.steps():
        if not isinstance(step, AcceleratorStep):
            layer = program.layers[step.layer]
            yield _instant(layer.name, offset, {"op": layer.op, "layer": layer.name})
            continue
        run = next(pending)
        part = step.program  # the run's instructions, its own HALT last
        if run.first != step.first or len(run.times) != len(part.instructions):
            raise ValueError(f"the run from instruction {run.first} does not match the step "
                             f"from instruction {step.first}")  # fmt: skip
        units = unit_codes(part.words)
        for local, times in enumerate(run.times):
            cycles = {"accept": times.accept, "issue": times.issue, "complete": times.complete}
            mnemonic = part.instructions[local].MNEMONIC
            if units[local] == _HOST:  # the run's HALT
                yield _instant(mnemonic, offset + times.issue, {"op": mnemonic, **cycles})
                continue
            index = run.first + local
            yield {"name": layer_of[index] or mnemonic, "cat": mnemonic, "ph": "X",
                   "ts": offset + times.issue, "dur": times.complete - times.issue,
                   "pid": PID, "tid": 100 * (int(units[local]) + 1),
                   "args": {"instruction": index, "op": mnemonic, "layer": layer_of[index],
                            **cycles}}  # fmt: skip
        offset += run.total_cycles
