"""The communication ledger: the encoded size of every message, by round, direction, party and kind.

Sizes are the lengths of the frames the frame format produced, recorded by the transport as it moves
them; nothing here is a formula.
"""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict, Unpack

Direction = Literal["up", "down"]
"""``up``: party to server; ``down``: server to party."""

Phase = Literal["setup", "train", "eval"]
"""Why a message was sent; training cost is usually read from the ``train`` phase alone."""

DIRECTIONS: tuple[Direction, ...] = ("up", "down")
PHASES: tuple[Phase, ...] = ("setup", "train", "eval")
COLUMNS = ("round", "phase", "direction", "party", "kind", "messages", "bytes")
"""A ledger row's values, in the order of ``ledger.csv`` and of a checkpoint's rows."""


class Selection(TypedDict, total=False):
    """Which rows a sum covers: every field given must match (``LedgerFilter``)."""

    round: int | None
    phase: Phase | None
    direction: Direction | None
    party: int | None
    kind: str | None


@dataclass(frozen=True)
class LedgerKey:
    """What a ledger row is about."""

    round: int
    phase: Phase
    direction: Direction
    party: int
    kind: str


@dataclass(frozen=True)
class LedgerFilter:
    """Selects ledger rows; a ``None`` field matches anything."""

    round: int | None = None
    phase: Phase | None = None
    direction: Direction | None = None
    party: int | None = None
    kind: str | None = None

    def matches(self, key: LedgerKey) -> bool:
        """Whether ``key`` agrees with every field that is set."""
        return all(
            wanted is None or wanted == actual
            for wanted, actual in (
                (self.round, key.round),
                (self.phase, key.phase),
                (self.direction, key.direction),
                (self.party, key.party),
                (self.kind, key.kind),
            )
        )


@dataclass
class LedgerCount:
    """How many messages and bytes a ledger row holds."""

    messages: int = 0
    bytes: int = 0


class Ledger:
    """Accumulates encoded message sizes.

    Example:
        >>> ledger = Ledger()
        >>> ledger.record(round=0, phase="train", direction="up", party=1, kind="EmbedReply",
        ...               nbytes=532)
        >>> ledger.total(phase="train")
        532
    """

    def __init__(self) -> None:
        self._rows: dict[LedgerKey, LedgerCount] = defaultdict(LedgerCount)

    def clear(self) -> None:
        """Forget every row (a long-running scoring service keeps no history)."""
        self._rows.clear()

    def record(
        self, *, round: int, phase: Phase, direction: Direction, party: int, kind: str, nbytes: int
    ) -> None:
        """Add one message of ``nbytes`` encoded bytes."""
        row = self._rows[LedgerKey(round, phase, direction, party, kind)]
        row.messages += 1
        row.bytes += nbytes

    def total(self, **selection: Unpack[Selection]) -> int:
        """Total bytes over the rows that match every given filter."""
        return self.count(**selection).bytes

    def messages(self, **selection: Unpack[Selection]) -> int:
        """Number of messages over the rows that match every given filter."""
        return self.count(**selection).messages

    def count(self, **selection: Unpack[Selection]) -> LedgerCount:
        """Messages and bytes summed over the rows that match every given filter."""
        wanted = LedgerFilter(**selection)
        summed = LedgerCount()
        for key, count in self._rows.items():
            if wanted.matches(key):
                summed.messages += count.messages
                summed.bytes += count.bytes
        return summed

    def bytes_by_round(self, *, phase: Phase = "train") -> dict[int, dict[Direction, int]]:
        """Bytes per round and direction for one phase, rounds in ascending order."""
        result: dict[int, dict[Direction, int]] = {}
        for key, count in sorted(self._rows.items(), key=lambda item: item[0].round):
            if key.phase == phase:
                per_round = result.setdefault(key.round, {"up": 0, "down": 0})
                per_round[key.direction] += count.bytes
        return result

    def rows(self) -> list[tuple[LedgerKey, LedgerCount]]:
        """All rows, ordered by round, phase, direction, party and kind."""
        return sorted(
            self._rows.items(),
            key=lambda item: (
                item[0].round,
                item[0].phase,
                item[0].direction,
                item[0].party,
                item[0].kind,
            ),
        )

    def write_csv(self, path: Path) -> None:
        """Write every row to ``path`` as CSV, whole or not at all (a temporary file renamed)."""
        temporary = path.with_name(path.name + ".tmp")
        with temporary.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            writer.writerows(self._flat_rows())
        os.replace(temporary, path)

    def state_dict(self) -> dict[str, list[list[int | str]]]:
        """A plain snapshot (lists of ints and strings) for checkpoints."""
        return {"rows": self._flat_rows()}

    def _flat_rows(self) -> list[list[int | str]]:
        """Every row as its ``COLUMNS`` values, in ``rows`` order."""
        return [
            [key.round, key.phase, key.direction, key.party, key.kind, count.messages, count.bytes]
            for key, count in self.rows()
        ]

    def load_state_dict(self, state: dict[str, list[list[int | str]]]) -> None:
        """Replace the contents with a snapshot from ``state_dict``."""
        self._rows.clear()
        for round_, phase, direction, party, kind, messages, nbytes in state["rows"]:
            if phase not in PHASES or direction not in DIRECTIONS:
                raise ValueError(
                    f"ledger snapshot has an invalid row phase={phase!r}, direction={direction!r}"
                )
            key = LedgerKey(int(round_), phase, direction, int(party), str(kind))
            self._rows[key] = LedgerCount(int(messages), int(nbytes))
