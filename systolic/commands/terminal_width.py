"""The width the commands fit their text tables to."""

import os
import shutil
import sys

__all__ = ["table_width"]


def table_width() -> int | None:
    """Return the terminal's width in columns when standard output is a terminal or COLUMNS
    is set; else None (output to a file or a pipe keeps whole lines, for tools that read it)."""
    if not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        return None
    return shutil.get_terminal_size().columns
