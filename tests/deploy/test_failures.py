"""Failures a deployment must report at once and by name, with real ``vfl`` processes.

A certificate the server rejects, a server name that does not resolve, a party that never
connects, and the same party started twice (slow): each ends the process concerned with exit
status 2 and a message naming the file, the address or the party.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.deploy.scenario import (
    ROOT,
    deploy_command,
    free_port,
    make_scenario,
    run_launch,
    start,
    start_party,
    start_server,
    wait_for,
)
from vfl.deploy.certs import create_test_pki


def test_launch_stops_at_once_when_the_server_rejects_a_party_certificate(
    tmp_path: Path,
) -> None:
    # Prepare: party 1's certificate and key come from a CA the server does not trust
    scenario = make_scenario(tmp_path / "deployment", num_parties=1, epochs=1)
    foreign = create_test_pki(tmp_path / "foreign", parties=[1])
    cert = scenario.pki.parties[1].cert
    cert.write_bytes(foreign.parties[1].cert.read_bytes())
    scenario.pki.parties[1].key.write_bytes(foreign.parties[1].key.read_bytes())

    # Execute
    started = time.monotonic()
    result = run_launch(scenario, timeout=120)

    # Assert: stopped within seconds (not after give_up_s = 60), naming the certificate
    assert result.returncode == 2
    assert time.monotonic() - started < 40
    assert "party-1 exited with status 2" in result.stderr
    assert f"it does not accept this party's certificate {cert}" in result.stderr


def test_a_party_whose_server_name_does_not_resolve_exits_within_seconds(tmp_path: Path) -> None:
    # Prepare
    scenario = make_scenario(tmp_path)
    command = deploy_command(
        "party", "--config", str(scenario.party_tomls[1]), "--server", "nohost.invalid:50051"
    )

    # Execute
    started = time.monotonic()
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        cwd=tmp_path,
    )

    # Assert
    assert result.returncode == 2
    assert time.monotonic() - started < 30
    assert (
        "vfl: error: party 1 cannot resolve the server's name 'nohost.invalid' (server address"
        " 'nohost.invalid:50051')" in result.stderr
    )


def test_a_party_that_never_connects_is_named_with_how_long_the_server_waited(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Prepare: only party 1 of 2 is started
    scenario = make_scenario(tmp_path, deployment=["connect_timeout_s = 1"])
    address = f"127.0.0.1:{free_port()}"
    server = start_server(scenario, address)
    spawned += [server, start_party(scenario, 1, address)]

    # Execute
    status = server.wait(60)

    # Assert
    log = (tmp_path / "server.log").read_text()
    assert status == 2
    assert re.search(
        r"parties \[2\] did not connect within 1 s \(party 2 never connected, waited \d+ s\)", log
    )
    assert "party 1" not in log.splitlines()[-1]


@pytest.mark.slow
def test_the_same_party_started_twice_is_refused_and_the_second_process_exits_naming_it(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Prepare: the server and party 1; party 2 is held back until the twin is done
    scenario = make_scenario(tmp_path, epochs=2)
    address = f"127.0.0.1:{free_port()}"
    server = start_server(scenario, address)
    first = start_party(scenario, 1, address)
    spawned += [server, first]
    server_log = tmp_path / "server.log"
    wait_for(lambda: "party 1 connected" in server_log.read_text(), 60, "party 1 to connect")

    # Execute: a second process with party 1's config and credentials (its own state)
    twin = start(
        scenario,
        "twin",
        "party",
        "--config",
        str(scenario.party_tomls[1]),
        "--server",
        address,
        "--set=keepalive_s=1",  # a grace of 2.5 s for a predecessor the server has not dropped
        f"--set=state_dir={tmp_path / 'twin-state'}",
        f"--set=audit_log={tmp_path / 'twin-audit.jsonl'}",
    )
    spawned.append(twin)
    status = twin.wait(60)
    spawned.append(start_party(scenario, 2, address))

    # Assert: the twin exits naming the party; the first process completes the run
    assert status == 2
    assert (
        f"vfl: error: the server at {address} refused party 1: party 1 is already connected from"
        " another process; a second process with party id 1 is refused (stop one of them)"
        in (tmp_path / "twin.log").read_text()
    )
    assert "already connected from another process" in server_log.read_text()
    assert server.wait(120) == 0, server_log.read_text()[-3000:]
    assert first.wait(30) == 0
    assert not list((tmp_path / "twin-state").glob("alignment-*.pt"))
