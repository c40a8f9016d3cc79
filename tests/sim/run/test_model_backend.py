"""The model backend with its native engines and with the Python specification alone."""

from pathlib import Path

import numpy as np
import pytest

from systolic.commands.model_loading import load_user_model
from systolic.config import ArrayConfig, Dataflow
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.pipeline import run_passes
from systolic.sim.golden.machine import Machine
from systolic.sim.native.build import load_library
from systolic.sim.run.model_backend import run_model

MODELS = Path(__file__).resolve().parents[2] / "models"


def _run(program, image, native: str, monkeypatch):
    monkeypatch.setenv("SYSTOLIC_NATIVE", native)
    return run_model(program, image)


@pytest.mark.parametrize("name", ["resnet_tiny_qdq", "dwsep_qop", "attn_qdq"])
@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
def test_native_and_python_runs_are_identical(name: str, dataflow: Dataflow,
                                              monkeypatch) -> None:
    if load_library("golden") is None or load_library("timing") is None:
        pytest.skip("native engines unavailable")
    model, _ = run_passes(load_user_model(MODELS / f"{name}.onnx"))
    program = compile_model(model, ArrayConfig(rows=4, cols=4, dataflow=dataflow,
                                               bus_bytes=8)).program
    image = bytearray(Machine.for_program(program).memory.tobytes())
    rng = np.random.default_rng(1)
    for placement in program.tensors:
        if placement.role.value == "input":
            image[placement.address : placement.end] = rng.integers(
                0, 256, placement.end - placement.address, dtype=np.uint8).tobytes()
    fast = _run(program, image, "1", monkeypatch)
    slow = _run(program, image, "0", monkeypatch)
    assert fast.memory == slow.memory
    assert fast.total_cycles == slow.total_cycles
    assert fast.times == slow.times
    assert fast.counters == slow.counters
    assert fast.memory != image  # (the run wrote its outputs)
