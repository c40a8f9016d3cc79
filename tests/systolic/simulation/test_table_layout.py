"""Text tables fitted to a width: whole, wrapped into blocks of column groups, or long."""

from systolic.simulation.table_layout import fit, grid, long_form

HEADER = ("layer", "MACs", "a: cycles", "util", "b: cycles", "util")
ROWS = (("conv1", "1,024", "500", "20%", "400", "25%"),
        ("fc", "64", "30", "2%", "", "-"))  # fmt: skip


def test_grid_aligns_the_first_columns_left_and_the_rest_right() -> None:
    assert grid(("name", "n"), (("a", "1"), ("bb", "22")), 1) == [
        "name   n",
        "a      1",
        "bb    22",
    ]


def test_a_table_that_fits_is_the_grid() -> None:
    assert fit(HEADER, ROWS, left=1, width=None, keep=2, group=2) == grid(HEADER, ROWS, 1)
    widest = max(map(len, grid(HEADER, ROWS, 1)))
    assert fit(HEADER, ROWS, left=1, width=widest, keep=2, group=2) == grid(HEADER, ROWS, 1)


def test_groups_wrap_into_blocks_that_repeat_the_leading_columns() -> None:
    lines = fit(HEADER, ROWS, left=1, width=30, keep=2, group=2)
    first = [[row[i] for i in (0, 1, 2, 3)] for row in ROWS]
    second = [[row[i] for i in (0, 1, 4, 5)] for row in ROWS]
    assert lines == [*grid(HEADER[:4], first, 1), "",
                     *grid([HEADER[i] for i in (0, 1, 4, 5)], second, 1)]  # fmt: skip
    assert max(map(len, lines)) <= 30


def test_past_any_block_the_long_format_has_a_line_per_group() -> None:
    lines = fit(HEADER, ROWS, left=1, width=20, keep=2, group=2)
    assert lines == long_form(HEADER, ROWS, 20, 2, 2)
    assert lines[:3] == ["conv1: MACs 1,024", "  a: cycles 500,", "    util 20%"]
    assert lines[-1] == "  util -"  # empty cells are left out


def test_long_format_without_groups_puts_the_other_cells_on_one_line() -> None:
    assert long_form(("layer", "op", "cycles"), (("c", "QConv", "9"),), 80) == [
        "c",
        "  op QConv, cycles 9",
    ]
