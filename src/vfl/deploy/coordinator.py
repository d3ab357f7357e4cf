"""The server's control of the parties' roles: set-up (fresh or restored) and checkpoints."""

from __future__ import annotations

import torch

from vfl.config import RunConfig
from vfl.config.io import to_toml
from vfl.deploy.config import party_view
from vfl.deploy.control import ask
from vfl.deploy.messages import CheckpointRequest, ControlAck, SetupReply, SetupRequest
from vfl.transport.grpc_transport import GrpcTransport


class Coordinator:
    """Sets up, checkpoints and restores the parties' roles through control messages.

    Args:
        transport: Reaches the parties.
        config: The run config.
        alignment_id: The alignment every holder orders its rows by.
        connect_timeout_s: How long to wait for parties to (re)connect before a setup.
    """

    def __init__(
        self,
        transport: GrpcTransport,
        config: RunConfig,
        alignment_id: str,
        *,
        train_labels: torch.Tensor,
        num_classes: int,
        connect_timeout_s: float,
    ) -> None:
        self.transport = transport
        self.config_text = to_toml(party_view(config))
        self.alignment_id = alignment_id
        shared = config.protocol.labels == "shared"
        self.labels = train_labels if shared else torch.zeros(0, dtype=torch.int64)
        self.num_classes = num_classes
        self.connect_timeout_s = connect_timeout_s

    def setup(self, restore_round: int) -> dict[int, SetupReply]:
        """Build every party's role (restored at ``restore_round`` unless it is -1)."""
        transport = self.transport
        transport.wait_for_parties(self.connect_timeout_s)
        transport.unpin()
        request = SetupRequest(
            round=max(restore_round, 0),
            config=self.config_text,
            alignment=self.alignment_id,
            restore_round=restore_round,
            num_parties=len(transport.party_ids),
            num_classes=self.num_classes,
            labels=self.labels,
        )
        replies = ask(transport, dict.fromkeys(transport.party_ids, request), SetupReply)
        transport.pin({party: transport.answered_by(party) for party in replies})
        return replies

    def checkpoint(self, round_: int) -> None:
        """Have every party save its role's state as of ``round_``."""
        request = CheckpointRequest(round=round_)
        ask(self.transport, dict.fromkeys(self.transport.party_ids, request), ControlAck)
