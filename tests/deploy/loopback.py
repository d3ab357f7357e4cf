"""A gRPC server and party links in threads of the test process, on loopback."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from vfl.deploy.certs import PkiFiles
from vfl.transport.base import PartyEndpoint
from vfl.transport.chunks import DEFAULT_CHUNK_BYTES
from vfl.transport.grpc_party import FrameHandler, PartyLink
from vfl.transport.grpc_transport import GrpcTransport
from vfl.transport.retry import RetryPolicy
from vfl.transport.security import PartyCredential, PartyTls, ServerTls
from vfl.wire import Ack, EmbedReply, EmbedRequest, Message

FAST = RetryPolicy(attempts=2, timeout_s=0.5, backoff_s=0.05, max_backoff_s=0.1)
"""Short timeouts, so that tests of silent parties take about a second."""

LinkFactory = Callable[..., PartyLink]

OPEN: list[Loopback] = []
"""Loopbacks started and not yet closed; ``conftest`` closes them after each test, so that a
failed assertion never leaves a server or a party thread running (and the session hanging)."""


def server_tls(pki: PkiFiles, *, mutual: bool = True) -> ServerTls:
    return ServerTls(
        cert_chain=pki.server_cert.read_bytes(),
        private_key=pki.server_key.read_bytes(),
        client_ca=pki.ca_cert.read_bytes(),
        mutual=mutual,
    )


def party_tls(pki: PkiFiles, party: int, *, cert_of: int | None = None) -> PartyTls:
    files = pki.parties[cert_of if cert_of is not None else party]
    return PartyTls(pki.ca_cert.read_bytes(), files.cert.read_bytes(), files.key.read_bytes())


def token(pki: PkiFiles, party: int) -> str:
    return pki.parties[party].token.read_text().strip()


def echo(party: int) -> Callable[[Message], Message]:
    def handle(message: Message) -> Message:
        if isinstance(message, EmbedRequest):
            return EmbedReply(round=message.round, embedding=message.ids.float().unsqueeze(1))
        return Ack(round=message.round)

    return handle


def endpoint(party: int, handler: Callable[[Message], Message] | None = None) -> PartyEndpoint:
    return PartyEndpoint(party, handler or echo(party))


def dialing_link(pki: PkiFiles, port: int, party: int, **options: object) -> PartyLink:
    """A link for ``party`` with its own credentials unless ``options`` replace them."""
    defaults: dict[str, object] = {
        "address": f"localhost:{port}",
        "tls": party_tls(pki, party),
        "token": token(pki, party),
        "give_up_s": 1.0,
    }
    defaults.update(options)
    return PartyLink(
        party,
        endpoint(party).handle_frame,
        policy=RetryPolicy(backoff_s=0.05, max_backoff_s=0.1),
        **defaults,  # type: ignore[arg-type]
    )


@dataclass
class Loopback:
    """A running transport and its parties' links."""

    transport: GrpcTransport
    links: dict[int, PartyLink] = field(default_factory=dict)
    threads: dict[int, threading.Thread] = field(default_factory=dict)
    errors: dict[int, BaseException] = field(default_factory=dict)
    closed: bool = False

    def add(self, link: PartyLink) -> PartyLink:
        """Serve ``link`` in a thread (its exception, if any, lands in ``errors``)."""

        def serve() -> None:
            try:
                link.serve()
            except BaseException as error:
                self.errors[link.party_id] = error

        thread = threading.Thread(target=serve, daemon=True, name=f"party-{link.party_id}")
        self.links[link.party_id] = link
        self.threads[link.party_id] = thread
        thread.start()
        return link

    def close(self) -> None:
        """Stop every link and the server (again: a no-op)."""
        if self.closed:
            return
        self.closed = True
        for link in self.links.values():
            link.stop()
        for thread in self.threads.values():
            thread.join(timeout=10)
        self.transport.close()


def start_loopback(
    pki: PkiFiles,
    handlers: Mapping[int, FrameHandler],
    *,
    policy: RetryPolicy = FAST,
    mutual: bool = True,
    parties: tuple[int, ...] | None = None,
    link_class: LinkFactory = PartyLink,
    wait: bool = True,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    **link_options: object,
) -> Loopback:
    """A transport for ``parties`` (default: the handlers' parties) and one link per handler."""
    run_parties = parties if parties is not None else tuple(handlers)
    credentials = {p: PartyCredential(pki.parties[p].token_sha256) for p in run_parties}
    transport = GrpcTransport(
        credentials, tls=server_tls(pki, mutual=mutual), policy=policy, chunk_bytes=chunk_bytes
    )
    loopback = Loopback(transport)
    OPEN.append(loopback)
    for party, handler in handlers.items():
        link = link_class(
            party,
            handler,
            address=f"localhost:{transport.port}",
            tls=party_tls(pki, party),
            token=token(pki, party),
            policy=RetryPolicy(backoff_s=0.05, max_backoff_s=0.2),
            chunk_bytes=chunk_bytes,
            **link_options,
        )
        loopback.add(link)
    if wait:
        transport.wait_for_parties(10, tuple(handlers))
    return loopback
