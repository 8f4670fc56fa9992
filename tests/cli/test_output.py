"""The CLI's tables line up as a terminal shows them: wide characters take two columns, combining marks none."""

from __future__ import annotations

from groove.cli.output import human, pairs, table, width


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


def test_human_output_never_shows_a_python_repr() -> None:
    assert human(None) == "-"
    assert human({"type": "user_created"}) == "user_created"
    assert human({"type": "transcript", "session_id": "s-1"}) == "transcript, session_id s-1"
    assert human(["a", "b"]) == "a, b"
    assert human([]) == "-"
    assert human(True) == "yes"
    lines = pairs([("source", {"type": "user_created"}), ("pattern", None)]).splitlines()
    assert lines == ["source   user_created", "pattern  -"]
    (row,) = table(("tags", "n"), [(["x", "y"], None)]).splitlines()[2:]
    assert row == "x, y"  # an empty cell stays empty in a table
