"""Generated blocks in Markdown documents: replaced between their markers, checked, refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from vfl.errors import ConfigError
from vfl.experiments.doc_blocks import (
    doc_cli,
    markers,
    replace_blocks,
    rewrite_or_check,
    stale_figures,
)

DOC = """# Title

Prose before.

<!-- table:alpha:start -->
| old |
<!-- table:alpha:end -->

Prose between.

<!-- table:beta:start -->
old beta
<!-- table:beta:end -->
Prose after.
"""


def test_each_block_s_body_is_replaced_and_the_prose_is_kept() -> None:
    # Prepare
    blocks = {"alpha": "| new |\n|---|", "beta": "new beta"}

    # Execute
    text = replace_blocks(DOC, blocks, source="doc.md")

    # Assert
    assert "| new |\n|---|\n<!-- table:alpha:end -->" in text
    assert "<!-- table:beta:start -->\nnew beta\n<!-- table:beta:end -->\nProse after." in text
    assert "old" not in text
    assert text.replace("| new |\n|---|", "| old |").replace("new beta", "old beta") == DOC


def test_replacing_with_the_same_bodies_changes_nothing() -> None:
    # Prepare
    blocks = {"alpha": "| old |", "beta": "old beta"}

    # Execute
    text = replace_blocks(DOC, blocks, source="doc.md")

    # Assert
    assert text == DOC


@pytest.mark.parametrize("text", [DOC.replace("alpha:start", "alfa:start"), DOC + DOC])
def test_a_missing_or_repeated_marker_is_refused_naming_the_block(text: str) -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match=r"doc\.md: block 'alpha' needs exactly one"):
        replace_blocks(text, {"alpha": "x"}, source="doc.md")


def test_check_mode_fails_on_a_stale_doc_and_writes_nothing(tmp_path: Path) -> None:
    # Prepare
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)

    # Execute / Assert
    with pytest.raises(SystemExit, match="stale: run make-tables"):
        rewrite_or_check(doc, {"alpha": "| new |"}, check=True, command="make-tables")
    assert doc.read_text() == DOC


def test_write_mode_rewrites_the_doc_and_draws_the_figures(tmp_path: Path) -> None:
    # Prepare
    doc, figure = tmp_path / "doc.md", tmp_path / "figure.png"
    doc.write_text(DOC)

    def draw(path: Path) -> Path:
        path.write_bytes(b"drawing")
        return path

    # Execute
    rewrite_or_check(doc, {"beta": "new beta"}, check=False, command="x", figures={figure: draw})

    # Assert
    assert "new beta" in doc.read_text()
    assert figure.read_bytes() == b"drawing"
    assert stale_figures({figure: draw}) == []
    assert rewrite_or_check(doc, {"beta": "new beta"}, check=True, command="x")


def test_a_figure_that_differs_from_its_drawing_is_stale(tmp_path: Path) -> None:
    # Prepare
    figure = tmp_path / "figure.png"
    figure.write_bytes(b"old drawing")

    def draw(path: Path) -> Path:
        path.write_bytes(b"new drawing")
        return path

    # Execute
    stale = stale_figures({figure: draw, tmp_path / "absent.png": draw})

    # Assert
    assert stale == [figure, tmp_path / "absent.png"]
    assert markers("alpha") == ("<!-- table:alpha:start -->\n", "<!-- table:alpha:end -->")


def test_the_command_line_prints_one_block_or_rewrites_the_doc(tmp_path: Path) -> None:
    # Prepare
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    options = {
        "description": "tables",
        "doc": doc,
        "command": "make-tables",
        "blocks": {"alpha": lambda results: f"| {results.name} |", "beta": lambda _: "b"},
        "results": tmp_path / "results",
        "figures": {},
    }

    # Execute
    printed = doc_cli(**options, argv=["--block", "alpha"])  # type: ignore[arg-type]
    doc_cli(**options, argv=["--doc"])  # type: ignore[arg-type]

    # Assert
    assert printed == "| results |"
    assert "<!-- table:alpha:start -->\n| results |\n" in doc.read_text()
    with pytest.raises(SystemExit):
        doc_cli(**options, argv=[])  # type: ignore[arg-type]
