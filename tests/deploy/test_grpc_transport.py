"""The gRPC transport beyond the shared contract: security, bad frames, timeouts, reconnection."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
import torch

from tests.deploy.loopback import FAST, party_tls, start_loopback, token
from tests.deploy.rogue import EMBEDDING_REASONS, JUNK_REASONS, RogueLink
from tests.deploy.scenario import free_port
from vfl.deploy.certs import PkiFiles, create_test_pki
from vfl.errors import ProtocolError
from vfl.transport import PartyEndpoint
from vfl.transport.grpc_party import PartyLink
from vfl.transport.link import METHOD, PartyRestartedError, PartyUnavailableError
from vfl.transport.retry import RetryPolicy
from vfl.transport.security import (
    METADATA_INSTANCE,
    METADATA_PARTY,
    METADATA_TOKEN,
    HandshakeError,
    PartyTls,
    RefusedError,
)
from vfl.wire import Ack, EmbedReply, EmbedRequest, GradRequest, Message, encode


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


def test_a_party_with_a_wrong_token_is_refused(
    pki: PkiFiles, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame}, parties=(1, 2))
    link = dialing_link(pki, loopback.transport.port, 2, token="not-the-token")

    # Execute
    with caplog.at_level(logging.WARNING), pytest.raises(RefusedError, match="wrong token"):
        link.serve()

    # Assert
    assert set(loopback.transport.connected()) == {1}
    assert "refused a connection" in caplog.text
    loopback.close()


def test_a_party_not_in_the_run_is_refused(pki: PkiFiles) -> None:
    # Prepare
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame})
    link = dialing_link(pki, loopback.transport.port, 3)

    # Execute / Assert
    with pytest.raises(RefusedError, match="party 3 is not in this run") as caught:
        link.serve()
    assert caught.value.code == "permission_denied"
    loopback.close()


def test_a_certificate_of_another_party_is_refused(pki: PkiFiles) -> None:
    # Prepare: party 2 presents party 1's certificate (and its own valid token)
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame}, parties=(1, 2))
    link = dialing_link(pki, loopback.transport.port, 2, tls=party_tls(pki, 2, cert_of=1))

    # Execute / Assert
    with pytest.raises(RefusedError, match="names \\['party-1'"):
        link.serve()
    loopback.close()


def test_without_a_client_certificate_mutual_tls_fails_and_the_party_stops_at_once(
    pki: PkiFiles,
) -> None:
    # Prepare: a party that would keep dialing for a minute if the refusal looked transient
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame}, parties=(1, 2))
    bare = party_tls(pki, 2)
    link = dialing_link(pki, loopback.transport.port, 2, tls=type(bare)(bare.root_ca))
    link.give_up_s = 60.0

    # Execute
    started = time.monotonic()
    with pytest.raises(HandshakeError) as caught:
        link.serve()

    # Assert
    assert time.monotonic() - started < 10
    assert "requires a client certificate (mutual TLS) and tls.cert is not set" in str(caught.value)
    assert set(loopback.transport.connected()) == {1}
    loopback.close()


def test_tls_is_required_and_the_server_certificate_is_verified(
    pki: PkiFiles, tmp_path: Path
) -> None:
    # Prepare: a server, and a second PKI whose CA did not sign the server's certificate
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame}, parties=(1, 2))
    port = loopback.transport.port
    other = create_test_pki(tmp_path, parties=[2])
    metadata = ((METADATA_PARTY, "2"), (METADATA_TOKEN, token(pki, 2)), (METADATA_INSTANCE, "x"))

    # Execute / Assert: a plaintext connection opens no stream
    with grpc.insecure_channel(f"localhost:{port}") as channel:
        call = channel.stream_stream(METHOD)(iter(()), metadata=metadata, timeout=5)
        with pytest.raises(grpc.RpcError) as failed:
            list(call)
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    # Execute / Assert: a party that trusts another CA does not accept this server
    impostor_ca = PartyTls(
        other.ca_cert.read_bytes(),
        other.parties[2].cert.read_bytes(),
        other.parties[2].key.read_bytes(),
    )
    with pytest.raises(HandshakeError, match="certificate is not signed by the CA in"):
        dialing_link(pki, port, 2, tls=impostor_ca, give_up_s=60.0).serve()
    assert set(loopback.transport.connected()) == {1}


def test_without_mutual_tls_a_token_authenticates_the_party(pki: PkiFiles) -> None:
    # Prepare: server-side TLS only; party 2 has no client certificate, just its token
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame}, parties=(1, 2), mutual=False)
    bare = PartyTls(pki.ca_cert.read_bytes())
    loopback.add(dialing_link(pki, loopback.transport.port, 2, tls=bare, give_up_s=30.0))
    loopback.transport.wait_for_parties(10)

    # Execute
    exchange = loopback.transport.request({p: Ack(round=0) for p in (1, 2)})
    refused = dialing_link(pki, loopback.transport.port, 2, tls=bare, token="")

    # Assert
    assert not exchange.failures and set(exchange.replies) == {1, 2}
    with pytest.raises(RefusedError, match="missing or wrong token"):
        refused.serve()


def test_bad_frames_are_rejected_with_a_reason_and_the_exchange_goes_on(
    pki: PkiFiles, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: party 1 sends malformed, oversized, forged and ill-shaped frames before each reply
    loopback = start_loopback(
        pki,
        {1: endpoint(1).handle_frame, 2: endpoint(2).handle_frame},
        link_class=lambda party, *a, **k: (RogueLink if party == 1 else PartyLink)(party, *a, **k),
    )
    requests: list[dict[int, Message]] = [
        {p: EmbedRequest(round=0, ids=torch.arange(3)) for p in (1, 2)},
        {p: GradRequest(round=0, grad=torch.ones(3, 1)) for p in (1, 2)},
        {p: EmbedRequest(round=1, ids=torch.arange(5)) for p in (1, 2)},
    ]

    # Execute
    with caplog.at_level(logging.WARNING, logger="vfl.transport.grpc_server"):
        exchanges = [loopback.transport.request(r) for r in requests]

    # Assert: every request answered by both parties, every junk frame rejected with its reason
    assert all(not e.failures and set(e.replies) == {1, 2} for e in exchanges)
    assert isinstance(exchanges[2].replies[1], EmbedReply)
    assert exchanges[2].replies[1].embedding.shape == (5, 1)
    rejections = [r.getMessage() for r in caplog.records if "rejected a frame" in r.getMessage()]
    assert all("from party 1:" in r for r in rejections)
    reasons = JUNK_REASONS + EMBEDDING_REASONS
    assert len(rejections) == 3 * len(JUNK_REASONS) + 2 * len(EMBEDDING_REASONS)
    for reason in reasons:
        assert any(reason in r for r in rejections), reason
    loopback.close()


def test_a_frame_over_the_party_limit_is_dropped_and_the_party_keeps_serving(
    pki: PkiFiles,
) -> None:
    # Prepare: the party accepts frames of at most 200 bytes
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame}, max_bytes=200)
    transport = loopback.transport

    # Execute
    too_big = transport.request({1: EmbedRequest(round=0, ids=torch.arange(100))})
    small = transport.request({1: EmbedRequest(round=1, ids=torch.arange(3))})

    # Assert
    assert isinstance(too_big.failures[1], PartyUnavailableError)
    assert not small.failures
    loopback.close()


def test_a_silent_party_is_reported_after_the_retries_and_never_waited_on_forever(
    pki: PkiFiles,
) -> None:
    # Prepare
    def stalls(message: Message) -> Message:
        time.sleep(1.5)
        return Ack(round=message.round)

    loopback = start_loopback(
        pki, {1: endpoint(1).handle_frame, 2: endpoint(2, stalls).handle_frame}
    )

    # Execute
    started = time.monotonic()
    exchange = loopback.transport.request({p: Ack(round=0) for p in (1, 2)})
    waited = time.monotonic() - started

    # Assert
    assert set(exchange.replies) == {1}
    assert isinstance(exchange.failures[2], PartyUnavailableError)
    assert "party 2 did not answer" in str(exchange.failures[2])
    assert FAST.attempts * FAST.timeout_s <= waited < FAST.max_wait_s + 1.0
    loopback.close()


def test_a_party_whose_stream_broke_fails_after_the_reconnect_grace_not_the_timeout(
    pki: PkiFiles,
) -> None:
    # Prepare: a long timeout, a short grace; the party leaves while its request is open
    holder: dict[str, PartyLink] = {}

    def leaves(message: Message) -> Message:
        holder["link"].stop()
        return Ack(round=message.round)

    policy = RetryPolicy(attempts=1, timeout_s=30, reconnect_s=0.5)
    loopback = start_loopback(pki, {1: endpoint(1, leaves).handle_frame}, policy=policy)
    holder["link"] = loopback.links[1]

    # Execute
    started = time.monotonic()
    exchange = loopback.transport.request({1: Ack(round=0)})

    # Assert
    assert "did not reconnect within 0.5 s" in str(exchange.failures[1])
    assert time.monotonic() - started < 5
    loopback.close()


def test_a_reply_lost_with_the_stream_is_resent_from_the_cache_not_recomputed(
    pki: PkiFiles,
) -> None:
    # Prepare: the party drops its stream right after applying the first gradient
    applied: list[int] = []
    holder: dict[str, PartyLink] = {}

    def steps(message: Message) -> Message:
        applied.append(message.round)
        if len(applied) == 1:
            holder["link"].reconnect()
        return Ack(round=message.round)

    loopback = start_loopback(pki, {1: endpoint(1, steps).handle_frame})
    holder["link"] = loopback.links[1]
    gradient = GradRequest(round=0, grad=torch.ones(2, 2))

    # Execute
    started = time.monotonic()
    exchange = loopback.transport.request({1: gradient})

    # Assert
    assert not exchange.failures
    assert applied == [0]  # answered twice at most, applied once
    assert time.monotonic() - started < FAST.timeout_s  # resent on reconnection, no timeout
    loopback.close()


def test_a_party_restarted_in_a_new_process_fails_its_requests_at_once(pki: PkiFiles) -> None:
    # Prepare: pin party 1 to its first process, then replace that process
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame})
    transport = loopback.transport
    transport.pin(transport.connected())
    loopback.links[1].stop()
    loopback.threads[1].join(5)
    loopback.add(dialing_link(pki, transport.port, 1, give_up_s=30.0))
    transport.wait_for_parties(10)

    # Execute
    started = time.monotonic()
    exchange = transport.request({1: Ack(round=0)})

    # Assert
    assert isinstance(exchange.failures[1], PartyRestartedError)
    assert time.monotonic() - started < FAST.timeout_s
    transport.unpin()
    assert not transport.request({1: Ack(round=1)}).failures
    loopback.close()


def test_large_frames_travel_in_chunks_and_the_wire_counts_match_the_ledger(
    pki: PkiFiles,
) -> None:
    # Prepare: 1000-byte chunks, so a 8,016-byte request takes 9 chunks
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame}, chunk_bytes=1000)
    transport = loopback.transport
    ids = torch.arange(1000)

    # Execute
    exchange = transport.request({1: EmbedRequest(round=0, ids=ids)})

    # Assert
    reply = exchange.replies[1]
    assert isinstance(reply, EmbedReply)
    assert torch.equal(reply.embedding, ids.float().unsqueeze(1))
    ledger_down = transport.ledger.total(direction="down")
    assert ledger_down == len(encode(EmbedRequest(round=0, ids=ids), sender=0))
    overhead = transport.wire.sent("train") - ledger_down
    assert 9 * 5 <= overhead <= 9 * 30  # gRPC prefix and chunk fields, per chunk
    loopback.close()


def test_a_refused_party_is_not_told_which_parties_are_in_the_run(tmp_path: Path) -> None:
    # Prepare: a run of parties 17 and 23; party 4 dials with credentials of its own
    pki = create_test_pki(tmp_path, parties=[4, 17, 23])
    loopback = start_loopback(pki, {17: endpoint(17).handle_frame}, parties=(17, 23))
    link = dialing_link(pki, loopback.transport.port, 4)

    # Execute
    with pytest.raises(RefusedError) as caught:
        link.serve()

    # Assert: what reached the party says it is refused (control) and holds no valid id
    told = str(caught.value).split("refused party 4: ", 1)[1]
    assert told == "party 4 is not in this run"
    assert "17" not in told and "23" not in told
    loopback.close()


def test_a_second_process_of_a_connected_party_is_refused_by_name(
    pki: PkiFiles, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: party 1 is connected; a second process claims party 1 with valid credentials
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame})
    transport = loopback.transport
    first = transport.connected()[1]
    twin = dialing_link(pki, transport.port, 1, duplicate_grace_s=0.5, give_up_s=30.0)

    # Execute
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), pytest.raises(RefusedError) as caught:
        twin.serve()

    # Assert: the twin stops after its grace, by name; the first process keeps its stream
    assert caught.value.code == "already_connected"
    assert "party 1 is already connected from another process" in str(caught.value)
    assert 0.5 <= time.monotonic() - started < 10
    assert "refused a connection" in caplog.text and "already connected" in caplog.text
    assert transport.connected() == {1: first}
    assert not transport.request({1: Ack(round=0)}).failures
    loopback.close()


def test_a_second_process_is_admitted_once_the_first_is_gone(pki: PkiFiles) -> None:
    # Prepare: a twin dials while party 1's first process is connected, and is refused
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame})
    transport = loopback.transport
    first = loopback.links[1]
    twin = loopback.add(dialing_link(pki, transport.port, 1, duplicate_grace_s=20, give_up_s=30))
    time.sleep(0.5)
    assert transport.connected()[1] == first.instance

    # Execute: the first process goes away (as a restarted party's dead predecessor would)
    first.stop()
    transport.wait_for_parties(10)
    deadline = time.monotonic() + 10
    while transport.connected().get(1) != twin.instance and time.monotonic() < deadline:
        time.sleep(0.05)

    # Assert: within its grace the twin kept dialing, and now it is party 1
    assert transport.connected()[1] == twin.instance
    assert not transport.request({1: Ack(round=0)}).failures
    assert 1 not in loopback.errors
    loopback.close()


def test_waiting_for_parties_says_who_is_missing_and_for_how_long(
    pki: PkiFiles, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: a run of parties 1, 2 and 3; party 1 connects and leaves, 2 stays, 3 never comes
    loopback = start_loopback(
        pki, {1: endpoint(1).handle_frame, 2: endpoint(2).handle_frame}, parties=(1, 2, 3)
    )
    loopback.links[1].stop()
    loopback.threads[1].join(5)

    # Execute
    with caplog.at_level(logging.WARNING), pytest.raises(PartyUnavailableError) as caught:
        loopback.transport.wait_for_parties(1.2, report_every_s=0.4)

    # Assert: reports while waiting, then the final error, each naming the parties and times
    message = str(caught.value)
    assert message.startswith("parties [1, 3] did not connect within 1.2 s (party 1 disconnected")
    assert "party 3 never connected, waited" in message and "party 2" not in message
    reports = [r.getMessage() for r in caplog.records if "waiting for parties" in r.getMessage()]
    assert len(reports) >= 2
    assert all("parties [1, 3]" in r and "giving up in" in r for r in reports)
    loopback.close()


def test_a_party_keeps_dialing_a_server_that_is_not_up_and_says_until_when(
    pki: PkiFiles, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: nothing listens on the port (yet)
    link = dialing_link(pki, free_port(), 1, give_up_s=1.5)

    # Execute
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), pytest.raises(ProtocolError) as caught:
        link.serve()

    # Assert: it kept trying until give_up_s, logging why and for how long
    assert time.monotonic() - started >= 1.5
    assert "could not reach the server at localhost:" in str(caught.value)
    assert "giving up" in str(caught.value)
    assert "is not reachable (Connection refused)" in caplog.text
    assert "giving up in 1 s" in caplog.text or "giving up in 2 s" in caplog.text


def test_a_server_name_that_does_not_resolve_stops_the_party_within_seconds(
    pki: PkiFiles,
) -> None:
    # Prepare: a party that would keep dialing an unreachable server for a minute
    link = dialing_link(pki, 0, 1, address="nohost.invalid:50051", give_up_s=60.0)

    # Execute
    started = time.monotonic()
    with pytest.raises(ProtocolError) as caught:
        link.serve()

    # Assert
    assert time.monotonic() - started < 10
    assert str(caught.value).startswith(
        "party 1 cannot resolve the server's name 'nohost.invalid' (server address"
        " 'nohost.invalid:50051')"
    )


def test_a_certificate_the_server_does_not_trust_stops_the_party_at_once_naming_it(
    pki: PkiFiles, tmp_path: Path
) -> None:
    # Prepare: party 1 presents a certificate signed by another CA (mutual TLS)
    loopback = start_loopback(pki, {2: endpoint(2).handle_frame}, parties=(1, 2))
    other = create_test_pki(tmp_path, parties=[1])
    foreign = PartyTls(
        pki.ca_cert.read_bytes(),
        other.parties[1].cert.read_bytes(),
        other.parties[1].key.read_bytes(),
        cert_file=str(other.parties[1].cert),
    )
    link = dialing_link(pki, loopback.transport.port, 1, tls=foreign, give_up_s=60.0)

    # Execute
    started = time.monotonic()
    with pytest.raises(HandshakeError) as caught:
        link.serve()

    # Assert: stopped within seconds, naming the certificate the server rejected
    assert time.monotonic() - started < 10
    assert str(caught.value) == (
        f"party 1: the server at localhost:{loopback.transport.port} closed the connection during"
        f" the TLS handshake 3 times in a row: it does not accept this party's certificate"
        f" {other.parties[1].cert} (signed by a CA the server does not trust, expired, or not a"
        " client certificate)"
    )
    assert set(loopback.transport.connected()) == {2}
    loopback.close()


def test_a_server_certificate_without_the_dialed_name_stops_the_party_at_once(
    pki: PkiFiles,
) -> None:
    # Prepare: the party checks for a name the server's certificate does not carry
    loopback = start_loopback(pki, {2: endpoint(2).handle_frame}, parties=(1, 2))
    elsewhere = replace(party_tls(pki, 1), server_name="vfl.example")
    link = dialing_link(pki, loopback.transport.port, 1, tls=elsewhere, give_up_s=60.0)

    # Execute
    started = time.monotonic()
    with pytest.raises(HandshakeError) as caught:
        link.serve()

    # Assert
    assert time.monotonic() - started < 10
    assert "the server's certificate does not name 'vfl.example', the name dialed" in str(
        caught.value
    )
    loopback.close()
