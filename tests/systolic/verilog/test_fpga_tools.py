"""`systolic.verilog.fpga_tools`: the phase read from a growing log, and the progress lines."""

import io
from pathlib import Path

from systolic.verilog.fpga_tools import (
    NEXTPNR_PHASES,
    YOSYS_PHASES,
    PhaseClock,
    _LogWatcher,
    run_tool,
)


def test_phases_only_move_forward_as_the_log_grows(tmp_path: Path) -> None:
    log = tmp_path / "yosys.log"
    watcher = _LogWatcher(log, YOSYS_PHASES)
    assert watcher.poll() == "read Verilog"  # no log yet
    log.write_text("1. Executing Verilog-2005 frontend: design.v\n3.4. Executing PROC pass\n")
    assert watcher.poll() == "elaborate"
    with open(log, "a") as handle:
        handle.write("3.6. Executing FLATTEN pass\n3.38.1. Executing Verilog-2005 frontend: x\n")
    assert watcher.poll() == "flatten"  # a library read later is no step back
    with open(log, "a") as handle:
        handle.write("5. Executing ABC")
    assert watcher.poll() == "flatten"
    with open(log, "a") as handle:
        handle.write(" pass (technology mapping using ABC).\n")
    assert watcher.poll() == "map LUTs (abc)"  # a marker split between two reads


def test_clock_writes_a_line_per_phase_and_a_minute(monkeypatch) -> None:
    now = [100.0]
    monkeypatch.setattr("systolic.verilog.fpga_tools.time.monotonic", lambda: now[0])
    stream = io.StringIO()
    clock = PhaseClock("fpga ecp5-85k", stream, started=100.0)
    clock.show("pack")
    now[0] = 130.0
    clock.show("pack")
    now[0] = 161.0
    clock.show("pack")
    now[0] = 170.5
    clock.show("place")
    assert stream.getvalue().splitlines() == [
        "fpga ecp5-85k: pack (0.0s)",
        "fpga ecp5-85k: pack (1m01s)",
        "fpga ecp5-85k: place (1m10s)",
    ]
    PhaseClock("silent", None).show("pack")  # no stream: nothing to write


def test_run_tool_logs_and_returns_the_status(tmp_path: Path, monkeypatch) -> None:
    module = tmp_path / "fake_tool.py"
    module.write_text("import sys\ndef run(args):\n    print('Info: Packing IOs..', args)\n"
                      "    return 3\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    stream = io.StringIO()
    status = run_tool("fake_tool", "run", ["--x"], tmp_path, tmp_path / "tool.log",
                      NEXTPNR_PHASES, PhaseClock("t", stream))
    assert status == 3
    assert (tmp_path / "tool.log").read_text() == "Info: Packing IOs.. ['--x']\n"
    assert stream.getvalue().startswith("t: pack (")


def test_run_tool_ends_a_tool_when_told(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "slow_tool.py").write_text(
        "import sys, time\ndef run(args):\n    print('Running main analytical placer')\n"
        "    sys.stdout.flush()\n    time.sleep(600)\n    return 0\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    phases: list[str] = []

    def stop(phase: str) -> bool:
        phases.append(phase)
        return phase == "place"

    status = run_tool("slow_tool", "run", [], tmp_path, tmp_path / "tool.log", NEXTPNR_PHASES,
                      PhaseClock("t", None), stop=stop)
    assert status == -1 and phases[-1] == "place"
