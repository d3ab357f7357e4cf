"""The files a sweep reads and writes, readable without torch (reports never import training code).

Layout of a sweep folder::

    SWEEP_DIR/
      sweep.json              the expanded plan: settings, their overrides and run folders
      <setting>__seed<S>/     one run directory per (setting, seed), see ``vfl.results.files``
      results.csv             one row per finished run
      table.md, table.csv     one row per setting: mean ± std over seeds
      <metric>_vs_epoch.png, <metric>_vs_mb.png
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vfl.errors import ConfigError
from vfl.results.files import CHECKPOINT as CHECKPOINT
from vfl.results.files import CONFIG as CONFIG
from vfl.results.files import METRICS as METRICS
from vfl.results.files import SUMMARY as SUMMARY
from vfl.results.files import read_records

ERROR = "error.txt"
MANIFEST = "sweep.json"


@dataclass(frozen=True)
class SettingEntry:
    """One setting of a sweep: its label, folder stem, overrides and runs.

    Attributes:
        label: The row label of tables and legends.
        name: The folder stem of its runs (``<name>__seed<S>``).
        overrides: The setting's own overrides (grid values or a case's ``set``), dotted keys.
        runs: ``(seed, run folder name)`` pairs.
    """

    label: str
    name: str
    overrides: dict[str, Any]
    runs: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class Manifest:
    """The contents of ``sweep.json``: what the reports need to know about a sweep.

    Attributes:
        name: The sweep's name.
        metric: The report metric.
        log_x: Whether the traffic plot uses a logarithmic x axis.
        target: ``(metric, value)`` of the cost-to-target columns, or ``None``.
        label_keys: The config keys that form the labels (columns of ``table.csv``).
        settings: The settings, in sweep order.
    """

    name: str
    metric: str
    log_x: bool
    target: tuple[str, float] | None
    label_keys: tuple[str, ...]
    settings: tuple[SettingEntry, ...]

    def to_json(self) -> str:
        """The manifest as JSON text."""
        data = {
            "name": self.name,
            "metric": self.metric,
            "log_x": self.log_x,
            "target": None
            if self.target is None
            else {"metric": self.target[0], "value": self.target[1]},
            "label_keys": list(self.label_keys),
            "settings": [
                {
                    "label": s.label,
                    "name": s.name,
                    "overrides": s.overrides,
                    "runs": [{"seed": seed, "dir": folder} for seed, folder in s.runs],
                }
                for s in self.settings
            ],
        }
        return json.dumps(data, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """Parse ``sweep.json`` text (as written by ``to_json``)."""
        data = json.loads(text)
        target = data["target"]
        return cls(
            name=str(data["name"]),
            metric=str(data["metric"]),
            log_x=bool(data["log_x"]),
            target=None if target is None else (str(target["metric"]), float(target["value"])),
            label_keys=tuple(data["label_keys"]),
            settings=tuple(
                SettingEntry(
                    label=str(s["label"]),
                    name=str(s["name"]),
                    overrides=dict(s["overrides"]),
                    runs=tuple((int(r["seed"]), str(r["dir"])) for r in s["runs"]),
                )
                for s in data["settings"]
            ),
        )


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Write ``sweep.json`` atomically into ``folder`` (created if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / (MANIFEST + ".tmp")
    temporary.write_text(manifest.to_json())
    os.replace(temporary, folder / MANIFEST)


def read_manifest(folder: Path) -> Manifest:
    """Read ``sweep.json`` from a sweep folder.

    Raises:
        ConfigError: if the folder holds no (valid) ``sweep.json``.
    """
    path = folder / MANIFEST
    try:
        return Manifest.from_json(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{str(folder)!r} is not a sweep folder: it has no {MANIFEST}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"{str(path)!r} is not a valid sweep manifest: {error!r}") from None


def read_metrics(run_dir: Path, *, torn_tail: bool = False) -> list[dict[str, Any]]:
    """The records of ``run_dir/metrics.jsonl``, with ``None`` metric values read as NaN.

    ``torn_tail``: leave out a last line a killed run cut short (``results.files.read_records``).

    Raises:
        ConfigError: if the run directory has no ``metrics.jsonl``, or naming the line of it
            that is not a JSON record.
    """
    path = run_dir / METRICS
    if not path.exists():
        raise ConfigError(f"{str(run_dir)!r} is not a run directory: it has no {METRICS}")
    records = read_records(path, torn_tail=torn_tail)
    return [{k: math.nan if v is None else v for k, v in r.items()} for r in records]
