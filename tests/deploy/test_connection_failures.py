"""How a party's connection fails, in-process over real gRPC: refused, waited for, given up.

Refusals tell the caller nothing about the run; a second process of a connected party is
refused by name; a server that is not up is dialed again with a countdown; a server name that
does not resolve and a TLS handshake that fails on the certificates stop the party at once;
the server says which parties it waits for and for how long.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.deploy.loopback import dialing_link, endpoint, party_tls, start_loopback
from tests.deploy.scenario import free_port
from vfl.deploy.certs import PkiFiles, create_test_pki
from vfl.errors import ProtocolError
from vfl.transport.link import PartyUnavailableError
from vfl.transport.security import HandshakeError, PartyTls, RefusedError
from vfl.wire import Ack


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
        loopback.transport.wait_for_parties(2.0, report_every_s=0.4)

    # Assert: reports while waiting, then the final error, each naming the parties and times
    message = str(caught.value)
    assert message.startswith("parties [1, 3] did not connect within 2 s (party 1 disconnected")
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
