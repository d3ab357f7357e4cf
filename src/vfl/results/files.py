"""The run directory: resolved config, partition, metrics, summary, ledger, checkpoint (no torch).

Layout::

    RUN_DIR/
      config.toml       the resolved configuration
      partition.json    which features each party holds
      metrics.jsonl     one JSON record per evaluation (after every epoch)
      summary.json      final and best metrics, bytes, rounds and time
      ledger.csv        bytes and message counts by round, phase, direction, party and kind
      checkpoint.pt     state after the last completed epoch (for --resume)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from vfl.errors import ConfigError

CONFIG = "config.toml"
PARTITION = "partition.json"
METRICS = "metrics.jsonl"
SUMMARY = "summary.json"
LEDGER = "ledger.csv"
CHECKPOINT = "checkpoint.pt"
COMPUTE = "compute.csv"


class RunDirectory:
    """Reads and writes the files of one run.

    Args:
        path: The run directory (created if missing).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def file(self, name: str) -> Path:
        """Path of a file inside the run directory."""
        return self.path / name

    def write_text(self, name: str, text: str) -> None:
        """Write a text file atomically (write a temporary file, then rename)."""
        target = self.file(name)
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(text)
        os.replace(temporary, target)

    def append_metrics(self, record: dict[str, Any]) -> None:
        """Append one evaluation record to ``metrics.jsonl``."""
        with self.file(METRICS).open("a") as handle:
            handle.write(json.dumps(record, sort_keys=False) + "\n")

    def read_metrics(self) -> list[dict[str, Any]]:
        """All records of ``metrics.jsonl`` (empty if none yet)."""
        path = self.file(METRICS)
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def truncate_metrics(self, epochs: int) -> None:
        """Keep only records of epochs ``<= epochs`` (before resuming from a checkpoint)."""
        kept = [r for r in self.read_metrics() if int(r["epoch"]) <= epochs]
        self.write_text(METRICS, "".join(json.dumps(r) + "\n" for r in kept))

    def write_json(self, name: str, data: dict[str, Any]) -> None:
        """Write a JSON file atomically."""
        self.write_text(name, json.dumps(data, indent=2) + "\n")

    def read_json(self, name: str) -> dict[str, Any]:
        """Read a JSON file of the run."""
        data: dict[str, Any] = json.loads(self.file(name).read_text())
        return data

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """Save ``state`` atomically, replacing the previous checkpoint."""
        target = self.file(CHECKPOINT)
        temporary = target.with_name(target.name + ".tmp")
        import torch  # deferred: reading results must not need torch

        torch.save(state, temporary)
        os.replace(temporary, target)

    def load_checkpoint(self) -> dict[str, Any]:
        """Load the checkpoint (tensors and plain containers only; no arbitrary objects)."""
        path = self.file(CHECKPOINT)
        if not path.exists():
            raise ConfigError(
                f"no checkpoint in {str(self.path)!r}; cannot resume (was the run"
                " started with train.checkpoint = false, or stopped in epoch 1?)"
            )
        import torch

        state: dict[str, Any] = torch.load(path, weights_only=True)
        return state
