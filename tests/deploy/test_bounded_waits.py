"""Every wait is bounded: an unreachable server, a silent one, a silent scoring service; each
ends the process within its stated timeout with a message naming the address (real processes).

The negative control, a server that answers, is every deployment test that trains.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.deploy.scenario import ROOT, Scenario, deploy_command, free_port
from tests.silent_listener import silent_listener

GIVE_UP_S = 2


def run(scenario: Scenario, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        deploy_command(*args),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        cwd=scenario.root,
        check=False,
    )
    return result, time.monotonic() - started


def party_dialing(
    scenario: Scenario, address: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    config = str(scenario.party_tomls[1])
    return run(
        scenario, "party", "--config", config, "--server", address, f"--set=give_up_s={GIVE_UP_S}"
    )


def gave_up_after(stderr: str, address: str) -> int:
    """The seconds the party says it tried ``address``, from its error line."""
    match = re.search(rf"could not reach the server at {re.escape(address)} for (\d+) s", stderr)
    assert match is not None, stderr
    return int(match[1])


def test_a_party_gives_up_on_a_server_that_is_not_up_within_give_up_s(scenario: Scenario) -> None:
    # Prepare
    address = f"127.0.0.1:{free_port()}"

    # Execute
    result, elapsed = party_dialing(scenario, address)

    # Assert
    assert result.returncode == 2
    assert gave_up_after(result.stderr, address) <= GIVE_UP_S + 1
    assert elapsed < 60 and "Traceback" not in result.stderr


def test_a_party_gives_up_on_a_silent_server_within_give_up_s(scenario: Scenario) -> None:
    # Prepare: the address accepts connections and never completes a TLS handshake (gRPC's own
    # connect timeout held each attempt for 20 s)
    with silent_listener() as address:
        # Execute
        result, elapsed = party_dialing(scenario, address)

    # Assert
    assert result.returncode == 2
    assert gave_up_after(result.stderr, address) <= GIVE_UP_S + 1
    assert elapsed < 60


def test_scoring_at_a_silent_address_fails_within_its_timeout_naming_it(scenario: Scenario) -> None:
    # Prepare
    files = scenario.pki.parties[1]
    credentials = ["--ca", str(scenario.pki.ca_cert), "--cert", str(files.cert)]
    credentials += ["--key", str(files.key)]

    # Execute
    with silent_listener() as address:
        result, elapsed = run(scenario, "score", address, "x", *credentials, "--timeout-s", "2")

    # Assert
    assert result.returncode == 2
    assert f"vfl: error: scoring at {address} failed (DEADLINE_EXCEEDED)" in result.stderr
    assert elapsed < 60


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_a_wait_that_is_not_a_finite_positive_number_is_refused(
    scenario: Scenario, value: str, tmp_path: Path
) -> None:
    # Execute
    result, _ = run(
        scenario,
        "score",
        "127.0.0.1:1",
        "x",
        "--ca",
        "a",
        "--cert",
        "b",
        "--key",
        "c",
        "--timeout-s",
        value,
    )

    # Assert
    assert result.returncode == 2
    assert "vfl: error: --timeout-s must" in result.stderr and value in result.stderr
