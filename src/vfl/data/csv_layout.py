"""Check a CSV file's shape before pandas reads it, which would quietly repair what is wrong.

pandas fills a row that has too few fields with missing values (which then encode as the
category ``missing`` or an imputed mean) and renames a repeated header name ``x`` to ``x.1``.
``check_layout`` refuses both, naming the line, and returns the line of every data row so that
later messages can name lines too.
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path
from typing import TextIO

from vfl.errors import DataError


def check_layout(path: Path) -> list[int]:
    """The file line (from 1, the header is line 1) on which each data row of a CSV file ends.

    Blank lines are skipped, as pandas skips them.

    Raises:
        DataError: if the file is empty, its header repeats a name, or a row has more or fewer
            fields than the header.
    """
    with _open(path) as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise DataError(f"{path} is empty; a table starts with a header line of column names")
        _check_header(path, header)
        lines = []
        for fields in reader:
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            if len(fields) != len(header):
                raise DataError(_width_message(path, reader.line_num, len(fields), header))
            lines.append(reader.line_num)
    return lines


def _open(path: Path) -> TextIO:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
    return path.open(encoding="utf-8-sig", errors="replace", newline="")


def _check_header(path: Path, header: list[str]) -> None:
    seen: dict[str, int] = {}
    for position, name in enumerate(header, start=1):
        if name in seen:
            raise DataError(
                f"{path}: the header names column {name!r} twice (columns {seen[name]} and"
                f" {position}); give every column its own name"
            )
        seen[name] = position


def _width_message(path: Path, line: int, width: int, header: list[str]) -> str:
    fix = "add the missing fields (leave a field empty between commas for a missing value)"
    if width > len(header):
        fix = "remove the extra fields, or quote a value that contains a comma"
    return (
        f"{path} line {line} has {width} fields but the header has {len(header)}"
        f" ({', '.join(header)}); {fix}"
    )
