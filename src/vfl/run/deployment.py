"""The composition root of a deployment: transports, the party's link, remote parties, session.

``vfl server``, ``vfl serve``, ``vfl predict --deployment`` and ``vfl party`` read their files
and start their processes in ``vfl.deploy``; what carries their messages is built here, next to
the roles and loops (``vfl.run.compose``):

- ``build_server_transport``: the server's gRPC transport, listening as a ``ServerNetwork`` says;
- ``build_party_link``: a party's stream to the server, answering through its ``PartyEndpoint``;
- ``build_control_transport``: in-process parties reached by control messages (alignment and setup
  without a network);
- ``RemoteParties`` and ``build_deployed_session``: the server's session over parties in other
  processes, each saving its own role when the epoch loop checkpoints.

The deployment's control messages (set-up, checkpoint, PSI) and the ``Coordinator`` that sends
them stay in ``vfl.deploy``: they are its vocabulary, defined above this layer
(docs/architecture.md, "The composition root"). ``RemoteParties`` reaches them through the
``PartySetup`` protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import grpc

from vfl.protocol.loop import ServerLoop
from vfl.results.compute import RoundCompute
from vfl.roles.server import Server
from vfl.run.compose import Blueprint, build_loop
from vfl.run.session import Session
from vfl.transport.base import Handler, PartyEndpoint
from vfl.transport.grpc_party import FrameHandler, PartyLink
from vfl.transport.grpc_transport import GrpcTransport
from vfl.transport.inproc import InProcTransport
from vfl.transport.ledger import Ledger
from vfl.transport.retry import RetryPolicy
from vfl.transport.security import PartyCredential, PartyTls, ServerTls


@dataclass(frozen=True)
class ServerNetwork:
    """Where and how the server listens (a deployment's ``[deployment]`` table, as values).

    Attributes:
        credentials: The parties of the run and what authenticates each.
        listen: ``host:port`` to listen on (port 0: a free port).
        policy: Per-attempt timeout, attempts, backoff and reconnect grace of requests.
        control_timeout_s: Per-attempt timeout of control exchanges (alignment, setup).
        keepalive_s: Interval of keepalive pings on idle streams.
        max_bytes: Largest frame accepted.
    """

    credentials: Mapping[int, PartyCredential]
    listen: str
    policy: RetryPolicy
    control_timeout_s: float
    keepalive_s: float
    max_bytes: int


def build_server_transport(
    network: ServerNetwork,
    tls: ServerTls,
    *,
    model: str = "",
    ledger: Ledger | None = None,
    services: Sequence[grpc.GenericRpcHandler] = (),
    service_workers: int = 0,
) -> GrpcTransport:
    """The server's gRPC transport, listening on ``network.listen`` once built.

    ``model``: the run fingerprint of the model a predicting server uses (parties must bring
    bundles of that run); ``services`` are more gRPC services on the same port (``vfl serve``'s
    scoring API), which need ``service_workers`` threads.
    """
    return GrpcTransport(
        network.credentials,
        tls=tls,
        listen=network.listen,
        policy=network.policy,
        control_timeout_s=network.control_timeout_s,
        keepalive_s=network.keepalive_s,
        max_bytes=network.max_bytes,
        ledger=ledger,
        model=model,
        services=services,
        service_workers=service_workers,
    )


@dataclass(frozen=True)
class PartyNetwork:
    """How a party reaches the server (its PARTY.toml, as values).

    Attributes:
        party_id: This party's id.
        address: The server's ``host:port``.
        tls: The CA that signs the server (and the party's client certificate, if mutual).
        token: The party's secret token.
        give_up_s: How long the server may stay unreachable before the party stops.
        keepalive_s: Interval of keepalive pings on an idle stream.
    """

    party_id: int
    address: str
    tls: PartyTls
    token: str
    give_up_s: float
    keepalive_s: float


def build_party_link(
    network: PartyNetwork,
    answer: Handler,
    *,
    model: str = "",
    wrap: Callable[[FrameHandler], FrameHandler] | None = None,
) -> PartyLink:
    """The party's stream to the server, answering each request with ``answer``.

    Every frame goes through the party's ``PartyEndpoint`` (decode, check the sender, answer,
    encode); ``wrap`` wraps that frame handler (an audit log); ``model`` is the run fingerprint
    of the party's model bundle when it predicts.
    """
    handler: FrameHandler = PartyEndpoint(network.party_id, answer).handle_frame
    if wrap is not None:
        handler = wrap(handler)
    return PartyLink(
        network.party_id,
        handler,
        address=network.address,
        tls=network.tls,
        token=network.token,
        give_up_s=network.give_up_s,
        keepalive_s=network.keepalive_s,
        model=model,
    )


def build_control_transport(endpoints: Mapping[int, PartyEndpoint]) -> InProcTransport:
    """In-process parties behind their endpoints, every message encoded and decoded."""
    return InProcTransport(endpoints)


class PartySetup(Protocol):
    """Sets the parties of a deployment up and has them save their roles (``Coordinator``)."""

    def setup(self, restore_round: int) -> Mapping[int, Any]:
        """Build every party's role (restored at ``restore_round`` unless it is -1)."""
        ...

    def checkpoint(self, round_: int) -> None:
        """Have every party save its role's state as of ``round_``."""
        ...


S = TypeVar("S", bound=PartySetup)


class RemoteParties(Generic[S]):
    """The parties of a deployment, as the epoch loop checkpoints them (a ``PartyGroup``).

    ``checkpoint`` makes every party save its role (so the server's checkpoint names a round
    every party saved); ``restore`` sets the parties up again, restored at that round.

    Args:
        coordinator: Sends the parties their set-up and checkpoint messages.
        restored_round: The round the parties were just set up at (their ``restore`` then
            sends nothing), or ``None``.
    """

    def __init__(self, coordinator: S, restored_round: int | None = None) -> None:
        self.coordinator = coordinator
        self.restored_round = restored_round

    def checkpoint(self, rounds: int) -> dict[int, Any]:
        """Have every party save its state as of ``rounds``; the server keeps nothing of it."""
        self.coordinator.checkpoint(rounds)
        return {}

    def restore(self, state: dict[int, Any], rounds: int) -> None:
        """Set every party up again, restored at ``rounds`` (unless it already is)."""
        if self.restored_round != rounds:
            self.coordinator.setup(rounds)
        self.restored_round = None

    def compute_logs(self) -> dict[int, list[RoundCompute]]:
        """Deployed parties keep their compute records in their own checkpoints."""
        return {}


def build_deployed_session(
    blueprint: Blueprint, server: Server, transport: GrpcTransport, parties: RemoteParties[S]
) -> Session[RemoteParties[S]]:
    """The server's run: the configured loop over ``transport``, driving remote ``parties``."""
    loop: ServerLoop = build_loop(blueprint, server, transport)
    return Session(loop, parties)
