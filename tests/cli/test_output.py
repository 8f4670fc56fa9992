"""The CLI's tables line up as a terminal shows them: wide characters take two columns, combining marks none."""

from __future__ import annotations

from cli.output import table, width


def test_wide_and_combining_characters_are_measured_as_a_terminal_shows_them() -> None:
    assert width("abc") == 3
    assert width("日本語") == 6
    assert width("🚀") == 2
    assert width("e\u0301") == 1  # e + combining acute accent


def test_columns_after_wide_text_line_up() -> None:
    lines = table(("text", "n"), [("日本語のテスト", 1), ("ascii", 2), ("🚀 launch", 3)]).splitlines()
    # the second column starts at the same terminal column on every line
    starts = {width(line[: line.rindex(" ") + 1]) for line in lines[2:]}
    assert len(starts) == 1, lines


def test_long_cells_are_cut_at_the_column_limit_without_splitting_a_wide_character() -> None:
    (row,) = table(("t",), [("語" * 50,)], max_width=9).splitlines()[2:]
    assert row == "語" * 4 + "…"
    assert width(row) <= 9
