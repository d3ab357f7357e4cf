"""What the epoch loop shows on the terminal: a bar per epoch and one line per evaluation."""

from __future__ import annotations

import math
from typing import Any

from tqdm import tqdm


class RoundBar:
    """A tqdm bar over one epoch's rounds that shows the running loss.

    Args:
        epoch: The epoch (0-based).
        epochs: Epochs of the run.
        total: Rounds of the epoch.
        enabled: Show the bar (on a terminal only).
        done: Rounds already done (a resumed epoch).
    """

    def __init__(self, epoch: int, epochs: int, total: int, enabled: bool, done: int = 0) -> None:
        self._bar = tqdm(
            total=total,
            initial=done,
            desc=f"epoch {epoch + 1}/{epochs}",
            unit="round",
            leave=False,
            disable=None if enabled else True,  # None: only on a terminal
            dynamic_ncols=True,
        )
        self._loss = math.nan

    def __call__(self, loss: float) -> None:
        """Count one round and its loss."""
        self._loss = loss if math.isnan(self._loss) else 0.9 * self._loss + 0.1 * loss
        self._bar.update(1)
        if self._bar.n % 20 == 0:
            self._bar.set_postfix(loss=f"{self._loss:.4f}", refresh=False)

    def __enter__(self) -> RoundBar:
        """The bar itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the bar."""
        self._bar.close()


def describe(record: dict[str, Any]) -> str:
    """One line for an epoch's metrics record: ``epoch 3 | train_loss 0.41 | ... | 1.2s``."""
    parts = [f"epoch {record['epoch']}"]
    if record["train_loss"] is not None:
        parts.append(f"train_loss {record['train_loss']:.4f}")
    parts += [f"{k} {v:.4f}" for k, v in record.items() if k.startswith("test_")]
    if "bytes_up" in record:
        megabytes = (record["bytes_up"] + record["bytes_down"]) / 2**20
        parts.append(f"train_traffic {megabytes:.1f} MiB")
    if "epsilon" in record:
        parts.append(f"epsilon {record['epsilon']:.3g}")
    parts.append(f"{record['epoch_train_seconds']:.1f}s")
    return " | ".join(parts)
