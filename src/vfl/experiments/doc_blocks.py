"""Generated blocks in Markdown documents: tables written from committed results, kept current.

A document marks each generated block with a pair of comments,
``<!-- table:NAME:start -->`` and ``<!-- table:NAME:end -->``; a reproduction's table script
computes every block's text from its committed results, and :func:`rewrite_or_check` either
writes the fresh blocks into the document or only reports whether they are current (what a test
or CI runs). Text outside the markers is never touched. Figures work alike: each committed PNG
is redrawn from the results, or compared byte for byte with a fresh drawing.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from vfl.errors import ConfigError


def add_doc_arguments(parser: argparse.ArgumentParser, doc: Path) -> None:
    """``--doc`` (rewrite ``doc``'s generated tables and figures) and ``--check`` (only compare)."""
    parser.add_argument("--doc", action="store_true", help=f"the tables and figures of {doc.name}")
    parser.add_argument("--check", action="store_true", help="with --doc: change nothing")


def markers(name: str) -> tuple[str, str]:
    """The start and end comments of the block ``name``."""
    return f"<!-- table:{name}:start -->\n", f"<!-- table:{name}:end -->"


def replace_blocks(text: str, blocks: Mapping[str, str], *, source: str) -> str:
    """``text`` with the body of every block in ``blocks`` replaced by its new text.

    Raises:
        ConfigError: ``text`` (read from ``source``) lacks a block's markers, or holds them
            more than once.
    """
    for name, body in blocks.items():
        start, end = markers(name)
        if text.count(start) != 1 or text.count(end) != 1:
            raise ConfigError(
                f"{source}: block {name!r} needs exactly one {start.strip()} and one {end}"
                f" (found {text.count(start)} and {text.count(end)})"
            )
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{start}{body.rstrip()}\n{end}{tail}"
    return text


Draw = Callable[[Path], Path]
"""Draws one figure into the given PNG path (and returns it)."""


def stale_figures(figures: Mapping[Path, Draw]) -> list[Path]:
    """The committed figures that differ from (or lack) what their drawing gives now."""
    stale = []
    with tempfile.TemporaryDirectory() as scratch:
        for index, (path, draw) in enumerate(figures.items()):
            fresh = draw(Path(scratch) / f"{index}.png").read_bytes()
            if not path.is_file() or path.read_bytes() != fresh:
                stale.append(path)
    return stale


def rewrite_or_check(
    doc: Path,
    blocks: Mapping[str, str],
    *,
    check: bool,
    command: str,
    figures: Mapping[Path, Draw] | None = None,
) -> str:
    """Write ``blocks`` into ``doc`` and redraw ``figures``, or with ``check`` only compare.

    Args:
        doc: The Markdown document.
        blocks: The generated text of each block, by name.
        check: Change nothing; fail when the document or a figure is not current.
        command: The command that brings them up to date (named in the failure).
        figures: Each committed PNG and how to draw it from the results.

    Returns:
        A one-line message for the user.

    Raises:
        SystemExit: with ``check``, when ``doc`` or a figure differs from what the results give.
    """
    current = doc.read_text(encoding="utf-8")
    fresh = replace_blocks(current, blocks, source=str(doc))
    figures = figures or {}
    if check:
        stale = [str(doc)] if fresh != current else []
        stale += [str(path) for path in stale_figures(figures)]
        if stale:
            raise SystemExit(f"{', '.join(stale)} stale: run {command}")
        return f"{doc}: every generated table and figure equals what the committed results give"
    if fresh != current:
        doc.write_text(fresh, encoding="utf-8")
    for path, draw in figures.items():
        draw(path)
    return f"{doc}: {len(blocks)} tables and {len(figures)} figures written from the results"


Make = Callable[[Path], str]
"""Computes one block's text from a results folder."""


def render_blocks(makers: Mapping[str, Make], results: Path) -> dict[str, str]:
    """Every block's text, computed from the results under ``results``."""
    return {name: make(results) for name, make in makers.items()}


def doc_cli(
    *,
    description: str,
    doc: Path,
    command: str,
    blocks: Mapping[str, Make],
    results: Path,
    figures: Mapping[Path, Draw],
    argv: list[str] | None = None,
) -> str:
    """A reproduction script's command line: ``--doc [--check]`` or ``--block NAME``.

    Returns:
        The message or block text to print.
    """
    parser = argparse.ArgumentParser(description=description)
    add_doc_arguments(parser, doc)
    parser.add_argument("--block", choices=sorted(blocks), help="print this block only")
    args = parser.parse_args(argv)
    if args.block:
        return blocks[args.block](results)
    if not args.doc:
        parser.error("give --doc (with --check to only check) or --block NAME")
    texts = render_blocks(blocks, results)
    return rewrite_or_check(doc, texts, check=args.check, command=command, figures=figures)
