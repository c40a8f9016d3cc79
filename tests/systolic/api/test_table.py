import pytest

from systolic.api.table import Table


def test_text_aligns_numbers_right_and_names_left() -> None:
    table = Table(("layer", "macs", "util"), (("a", 12345, 0.25), ("bb", 7, 1.0)))
    assert str(table).splitlines() == [
        "layer    macs  util",
        "a      12,345  0.25",
        "bb          7     1",
    ]


def test_html_escapes_names_and_title() -> None:
    table = Table(("<b>",), (("x&y",),), title="<script>")
    assert table._repr_html_() == (
        "<table><caption>&lt;script&gt;</caption><thead><tr><th>&lt;b&gt;</th></tr></thead>"
        "<tbody><tr><td>x&amp;y</td></tr></tbody></table>"
    )


def test_control_characters_are_escaped_in_text() -> None:
    assert "\x1b" not in str(Table(("name",), (("evil\x1b[2J",),)))


def test_a_row_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^a row has 1 cells for 2 columns$"):
        Table(("a", "b"), ((1,),))


def test_dicts_and_columns() -> None:
    table = Table(("a", "b"), ((1, 2), (3, 4)))
    assert table.dicts() == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert table.column("b") == (2, 4)
    assert len(table) == 2
