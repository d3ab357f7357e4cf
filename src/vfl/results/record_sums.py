"""A checksum per record of ``metrics.jsonl``, kept beside it in ``metrics.jsonl.crc32``.

``metrics.jsonl`` stays plain JSON lines (pandas, jq and TensorBoard's importer read it as
before); its sums file holds one CRC-32 (8 hex digits) per line, appended after the line.
Reading checks every line against its sum, so a record changed after it was written (a
flipped bit, an edit) is told apart from the torn tail a kill leaves:

- a line whose sum differs, more sums than lines (the file was shortened), or more than one
  line without a sum: damage, refused with the file, the line and what to do;
- a last line without its newline: the torn tail a kill leaves (``files.read_records``);
- a last complete line without its sum (a kill between the two appends): read unchecked, and
  its sum written when a resume rewrites the file;
- no sums file (a run from before, or a folder written by hand): read unchecked; the first
  append sums what the file holds.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from vfl.errors import VflError

SUMS_SUFFIX = ".crc32"


class DamagedRecordsError(VflError):
    """A record of a JSON-lines file does not match its checksum; the message names it."""


def sums_path(path: Path) -> Path:
    """Where the sums of ``path`` are kept (``metrics.jsonl`` -> ``metrics.jsonl.crc32``)."""
    return path.with_name(path.name + SUMS_SUFFIX)


def line_sum(line: str) -> str:
    """The CRC-32 of one line's UTF-8 bytes (without its newline), as 8 hex digits."""
    return f"{zlib.crc32(line.encode('utf-8')):08x}"


def append_line(path: Path, line: str) -> None:
    """Append ``line`` and a newline to ``path``, then its sum to the sums file."""
    sums = sums_path(path)
    if path.exists() and not sums.exists():  # a file from before sums: sum what it holds
        held = path.read_text(encoding="utf-8").split("\n")[:-1]
        sums.write_text("".join(line_sum(old) + "\n" for old in held), encoding="ascii")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    with sums.open("a", encoding="ascii") as handle:
        handle.write(line_sum(line) + "\n")


def summed(path: Path, lines: list[str]) -> bool:
    """Whether ``path`` holds exactly ``lines`` and its sums file exactly their sums."""
    sums = sums_path(path)
    return (
        path.exists()
        and sums.exists()
        and path.read_text(encoding="utf-8") == "".join(line + "\n" for line in lines)
        and sums.read_text(encoding="ascii", errors="replace")
        == "".join(line_sum(line) + "\n" for line in lines)
    )


def write_lines(path: Path, lines: list[str]) -> None:
    """Replace ``path`` with ``lines`` and its sums file with theirs (each atomically)."""
    for target, text in (
        (sums_path(path), "".join(line_sum(line) + "\n" for line in lines)),
        (path, "".join(line + "\n" for line in lines)),
    ):
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)


def check_sums(path: Path, lines: list[str]) -> None:
    """Check ``path``'s complete ``lines`` against its sums file (none: nothing to check).

    ``lines`` are ``path``'s complete lines (each ended by a newline), in order. The last of
    them may lack its sum (a kill between the two appends).

    Raises:
        DamagedRecordsError: naming the file, the line, its byte offset and what to do, if a
            line differs from its sum, the file holds fewer lines than sums, or more than one
            line has none.
    """
    sums = sums_path(path)
    if not sums.exists():
        return
    text = sums.read_text(encoding="ascii", errors="replace")
    recorded = text.split("\n")[:-1]  # a last sum without its newline: torn, as if not written
    fix = f"restore {path.name} from a copy, or delete {sums.name} to read it unchecked"
    if len(recorded) > len(lines):
        raise DamagedRecordsError(
            f"{str(path)!r} holds {len(lines)} complete records and {sums.name} {len(recorded)}"
            f" sums: the file was shortened after it was written; {fix}"
        )
    offset = 0
    for number, (line, expected) in enumerate(zip(lines, recorded, strict=False), start=1):
        if line_sum(line) != expected:
            raise DamagedRecordsError(
                f"{str(path)!r} line {number} (byte {offset}) does not match its checksum in"
                f" {sums.name}: the record was changed after it was written (damage or an"
                f" edit), and it is not the last line a kill cuts short; {fix}"
            )
        offset += len(line.encode("utf-8")) + 1
    if len(lines) - len(recorded) > 1:
        raise DamagedRecordsError(
            f"{str(path)!r} lines {len(recorded) + 1} to {len(lines)} have no checksum in"
            f" {sums.name} (a kill leaves at most the last one without): {fix}"
        )
