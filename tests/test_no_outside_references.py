"""No source file points at a file outside the repository (design notes, paper copies).

Papers are cited by title, section and equation; what a maintainer needs beyond that is in
``docs/``. A reference like ``spec cvfl.md section 4.3`` or ``specs/pbm.md`` cannot be followed
from a checkout.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "vfl"

OUTSIDE = re.compile(
    r"\bspecs?/|\.\./shared\b|\bpapers/"
    r"|\bspecs?\s+``?[\w.-]+\.md"
    r"|(?<![/\w-])(cvfl|pbm|fedbcd-lvfl|vfl-pbm|lvfl|fedbcd|datasets|style-anchors)"
    r"(-[\w-]+)?\.(md|txt)\b"
)
"""A path into the design notes or the paper copies kept beside the repository."""

PENDING: set[str] = set()
"""Modules whose references are rewritten on another branch (issue 30); none may be added."""


def outside_references(text: str) -> list[str]:
    """The lines of ``text`` that name a file outside the repository."""
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def test_no_source_file_names_a_file_outside_the_repository() -> None:
    # Execute
    found = {
        str(path.relative_to(SRC)): outside_references(path.read_text(encoding="utf-8"))
        for path in sorted(SRC.rglob("*.py"))
    }

    # Assert
    offending = {name: lines for name, lines in found.items() if lines and name not in PENDING}
    assert not offending, offending
    cleaned = sorted(name for name in PENDING if not found.get(name))
    assert not cleaned, f"remove from PENDING (no reference left): {cleaned}"


@pytest.mark.parametrize(
    "line",
    [
        "(spec cvfl.md section 4.3)",
        "(spec ``pbm.md`` §2.6 B)",
        "see specs/cvfl.md",
        "Paper ``vfl-pbm.txt`` Algorithm 1",
        "in ../shared/DESIGN.md",
    ],
)
def test_the_check_sees_each_form_of_reference(line: str) -> None:
    # Negative control: every form the sources used is caught
    assert outside_references(line) == [line]


@pytest.mark.parametrize(
    "line",
    [
        "docs/privacy.md, step 1",
        "see docs/reproductions/cvfl.md",
        "writes ``table.md`` and ``table.csv``",
        "Castiglia et al. (ICML 2022), Algorithm 1",
    ],
)
def test_references_inside_the_repository_pass(line: str) -> None:
    # Assert
    assert outside_references(line) == []
