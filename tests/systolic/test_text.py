"""`printable`: control characters escaped, ordinary text (any script) untouched."""

import unicodedata

import pytest

from systolic.text import printable


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("conv1", "conv1"),
        ("Grüße 卷积 ß", "Grüße 卷积 ß"),
        ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
        ("a\rb", "a\\rb"),
        ("x\nsystolic: error: fake", "x\\nsystolic: error: fake"),
        ("tab\there", "tab\\there"),
        ("\x00\x7f\x9b\x85", "\\x00\\x7f\\x9b\\x85"),
        ("line\u2028sep\u2029", "line\\u2028sep\\u2029"),
    ],
)
def test_control_characters_are_escaped(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_multiline_keeps_newlines_and_tabs_only() -> None:
    assert printable("a\n\tb\r\x1b[31m", multiline=True) == "a\n\tb\\r\\x1b[31m"


def test_no_control_character_or_line_break_survives() -> None:
    every = "".join(map(chr, range(0x3000)))
    left = {c for c in printable(every) if unicodedata.category(c) in ("Cc", "Zl", "Zp")}
    assert left == set()
    assert len(printable(every).splitlines()) == 1
