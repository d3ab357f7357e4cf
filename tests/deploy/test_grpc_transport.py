"""The gRPC transport beyond the shared contract: security, bad frames, timeouts, reconnection."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
import torch

from tests.deploy.loopback import FAST, dialing_link, endpoint, party_tls, start_loopback, token
from tests.deploy.rogue import EMBEDDING_REASONS, JUNK_REASONS, RogueLink
from vfl.deploy.certs import PkiFiles, create_test_pki
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
    too_big = transport.request({1: EmbedRequest(round=0, ids=torch.arange(1000))})
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
    # Prepare: 1000-byte chunks, so a 9,765-byte request (6,000 ids of 13 bits) takes 10 chunks
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame}, chunk_bytes=1000)
    transport = loopback.transport
    ids = torch.arange(6000)

    # Execute
    exchange = transport.request({1: EmbedRequest(round=0, ids=ids)})

    # Assert
    reply = exchange.replies[1]
    assert isinstance(reply, EmbedReply)
    assert torch.equal(reply.embedding, ids.float().unsqueeze(1))
    ledger_down = transport.ledger.total(direction="down")
    assert ledger_down == len(encode(EmbedRequest(round=0, ids=ids), sender=0))
    overhead = transport.wire.sent("train") - ledger_down
    assert len(encode(EmbedRequest(round=0, ids=ids), sender=0)) == 9765
    assert 10 * 5 <= overhead <= 10 * 30  # gRPC prefix and chunk fields, per chunk
    loopback.close()


def test_closing_ends_the_servers_event_loop_thread_and_a_second_close_is_a_no_op(
    pki: PkiFiles,
) -> None:
    # Prepare: a server with a connected party; the server's loop thread is running
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame})
    loop_thread = loopback.transport.streams._server._thread
    assert loop_thread.is_alive()
    assert not loopback.transport.request({1: Ack(round=0)}).failures

    # Execute
    loopback.close()
    loopback.transport.close()

    # Assert: the thread ended, the party's link returned, nothing failed
    assert not loop_thread.is_alive()
    assert not loopback.threads[1].is_alive()
    assert loopback.errors == {}


def test_a_link_stopped_before_it_serves_returns_at_once_without_dialing(pki: PkiFiles) -> None:
    # Prepare: nothing listens at the address; a link that dialed would retry for 30 s
    link = dialing_link(pki, 1, 1, give_up_s=30)

    # Execute
    link.stop()
    started = time.monotonic()
    link.serve()

    # Assert
    assert time.monotonic() - started < 1
    assert link.wire.received("all") == 0


def test_cancelling_a_serving_link_ends_serve_instead_of_dialing_again(pki: PkiFiles) -> None:
    # Prepare: a connected party (Ctrl-C under asyncio.run cancels the serving task like this)
    loopback = start_loopback(pki, {1: endpoint(1).handle_frame})
    link = loopback.links[1]
    assert not loopback.transport.request({1: Ack(round=0)}).failures
    loop = link._loop
    assert loop is not None

    # Execute
    loop.call_soon_threadsafe(lambda: [task.cancel() for task in asyncio.all_tasks(loop)])
    loopback.threads[1].join(10)

    # Assert: serve ended with the cancellation; the party did not come back
    assert not loopback.threads[1].is_alive()
    assert isinstance(loopback.errors[1], asyncio.CancelledError)
    time.sleep(0.3)
    assert 1 not in loopback.transport.connected()


def test_an_exchanges_requests_reach_the_event_loop_in_one_hand_off(
    pki: PkiFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: three parties; count the hand-offs from this (the training) thread to the
    # server's event loop (gRPC's own threads hand off to it too)
    loopback = start_loopback(pki, {p: endpoint(p).handle_frame for p in (1, 2, 3)})
    transport = loopback.transport
    loop = transport.streams._server.loop
    hand_offs: list[object] = []
    forward = loop.call_soon_threadsafe
    training_thread = threading.get_ident()

    def counted(callback: Callable[..., object], *args: object) -> asyncio.Handle:
        if threading.get_ident() == training_thread:
            hand_offs.append(callback)
        return forward(callback, *args)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    ids = torch.arange(4)
    assert sorted(transport.connected()) == [1, 2, 3]  # else a request waits for its party

    # Execute
    try:
        exchange = transport.request({p: EmbedRequest(round=0, ids=ids) for p in (1, 2, 3)})
    finally:
        monkeypatch.undo()  # closing hands off too
        loopback.close()

    # Assert
    assert sorted(exchange.replies) == [1, 2, 3]
    assert len(hand_offs) == 1
