"""Gradient messages that wait for the next round's batch (pipelined rounds).

With ``LoopOptions.pipeline`` the server does not send a round's gradients on their own: it keeps
them here until it asks for the next round's batch and sends each party both in one request
(``vfl.wire.pipelined``). They are part of the loop's state: a checkpoint keeps them as their
encoded frames, so a resumed run sends exactly the messages an uninterrupted one sends.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from vfl.errors import ProtocolError
from vfl.wire import SERVER_ID, EmbedRequest, Message, decode, encode, pipelined


class WaitingGradients:
    """The gradient message of the last round for each party, until it can travel."""

    def __init__(self) -> None:
        self._messages: dict[int, Message] = {}

    def __bool__(self) -> bool:
        """Whether any message waits."""
        return bool(self._messages)

    def keep(self, messages: Mapping[int, Message]) -> None:
        """Hold ``messages`` (by party) for the next round's batch.

        Raises:
            ProtocolError: if messages of an earlier round still wait (they would be lost).
        """
        if self._messages:
            rounds = sorted({m.round for m in self._messages.values()})
            raise ProtocolError(f"gradients of round {rounds} still wait; send them first")
        self._messages = dict(messages)

    def take(self) -> dict[int, Message]:
        """The waiting messages, which no longer wait."""
        messages, self._messages = self._messages, {}
        return messages

    def with_batch(self, request: EmbedRequest, parties: tuple[int, ...]) -> dict[int, Message]:
        """Each party's request for ``request``'s batch, carrying its waiting gradient if any.

        Raises:
            ProtocolError: if a gradient waits for a party not asked for the batch.
        """
        waiting = self.take()
        if not waiting.keys() <= set(parties):
            stranded = sorted(waiting.keys() - set(parties))
            raise ProtocolError(f"gradients wait for parties {stranded}, not asked for a batch")
        return {p: pipelined(waiting[p], request) if p in waiting else request for p in parties}

    def state_dict(self) -> dict[int, torch.Tensor]:
        """Each waiting message as its encoded frame (checkpoints hold tensors, not objects)."""
        return {
            party: torch.frombuffer(bytearray(encode(message, sender=SERVER_ID)), dtype=torch.uint8)
            for party, message in self._messages.items()
        }

    def load_state_dict(self, state: Mapping[int, torch.Tensor]) -> None:
        """Restore from ``state_dict`` (an empty mapping: nothing waits)."""
        self._messages = {
            int(party): decode(frame.numpy().tobytes()).message for party, frame in state.items()
        }
