"""The RTL backend's VCD: readable by pyvcd, every signal named, memories and depth chosen."""

import numpy as np
import pytest
from vcd.reader import TokenKind, tokenize

from systolic.config import Dataflow
from systolic.sim.rtl.pysim_driver import run_pysim
from systolic.sim.rtl.waveform import Waveform, current_waveform, waveform_options

from ...hdl.accelerator_programs import gemm_program, operands, program_image, small_config

MEMORY_ROWS = ("spad_in[", "spad_wt[", "params[")  # pyvcd drops the escaping backslash


def _program(dataflow: Dataflow = Dataflow.WS):
    config = small_config(2, 2, dataflow, mem_latency=2)
    rng = np.random.default_rng(1)
    a, b = operands(rng, 3, 3, 2)
    return gemm_program(config, a, b, rng)


def _parse(path) -> tuple[list[str], int]:
    """Tokenize the whole file with pyvcd; return the variable names and the deepest scope."""
    names, depth, deepest = [], 0, 0
    with open(path, "rb") as stream:
        for token in tokenize(stream):
            if token.kind is TokenKind.SCOPE:
                depth += 1
                deepest = max(deepest, depth)
            elif token.kind is TokenKind.UPSCOPE:
                depth -= 1
            elif token.kind is TokenKind.VAR:
                names.append(token.data.reference)
    return names, deepest


def test_default_waveform_is_named_readable_and_without_memory_rows(tmp_path) -> None:
    """Default: the top's and the units' signals (depth 1), no memory rows; every level and
    every memory on request, every signal named."""
    program = _program()
    image = program_image(program)
    small, full = tmp_path / "small.vcd", tmp_path / "full.vcd"
    run_pysim(program, image, vcd=small)
    with waveform_options(Waveform(depth=None, memories=True)):
        assert current_waveform() == Waveform(depth=None, memories=True)
        run_pysim(program, image, vcd=full)
    assert current_waveform() == Waveform()
    names, deepest = _parse(small)
    assert "trace__accept" in names and deepest == 3  # bench, the top, the units
    assert not [n for n in names if n.startswith("$")]
    assert not [n for n in names if n.startswith(MEMORY_ROWS)]
    full_names, full_deepest = _parse(full)
    assert full_deepest > 3 and not [n for n in full_names if n.startswith("$")]
    assert set(names) < set(full_names)
    assert all(any(n.startswith(row) for n in full_names) for row in MEMORY_ROWS)
    assert small.stat().st_size < full.stat().st_size


def test_output_stationary_waveform_is_named(tmp_path) -> None:
    program = _program(Dataflow.OS)
    run_pysim(program, program_image(program), vcd=tmp_path / "os.vcd")
    names, _ = _parse(tmp_path / "os.vcd")
    assert "trace__accept" in names and not [n for n in names if n.startswith("$")]


def test_depth_keeps_the_upper_modules(tmp_path) -> None:
    program = _program()
    path = tmp_path / "top.vcd"
    result = run_pysim(program, program_image(program), vcd=path, waveform=Waveform(depth=0))
    names, deepest = _parse(path)
    assert deepest == 2  # the simulator's "bench" scope, then the top module
    assert {"trace__accept", "start", "done"} <= set(names)
    assert path.read_text().count("#") > result.total_cycles


def test_depth_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match=r"^waveform depth must be >= 0 or None, not -1$"):
        Waveform(depth=-1)
