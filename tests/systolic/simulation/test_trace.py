"""The Chrome trace of a run: the format's required fields, one event per instruction at exactly
its simulated times (runs one after the other), host layers between runs, no overlap on a
track."""

import json
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import numpy as np
import onnx
import pytest

from systolic.config import ArrayConfig
from systolic.isa.halt import Halt
from systolic.mapper.lowering import compile_model
from systolic.simulation.prepare import prepare_model
from systolic.simulation.runner import run_compiled, segment_runner
from systolic.simulation.trace import PID, trace_document

from .test_host_operators import conv_host_conv

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(scope="module")
def attention(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A model split by a host layer at 4x4 on the cycle model: two runs (Conv, a host
    ConvTranspose-1, Conv; the realistic models now run whole on the accelerator)."""
    path = tmp_path_factory.mktemp("two_runs") / "conv_host_conv.onnx"
    onnx.save(conv_host_conv(np.random.default_rng(3)), path)
    prepared = prepare_model(path)
    compiled = compile_model(prepared.integer, ArrayConfig(rows=4, cols=4))
    run = run_compiled(compiled, prepared.inputs,
                       segment_runner("model", watchdog=None, vcd_files=[]))  # fmt: skip
    return compiled, run.run_times()


def test_events_have_the_required_fields(attention) -> None:  # type: ignore[no-untyped-def]
    compiled, runs = attention
    document = json.loads(trace_document(compiled, runs, "attn"))
    assert document["otherData"]["time unit"] == "1 us = 1 accelerator cycle"
    events = document["traceEvents"]
    assert {event["ph"] for event in events} == {"M", "X", "i"}
    for event in events:
        assert {"name", "ph", "ts", "pid", "tid"} <= set(event), event
        assert event["pid"] == PID and isinstance(event["ts"], int)
        if event["ph"] == "X":
            assert isinstance(event["dur"], int) and event["dur"] >= 0
    named = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {e["tid"] for e in events if e["ph"] != "M"} <= set(named)
    assert {"LOAD", "EXECUTE", "STORE / vector", "host"} <= set(named.values())


def test_one_event_per_instruction_at_its_times(attention) -> None:  # type: ignore[no-untyped-def]
    compiled, runs = attention
    assert len(runs) == 2
    program = compiled.program
    events = json.loads(trace_document(compiled, runs, "attn"))["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    by_index = {e["args"]["instruction"]: e for e in slices}
    assert len(by_index) == len(slices)
    halts = [e for e in events if e["name"] == "HALT"]
    assert len(halts) == len(runs)
    layer_of = {i: layer.name for layer in program.layers for i in range(layer.first, layer.end)}
    offset = 0
    for run, halt in zip(runs, halts, strict=True):
        *body, last = run.times
        assert halt["ts"] == offset + last.issue == offset + run.total_cycles
        for local, times in enumerate(body):
            event = by_index.pop(run.first + local)
            assert event["ts"] == offset + times.issue
            assert event["dur"] == times.complete - times.issue
            assert event["args"]["accept"] == times.accept
            assert event["name"] == layer_of[run.first + local]
            assert not isinstance(program.instructions[run.first + local], Halt)
        offset += run.total_cycles
    assert not by_index  # every event is an instruction of a run


def test_host_layers_between_runs_and_no_overlap_on_a_track(attention) -> None:  # type: ignore[no-untyped-def]
    compiled, runs = attention
    events = json.loads(trace_document(compiled, runs, "attn"))["traceEvents"]
    host = [e for e in events if e["ph"] == "i" and e["name"] != "HALT"]
    host_layers = [compiled.program.layers[step.layer].name
                   for step in compiled.program.host_steps]  # fmt: skip
    assert [e["name"] for e in host] == host_layers
    run_ends = {sum(run.total_cycles for run in runs[:n]) for n in range(len(runs) + 1)}
    assert {e["ts"] for e in host} <= run_ends
    tracks: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for event in events:
        if event["ph"] == "X":
            tracks[event["tid"]].append((event["ts"], event["ts"] + event["dur"]))
    for spans in tracks.values():
        spans.sort()
        assert all(end <= start for (_, end), (start, _) in pairwise(spans))
