"""`simulate --vcd` with --vcd-depth/--vcd-memories: the waveform options reach the RTL backend,
a warning on a terminal says that a waveform slows the run, and the options need --vcd."""

import sys
from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.errors import ConfigError
from systolic.sim.rtl.waveform import Waveform, current_waveform
from systolic.simulation import run as simulation_run


def _stop_at_simulation(monkeypatch: pytest.MonkeyPatch) -> list[Waveform]:
    """Replace the simulation by a stub recording the waveform it would write."""
    seen: list[Waveform] = []

    def simulate_model(*args: object, **kwargs: object) -> None:
        seen.append(current_waveform())
        raise ConfigError("stopped before simulating")

    monkeypatch.setattr(simulation_run, "simulate_model", simulate_model)
    return seen


@pytest.mark.parametrize(("options", "waveform"), [
    ([], Waveform()),
    (["--vcd-depth", "2"], Waveform(depth=2)),
    (["--vcd-depth", "all"], Waveform(depth=None)),
    (["--vcd-memories", "--vcd-depth", "0"], Waveform(depth=0, memories=True)),
])  # fmt: skip
def test_options_reach_the_backend_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    options: list[str], waveform: Waveform,
) -> None:  # fmt: skip
    seen = _stop_at_simulation(monkeypatch)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["simulate", "--vcd", str(tmp_path / "run.vcd"), *options]) == 2
    assert seen == [waveform]
    assert current_waveform() == Waveform()  # only for the run
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("systolic: warning: --vcd slows the rtl backend (about 2x")
    assert err[1] == "systolic: error: stopped before simulating"
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(("args", "terminal"), [([], True), (["--vcd", "{tmp}/run.vcd"], False)])
def test_no_warning_without_vcd_or_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str], terminal: bool,
) -> None:  # fmt: skip
    seen = _stop_at_simulation(monkeypatch)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    assert main(["simulate", *(a.replace("{tmp}", str(tmp_path)) for a in args)]) == 2
    assert seen == [Waveform()]
    assert capsys.readouterr().err == "systolic: error: stopped before simulating\n"


@pytest.mark.parametrize("option", [["--vcd-depth", "2"], ["--vcd-memories"]])
def test_waveform_options_need_vcd(option: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", *option]) == 2
    assert capsys.readouterr().err == (
        "systolic: error: --vcd-depth and --vcd-memories need --vcd PATH\n"
    )
