"""Count the claims ledgers of docs/reproductions/ and write the index's table from them.

Each reproduction file ends with a ``## Claims ledger`` section of Markdown tables whose rows are
numbered (``| 12 | ...``) and have a ``status`` column reading **reproduced**, **partly**,
**not reproduced** or **not attempted** (possibly followed by a qualification). This script
counts them per paper and rewrites the generated table of ``docs/reproductions/README.md``:

    .venv/bin/python experiments/claims.py --doc           # rewrite the index's table
    .venv/bin/python experiments/claims.py --doc --check   # only say whether it is current
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from vfl.errors import ConfigError
from vfl.experiments.doc_blocks import add_doc_arguments, rewrite_or_check

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "docs/reproductions/README.md"
COMMAND = ".venv/bin/python experiments/claims.py --doc"
PAPERS = (
    ("C-VFL (Castiglia et al., ICML 2022, and its review version)", "cvfl.md"),
    ("FedBCD (Liu et al.)", "fedbcd.md"),
    ("LVFL (Wang et al.)", "lvfl.md"),
    ("VFL-PBM (Tran et al.)", "pbm.md"),
)
STATUSES = ("reproduced", "partly", "not reproduced", "not attempted")
_ROW = re.compile(r"^\| *(\d+) *\|")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def status_of(cell: str) -> str:
    """The status a ledger cell opens with (the longest match: "not reproduced" before ...)."""
    for status in sorted(STATUSES, key=len, reverse=True):
        if cell.startswith(status):
            return status
    raise ConfigError(f"a ledger status cell must open with one of {STATUSES}, got {cell!r}")


def ledger(path: Path) -> dict[int, str]:
    """Each numbered claim of ``path``'s claims ledger and its status.

    Raises:
        ConfigError: the file has no ledger, a table lacks a ``status`` column, a status cell
            is none of the four, or a claim number repeats.
    """
    text = path.read_text(encoding="utf-8")
    if "## Claims ledger" not in text:
        raise ConfigError(f"{path}: no '## Claims ledger' section")
    claims: dict[int, str] = {}
    column = None
    for line in text.split("## Claims ledger", 1)[1].splitlines():
        if not line.startswith("|"):
            column = None
            continue
        cells = _cells(line)
        if column is None:
            if "status" not in cells:
                raise ConfigError(f"{path}: a ledger table has no 'status' column: {line}")
            column = cells.index("status")
            continue
        match = _ROW.match(line)
        if match is None:
            continue  # the header's separator row
        number = int(match[1])
        if number in claims:
            raise ConfigError(f"{path}: claim {number} appears twice in the ledger")
        claims[number] = status_of(cells[column])
    return claims


def index_table(folder: Path = INDEX.parent) -> str:
    """The index's table: claims per paper by status."""
    lines = [
        "| paper | file | claims | reproduced | partly | not reproduced | not attempted |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, file in PAPERS:
        counts = Counter(ledger(folder / file).values())
        cells = [name, f"[{file}]({file})", str(sum(counts.values()))]
        cells += [str(counts[status]) for status in STATUSES]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Rewrite (or check) the index's table, or print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_doc_arguments(parser, INDEX)
    args = parser.parse_args()
    if not args.doc:
        print(index_table())
        return
    blocks = {"claims": index_table()}
    print(rewrite_or_check(INDEX, blocks, check=args.check, command=COMMAND))


if __name__ == "__main__":
    main()
