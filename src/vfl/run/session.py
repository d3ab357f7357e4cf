"""A composed run: the protocol loop and the parties it drives, in this process or elsewhere."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, overload

from vfl.config import RunConfig
from vfl.errors import ConfigError
from vfl.protocol.base import Trainer
from vfl.results.compute import RoundCompute
from vfl.roles.party import Party
from vfl.transport.ledger import Ledger

if TYPE_CHECKING:
    from vfl.run.probe import Probe


class PartyGroup(Protocol):
    """The parties of a run, as the epoch loop checkpoints and reports them."""

    def checkpoint(self, rounds: int) -> dict[int, Any]:
        """Every party's state after ``rounds`` rounds (remote parties save their own)."""
        ...

    def restore(self, state: dict[int, Any], rounds: int) -> None:
        """Bring every party back to a checkpoint taken after ``rounds`` rounds."""
        ...

    def compute_logs(self) -> dict[int, list[RoundCompute]]:
        """Each party's per-round compute records (parties that keep none are left out)."""
        ...


class LocalParties(Sequence[Party]):
    """Parties living in this process, in party order."""

    def __init__(self, parties: Sequence[Party] = ()) -> None:
        self._parties = list(parties)

    @overload
    def __getitem__(self, index: int) -> Party: ...

    @overload
    def __getitem__(self, index: slice) -> list[Party]: ...

    def __getitem__(self, index: int | slice) -> Party | list[Party]:
        """The party at ``index`` (0-based, party order)."""
        return self._parties[index]

    def __len__(self) -> int:
        """Number of parties."""
        return len(self._parties)

    def __iter__(self) -> Iterator[Party]:
        """The parties in order."""
        return iter(self._parties)

    def checkpoint(self, rounds: int) -> dict[int, Any]:
        """Every party's ``state_dict``, by party id."""
        return {party.party_id: party.state_dict() for party in self._parties}

    def restore(self, state: dict[int, Any], rounds: int) -> None:
        """Load every party's ``state_dict``."""
        for party in self._parties:
            party.load_state_dict(state[party.party_id])

    def compute_logs(self) -> dict[int, list[RoundCompute]]:
        """The compute records of every party that prunes or records its compute."""
        return {
            p.party_id: p.options.lightweight.log
            for p in self._parties
            if p.options.lightweight is not None
        }


G = TypeVar("G", bound=PartyGroup, covariant=True)


class Session(Generic[G]):
    """A trainer plus the parties it talks to, as the composition root built them.

    Args:
        trainer: The protocol loop (a ``ServerLoop``, or ``CentralizedTraining``).
        parties: The parties: in this process (``LocalParties``, empty for the centralized
            baseline), or in other processes (a deployment's group).
    """

    def __init__(self, trainer: Trainer, parties: G) -> None:
        self.trainer = trainer
        self.parties: G = parties
        self.probe: Probe | None = None  # an attack watching the run (vfl.attacks), if any
        self.config: RunConfig | None = None  # what it was built from (for vfl.export)

    @property
    def ledger(self) -> Ledger:
        """The communication ledger (the centralized baseline sends nothing and has none)."""
        ledger = self.trainer.ledger
        if ledger is None:
            raise ConfigError("the centralized baseline sends no messages: it has no ledger")
        return ledger

    def compute_logs(self) -> dict[int, list[RoundCompute]]:
        """Each party's per-round compute records."""
        return self.parties.compute_logs()

    def bottom_flops(self) -> int | None:
        """Training FLOPs of every bottom model so far, or ``None`` where unknown."""
        if not isinstance(self.parties, LocalParties) or len(self.parties) == 0:
            return None
        meters = [p.options.lightweight for p in self.parties]
        if any(m is None for m in meters):
            return None
        flops = [m.total_train_flops() for m in meters if m is not None]
        return None if min(flops) < 0 else sum(flops)

    def state_dict(self) -> dict[str, Any]:
        """The trainer's state, every party's, and the probe's."""
        state = {
            "trainer": self.trainer.state_dict(),
            "parties": self.parties.checkpoint(self.trainer.rounds),
        }
        if self.probe is not None:
            state["probe"] = self.probe.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the trainer, then every party at the trainer's round (and the probe)."""
        self.trainer.load_state_dict(state["trainer"])
        self.parties.restore(state["parties"], self.trainer.rounds)
        if self.probe is not None:
            self.probe.load_state_dict(state["probe"])
