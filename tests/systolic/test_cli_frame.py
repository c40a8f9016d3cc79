import subprocess
import sys

import pytest

import systolic
from systolic.commands.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"systolic {systolic.__version__}"


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: systolic" in capsys.readouterr().out


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["frobnicate"])
    assert stop.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_console_entry_point_runs_as_a_module():
    result = subprocess.run(
        [sys.executable, "-m", "systolic.commands.cli", "--help"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert "usage: systolic" in result.stdout
