"""Write sweep results as Markdown and CSV: ``table.md``, ``table.csv`` and ``results.csv``.

Markdown cells read ``mean ± std``; "–" marks a value that is undefined (a seed never reached
the target, or no finished run). CSV cells hold plain numbers, empty where undefined.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vfl.experiments.aggregate import SettingRow, Stat, mean_std
from vfl.results.summary import Target

DASH = "–"


def markdown_table(
    rows: Sequence[SettingRow], *, title: str, metric: str, target: Target | None
) -> str:
    """``table.md``: a title, the caption, and one row per setting (:func:`markdown_rows`)."""
    lines = [f"# {title}", "", _caption(target), ""]
    return "\n".join(lines) + "\n" + markdown_rows(rows, metric=metric, target=target) + "\n"


def markdown_rows(rows: Sequence[SettingRow], *, metric: str, target: Target | None) -> str:
    """The bare Markdown table: one row per setting, mean ± population std over its seeds."""
    header = ["setting", "seeds", f"best {metric}", f"max {metric} reached (epoch)"]
    if target is not None:
        goal = f"{target.metric} {'≥' if target.higher_is_better else '≤'} {target.value:g}"
        header += [f"MB to {goal}", f"rounds to {goal}", "seeds reaching it"]
    lines = [_markdown_line(header), _markdown_line(["---"] * len(header))]
    for row in rows:
        cells = [_escape(row.label), str(row.num_runs), _pm(row.best, ".4f")]
        epoch = f" ({row.max_epoch})" if row.max_epoch >= 0 else ""
        cells.append(_pm(row.max_reached, ".4f") + epoch)
        if row.target is not None:
            megabytes = row.target.megabytes
            spec = ".2f" if megabytes is None or megabytes.mean >= 1 else ".4f"
            cells += [_pm(megabytes, spec), _pm(row.target.rounds, ".1f")]
            cells.append(f"{row.target.reached}/{row.target.runs}")
        lines.append(_markdown_line(cells))
    return "\n".join(lines)


def setting_records(
    rows: Sequence[SettingRow], *, metric: str, columns: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``table.csv`` rows: the label, the label keys' values (``columns[label]``), numbers."""
    records = []
    for row in rows:
        record: dict[str, Any] = {"setting": row.label, **columns.get(row.label, {})}
        record["seeds"] = row.num_runs
        record |= _stat(f"best_{metric}", row.best)
        record |= _stat(f"max_{metric}_reached", row.max_reached)
        record[f"max_{metric}_epoch"] = row.max_epoch if row.max_epoch >= 0 else None
        if row.target is not None:
            record |= {"target_reached": row.target.reached, "target_runs": row.target.runs}
            record |= _stat("mb_to_target", row.target.megabytes)
            record |= _stat("rounds_to_target", row.target.rounds)
        records.append(record)
    return records


def markdown_grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A bare Markdown table of ``header`` and ``rows`` (cells already formatted)."""
    lines = [_markdown_line(header), "|" + "---|" * len(header)]
    return "\n".join(lines + [_markdown_line(row) for row in rows])


def seeds_cell(values: Sequence[float], runs: int, spec: str = ".1f") -> str:
    """``mean ± std`` (population) when every one of ``runs`` gave a value, else ``– (k/n)``.

    >>> seeds_cell([1.0, 3.0], 2), seeds_cell([1.0], 3)
    ('2.0 ± 1.0', '– (1/3)')
    """
    if len(values) < runs or not values:
        return f"{DASH} ({len(values)}/{runs})"
    stat = mean_std(values)
    return f"{stat.mean:{spec}} ± {stat.std:{spec}}"


def write_csv(path: Path, records: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``records`` as CSV; the header is the union of their keys in first-seen order."""
    fields = list(dict.fromkeys(key for record in records for key in record))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for record in records:
            writer.writerow({key: _csv_value(value) for key, value in record.items()})
    return path


def _caption(target: Target | None) -> str:
    text = (
        "Mean ± population std (numpy.std, ddof=0) over the finished seeds of each setting."
        " Best: each run's best evaluation, averaged. Max reached: the best point of the"
        " seed-averaged curve, ± the std at that epoch."
    )
    if target is not None:
        text += (
            " Cost to target: training traffic (up + down, MB = 2^20 bytes) and rounds at each"
            f" run's first evaluation that meets it; {DASH} when any seed never did."
        )
    return text


def _stat(name: str, stat: Stat | None) -> dict[str, float | None]:
    if stat is None:
        return {f"{name}_mean": None, f"{name}_std": None}
    return {f"{name}_mean": stat.mean, f"{name}_std": stat.std}


def _pm(stat: Stat | None, spec: str) -> str:
    if stat is None or math.isnan(stat.mean):
        return DASH
    return f"{stat.mean:{spec}} ± {stat.std:{spec}}"


def _csv_value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, list | tuple):
        return " ".join(map(str, value))
    return value


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def _markdown_line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
