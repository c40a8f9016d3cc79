"""Text from a file made safe to print on a terminal.

Names, operator types, producer strings, metadata and topology layer names come from files a
user may not have written. Printed raw, a control character in one can set the terminal's
title, clear the screen or move the cursor, and a newline can forge a line such as
`systolic: error: ...`. `printable` escapes them the way Python's `repr` does (`\\x1b`,
`\\r`, `\\n`, `\\x9b`); JSON output keeps the exact strings, since its encoder escapes them.
"""

__all__ = ["printable"]


def _escape(code: int) -> str:
    return {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}.get(code) or (
        f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
    )


_CONTROL = [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]
"""C0 controls, DEL, C1 controls, and the Unicode line and paragraph separators."""

_ESCAPE_ALL = {code: _escape(code) for code in _CONTROL}
_ESCAPE_INLINE = {code: text for code, text in _ESCAPE_ALL.items() if code not in (0x09, 0x0A)}


def printable(text: str, *, multiline: bool = False) -> str:
    """Return `text` with every control character escaped (C0, DEL, C1 and the Unicode line
    separators), so printing it can neither drive the terminal nor start a new line.

    With `multiline` (free text printed on lines of its own, such as a model's doc string)
    newlines and tabs are kept; inside tables, messages and one-line fields they are escaped
    too."""
    return text.translate(_ESCAPE_INLINE if multiline else _ESCAPE_ALL)
