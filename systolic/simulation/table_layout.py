"""Text tables that fit a width: the per-layer tables of `simulate` and `compare`.

`grid` lays cells out in aligned columns. `fit` keeps that layout when it is no wider than
`width`; past it, a table whose columns come in repeated groups (compare's configurations side
by side) is wrapped into blocks of as many groups as fit, each repeating the leading columns,
and anything that still does not fit switches to the long format (`long_form`: a row's first
cell on a line, then its other cells as "column value" pairs, a line per group, wrapped).
"""

import textwrap
from collections.abc import Iterable, Sequence

__all__ = ["fit", "grid", "long_form"]


def grid(header: Sequence[str], rows: Sequence[Sequence[str]], left: int) -> list[str]:
    """Lay out cells in columns: the first `left` columns left-aligned, the others right."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    return [
        "  ".join(
            cell.ljust(widths[i]) if i < left else cell.rjust(widths[i])
            for i, cell in enumerate(cells)
        ).rstrip()
        for cells in (header, *rows)
    ]


def _pairs(header: Sequence[str], row: Sequence[str], columns: Iterable[int]) -> str:
    return ", ".join(f"{header[i]} {row[i]}" for i in columns if row[i])


def long_form(
    header: Sequence[str], rows: Sequence[Sequence[str]], width: int, keep: int = 1,
    group: int = 0,
) -> list[str]:  # fmt: skip
    """Return each row as its first cell (with its next `keep` - 1 cells as "column value"
    pairs), then its other non-empty cells as pairs, one indented line per group of `group`
    columns (all on one line without groups), wrapped to `width`."""
    rest = range(keep, len(header))
    groups = [rest[i : i + group] for i in range(0, len(rest), group)] if group else [rest]
    lines = []
    for row in rows:
        first = _pairs(header, row, range(1, keep))
        lines.append(f"{row[0]}: {first}" if first else row[0])
        for columns in groups:
            lines += textwrap.wrap(_pairs(header, row, columns), max(width, 20),
                                   initial_indent="  ", subsequent_indent="    ",
                                   break_on_hyphens=False)  # fmt: skip
    return lines


def _blocks(
    header: Sequence[str], rows: Sequence[Sequence[str]], left: int, width: int,
    keep: int, group: int,
) -> list[str] | None:  # fmt: skip
    """Return the table wrapped into blocks of whole column groups, or None when one group
    with the leading columns is already too wide."""
    starts = list(range(keep, len(header), group))
    lines: list[str] = []
    while starts:
        taken, block = 0, None
        for count in range(1, len(starts) + 1):
            columns = [*range(keep), *range(starts[0], starts[count - 1] + group)]
            candidate = grid([header[i] for i in columns],
                             [[row[i] for i in columns] for row in rows], left)  # fmt: skip
            if max(map(len, candidate)) > width:
                break
            taken, block = count, candidate
        if block is None:
            return None
        lines += ([""] if lines else []) + block
        starts = starts[taken:]
    return lines


def fit(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int, width: int | None,
    keep: int = 1, group: int = 0,
) -> list[str]:  # fmt: skip
    """Return the table as `grid` lays it out when that fits `width` (None: any width); else
    wrapped into blocks (when the columns after the first `keep` come in groups of `group`),
    else in the long format (`long_form`)."""
    lines = grid(header, rows, left)
    if width is None or max(map(len, lines)) <= width:
        return lines
    if group:
        blocks = _blocks(header, rows, left, width, keep, group)
        if blocks is not None:
            return blocks
    return long_form(header, rows, width, keep, group)
