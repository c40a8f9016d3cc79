"""Fuzzing the command line with a seeded corpus of mutated models (fuzz_corpus.py).

Every mutant must either be accepted (exit 0, its output file written) or refused with exit 2
and one `systolic: error: ...` line (warnings before it are `systolic: warning: ...` lines),
within a time bound, leaving no file behind: never exit 3, a traceback, a hang or a crash.
A few hundred mutants run in the default test run, thousands in the slow set.
"""

import signal
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.errors import ModelError

from .fuzz_corpus import corpus


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException, so the command line's handlers let it through."""


@contextmanager
def _time_bound(seconds: int) -> Iterator[None]:
    def ring(_signum: int, _frame: object) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _problem(
    argv: list[str], output: Path, bound: int, capsys: pytest.CaptureFixture[str]
) -> str | None:
    """Run one command as a user would; return what is wrong with the outcome, or None."""
    try:
        with _time_bound(bound), warnings.catch_warnings():
            warnings.simplefilter("default")  # as on the command line, not pytest's "error"
            status = main(argv)
    except _Timeout:
        capsys.readouterr()
        return f"no answer within {bound} s"
    except SystemExit as stop:  # argparse
        status = int(stop.code or 0)
    err = capsys.readouterr().err
    lines = err.splitlines()
    if status == 0:
        return None if output.exists() else "exit 0 but the output file is missing"
    if status != 2:
        return f"exit {status}: {err.strip()[:300]}"
    errors = [line for line in lines if line.startswith("systolic: error: ")]
    others = [line for line in lines if not line.startswith("systolic: warning: ")]
    if errors != [lines[-1]] or others != errors:
        return f"exit 2 but not one error line: {err[:300]!r}"
    if output.exists():
        return "exit 2 but the output file was written"
    return None


def _fuzz(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    count: int,
    seed: int,
    command: list[str],
    bound: int,
) -> None:
    failures = []
    for name, data in corpus(count, seed):
        model = tmp_path / f"{name}.onnx"
        model.write_bytes(data)
        output = tmp_path / f"{name}.json"
        argv = [command[0], str(model), *command[1:], "--json", str(output)]
        problem = _problem(argv, output, bound, capsys)
        if problem is not None:
            failures.append(f"{name} (corpus seed {seed}): {problem}")
        model.unlink()
        output.unlink(missing_ok=True)
    assert failures == [], "\n".join(failures)


INSPECT = ["inspect"]
SIMULATE = ["simulate", "--backend", "model", "--no-onnxruntime", "--quiet"]


def test_inspect_survives_mutated_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fuzz(tmp_path, capsys, count=400, seed=1, command=INSPECT, bound=20)


def test_simulate_survives_mutated_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fuzz(tmp_path, capsys, count=100, seed=2, command=SIMULATE, bound=60)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 14))
def test_inspect_survives_thousands_of_mutants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int
) -> None:
    _fuzz(tmp_path, capsys, count=1000, seed=seed, command=INSPECT, bound=30)


@pytest.mark.slow
def test_simulate_survives_hundreds_of_mutants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fuzz(tmp_path, capsys, count=1000, seed=20, command=SIMULATE, bound=120)


def test_the_check_catches_internal_errors_and_stray_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import systolic.commands.inspect as inspect_command

    output = tmp_path / "out.json"

    def broken(_args: object) -> int:
        raise RuntimeError("a bug")

    def chatty(_args: object) -> int:
        output.write_text("{}")
        print("a stray line", file=sys.stderr)
        raise ModelError("refused")

    monkeypatch.setattr(inspect_command, "run", broken)
    assert (_problem(["inspect"], output, 5, capsys) or "").startswith("exit 3: systolic: internal")
    monkeypatch.setattr(inspect_command, "run", chatty)
    assert (_problem(["inspect"], output, 5, capsys) or "").startswith("exit 2 but not one error")
