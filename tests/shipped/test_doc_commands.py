"""Every command of README.md and docs/ runs as written, and no doc command goes untested.

Each session runs its commands in order as real processes, in one bash process in a scratch
copy of the repository, and checks each exit status, the output the doc shows (and more that
it implies) and the files it leaves. ``doc_sessions`` states every shortening and placeholder.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.shipped.doc_commands import (
    ROOT,
    Session,
    Workspace,
    all_commands,
    all_python_blocks,
    commands_in,
    python_blocks_in,
)
from tests.shipped.doc_sessions import NOT_RUN, SESSIONS


def flat(text: str) -> str:
    """``text`` with comment marks at line starts dropped and blanks collapsed."""
    return " ".join(re.sub(r"(?m)^\s*#\s?", "", text).split())


def registered() -> set[tuple[str, str]]:
    return {
        (step.doc, step.command)
        for session in SESSIONS
        for step in session.steps
        if not step.python
    }


def registered_python() -> set[tuple[str, str]]:
    return {
        (step.doc, key) for session in SESSIONS for step in session.steps for key in step.python
    }


def test_every_doc_command_is_run_by_a_test_or_named_with_a_reason() -> None:
    # Prepare
    documented = {(command.doc, command.text): command for command in all_commands()}

    # Execute
    untested = [
        f"{command.doc}:{command.line}: {command.text}"
        for key, command in documented.items()
        if key not in registered() and key not in NOT_RUN
    ]
    gone = sorted((registered() | set(NOT_RUN)) - set(documented))

    # Assert: a new or edited doc command needs a step in doc_sessions (or a reason in NOT_RUN),
    # and a step whose command the docs no longer hold goes too
    assert untested == [], "doc commands no test runs:\n" + "\n".join(untested)
    assert gone == [], f"doc_sessions names commands the docs do not hold: {gone}"
    assert all(reason for reason in NOT_RUN.values())


def test_every_python_block_of_the_docs_is_run_by_a_test_or_named_with_a_reason() -> None:
    # Prepare
    blocks = list(all_python_blocks())
    documented = {(block.doc, block.key) for block in blocks}

    # Execute
    untested = [
        f"{block.doc}:{block.line}: {block.key}"
        for block in blocks
        if (block.doc, block.key) not in registered_python() | set(NOT_RUN)
    ]
    gone = sorted(registered_python() - documented)

    # Assert: every block has a key of its own in its document, and a step or a reason
    assert len(documented) == len(blocks), "two python blocks of one doc begin alike"
    assert untested == [], "python blocks no test runs:\n" + "\n".join(untested)
    assert gone == [], f"doc_sessions names python blocks the docs do not hold: {gone}"


def test_the_check_sees_a_python_block_added_to_a_doc(tmp_path: Path) -> None:
    # Prepare: the negative control: a doc with a new block beside a shell block
    doc = tmp_path / "doc.md"
    doc.write_text(
        "```sh\nvfl data list\n```\n  ```python\n  import vfl\n\n  vfl.new_thing(1)  # new\n"
        "  print(2)\n  ```\n"
    )

    # Execute
    found = python_blocks_in(doc, root=tmp_path)

    # Assert
    assert [(b.key, b.line, b.code) for b in found] == [
        ("vfl.new_thing(1)", 5, "import vfl\n\nvfl.new_thing(1)  # new\nprint(2)\n")
    ]
    assert ("doc.md", "vfl.new_thing(1)") not in registered_python()


def test_the_check_sees_a_command_added_to_a_doc(tmp_path: Path) -> None:
    # Prepare: the negative control: a doc with one registered and one new command
    doc = tmp_path / "doc.md"
    doc.write_text("```sh\n.venv/bin/vfl data list\n.venv/bin/vfl data fetch mnist  # new\n```\n")

    # Execute
    found = commands_in(doc, root=tmp_path)

    # Assert
    assert [c.text for c in found] == [".venv/bin/vfl data list", ".venv/bin/vfl data fetch mnist"]
    assert ("doc.md", ".venv/bin/vfl data fetch mnist") not in registered()


def test_the_commands_of_a_block_are_read_as_a_shell_reads_them(tmp_path: Path) -> None:
    # Prepare
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n   ```sh\n   vfl run a.toml \\\n       --set x=1   # shortened\n"
        "   # vfl: error: shown output\n   for s in a b; do\n     echo $s; done\n   ```\n"
        "```text\nvfl run SYNOPSIS [--opt]\n```\n"
    )

    # Execute
    found = commands_in(doc, root=tmp_path)

    # Assert
    assert [(c.text, c.comments) for c in found] == [
        ("vfl run a.toml --set x=1", ("vfl: error: shown output",)),
        ("for s in a b; do\necho $s; done", ()),
    ]


def test_what_a_step_shows_is_in_its_doc() -> None:
    # Execute
    missing = [
        (step.doc, text)
        for session in SESSIONS
        for step in session.steps
        for text in (*step.shown, *(shown for _, shown in step.file_shows))
        if flat(text) not in flat((ROOT / step.doc).read_text(encoding="utf-8"))
    ]

    # Assert
    assert missing == []


@pytest.mark.parametrize(
    "session",
    [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else []) for s in SESSIONS],
)
def test_the_doc_commands_run_as_written(session: Session, tmp_path: Path) -> None:
    # Prepare: a scratch copy of the repository
    workspace = Workspace.create(tmp_path / "repo")
    if session.prepare is not None:
        session.prepare(workspace.folder, workspace.values)
    workspace.start()
    try:
        for step in session.steps:
            # Execute
            outcome = workspace.run(step)

            # Assert
            where = f"{step.doc}: {outcome.ran}\n--- stdout\n{outcome.out[-3000:]}"
            where += f"\n--- stderr\n{outcome.err[-3000:]}"
            assert outcome.status == step.status, where
            for text in (*step.shown, *step.expect):
                assert flat(text) in flat(outcome.printed), f"{text!r} not printed by {where}"
            for name in step.files:
                assert (workspace.folder / name).exists(), f"{name} missing after {where}"
            for name, text in step.file_shows:
                held = (workspace.folder / name).read_text()
                assert flat(text) in flat(held), f"{name} lacks {text!r} after {where}"
    finally:
        workspace.stop()
