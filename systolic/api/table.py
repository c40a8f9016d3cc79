"""`Table`: a pandas-free table of report rows, shown as text and as HTML in Jupyter.

>>> from systolic.api.table import Table
>>> table = Table(("layer", "cycles"), (("conv<1>", 120), ("fc", 7)), title="LeNet")
>>> print(table)
LeNet
layer    cycles
conv<1>     120
fc            7
>>> table.dicts()[1]
{'layer': 'fc', 'cycles': 7}
>>> table.column("cycles")
(120, 7)
>>> "conv&lt;1&gt;" in table._repr_html_()
True
"""

import dataclasses
import html
from typing import Any

from systolic.text import printable

__all__ = ["Table"]


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return printable(str(value))


@dataclasses.dataclass(frozen=True)
class Table:
    """Rows of values under named columns: `rows` are tuples in `columns` order.

    `dicts()` gives the rows as dictionaries (for `pandas.DataFrame(table.dicts())` or
    `csv.DictWriter`); `str(table)` is an aligned text table (numbers right-aligned) and
    `_repr_html_()` an HTML table, every cell escaped, which Jupyter shows."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    title: str = ""

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a row has {len(row)} cells for {len(self.columns)} columns")

    def dicts(self) -> list[dict[str, Any]]:
        """Return the rows as dictionaries keyed by column name."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def column(self, name: str) -> tuple[Any, ...]:
        """Return the values of column `name`, top to bottom."""
        index = self.columns.index(name)
        return tuple(row[index] for row in self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        cells = [[_text(value) for value in row] for row in self.rows]
        numeric = [all(isinstance(row[i], int | float) for row in self.rows) and bool(self.rows)
                   for i in range(len(self.columns))]  # fmt: skip
        widths = [max([len(name), *(len(row[i]) for row in cells)])
                  for i, name in enumerate(self.columns)]  # fmt: skip
        lines = [self.title] if self.title else []
        for row in ([printable(c) for c in self.columns], *cells):
            padded = (cell.rjust(widths[i]) if numeric[i] else cell.ljust(widths[i])
                      for i, cell in enumerate(row))  # fmt: skip
            lines.append("  ".join(padded).rstrip())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(name)}</th>" for name in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_text(value))}</td>" for value in row) + "</tr>"
            for row in self.rows
        )
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
