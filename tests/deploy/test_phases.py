"""The server's set-up notes: what a fresh or resumed run says it trains next."""

from __future__ import annotations

import pytest

from vfl.deploy.phases import SetupPhases
from vfl.run.progress import Progress


class Notes(Progress):
    """Keeps the notes."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)


@pytest.mark.parametrize(
    ("epochs", "rounds_done", "said"),
    [
        (5, 0, "training 5 epochs of 41 rounds"),
        (1, 0, "training 1 epoch of 41 rounds"),
        (8, 5 * 41, "training from epoch 6 to epoch 8 (41 rounds an epoch)"),
        (8, 5 * 41 + 11, "training from round 11 of epoch 6 to epoch 8 (41 rounds an epoch)"),
        (5, 5 * 41, "the run ended at epoch 5 already: nothing to train"),
    ],
    ids=["fresh", "one epoch", "resumed at an epoch's end", "resumed mid-epoch", "ended"],
)
def test_the_parties_set_up_line_says_what_is_trained_next(
    epochs: int, rounds_done: int, said: str
) -> None:
    # Prepare
    notes = Notes()
    phases = SetupPhases(notes, started=0.0)

    # Execute
    phases.parties_ready(epochs, 41, rounds_done)

    # Assert
    assert notes.lines[-1].startswith("parties set up (")
    assert said in notes.lines[-1]
