"""TensorBoard event files written from the same records as ``metrics.jsonl``.

With ``output.tensorboard = true`` every evaluation record becomes one scalar per numeric field
(``test_accuracy``, ``train_loss``, ``bytes_up``, ``epoch``, ...), at the record's ``round`` as
the step, in ``RUN_DIR/tensorboard/``, through TensorBoard's own writer
(``torch.utils.tensorboard.SummaryWriter``, which needs the ``tensorboard`` package: the
``vfl[tracking]`` extra). Fields without a value (``train_loss`` of epoch 0) are left out.
A resumed run first drops the events after its checkpoint's round, as ``metrics.jsonl`` does.
"""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

FOLDER = "tensorboard"
STEP = "round"


class TensorBoardSink:
    """Writes metrics records as TensorBoard scalars (a ``vfl.results.files.MetricsSink``).

    Args:
        folder: The event files' folder (``RUN_DIR/tensorboard``).

    Raises:
        ModuleNotFoundError: if the ``tensorboard`` package is not installed (named
            ``tensorboard``: ``pip install 'vfl[tracking]'``).
    """

    def __init__(self, folder: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

        self._writer_type = SummaryWriter
        self._folder = Path(folder)
        self._writer: Any = None
        self._purge_step: int | None = None

    def write(self, record: dict[str, Any]) -> None:
        """Add the record's numeric fields at its round, and flush them to disk."""
        writer = self._open()
        step = int(record[STEP])
        for tag, value in scalars(record).items():
            writer.add_scalar(tag, value, global_step=step)
        writer.flush()

    def truncate(self, rounds: int) -> None:
        """Have TensorBoard drop the events after ``rounds`` (set before the first write)."""
        self._purge_step = rounds + 1

    def close(self) -> None:
        """Close the event file."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _open(self) -> Any:
        if self._writer is None:
            self._writer = self._writer_type(log_dir=str(self._folder), purge_step=self._purge_step)
        return self._writer


def scalars(record: dict[str, Any]) -> dict[str, float]:
    """The record's numeric fields but the step, as TensorBoard scalars.

    Example:
        >>> scalars({"epoch": 1, "round": 41, "train_loss": None, "test_loss": 0.5, "x": "a"})
        {'epoch': 1.0, 'test_loss': 0.5}
    """
    return {
        tag: float(value)
        for tag, value in record.items()
        if tag != STEP and isinstance(value, numbers.Real) and not isinstance(value, bool)
    }
