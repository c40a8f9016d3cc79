"""Fixtures for the whole suite."""

import pytest


@pytest.fixture(autouse=True)
def _output_to_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test as if standard output went to a pipe: no COLUMNS or LINES.

    The commands fit their tables to COLUMNS when it is set (`terminal_width.table_width`);
    pytest-xdist's workers start with COLUMNS=80 and LINES=24, and a user's shell may export
    them, so without this the same test would see wrapped tables in one run and whole lines in
    another. A test that wants a width sets COLUMNS itself.
    """
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
