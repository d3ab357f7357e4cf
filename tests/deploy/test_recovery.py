"""Killed processes: a party or the server dies mid-epoch; the run resumes and completes.

Each test runs the server and two parties as separate processes for several epochs (slow).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.scenario import (
    Scenario,
    free_port,
    make_scenario,
    simulate_aligned,
    start_party,
    start_server,
    training_round_seen,
    wait_for,
    wait_for_epoch,
)
from vfl.results.files import RunDirectory

pytestmark = pytest.mark.slow

EPOCHS = 4
TIMEOUT = 240


def scenario_for(root: Path, *deployment: str) -> Scenario:
    return make_scenario(
        root,
        rows=(3000, 400),
        epochs=EPOCHS,
        deployment=deployment or ("request_timeout_s = 5", "connect_timeout_s = 60"),
    )


def final_accuracy(run_dir: Path) -> float:
    return float(json.loads((run_dir / "summary.json").read_text())["final"]["test_accuracy"])


Processes = dict[int, subprocess.Popen[bytes]]


def kill_party_1_in_epoch_2(
    scenario: Scenario, spawned: list[subprocess.Popen[bytes]], rounds: int
) -> tuple[subprocess.Popen[bytes], Processes, int, int]:
    """Run until party 1 trained ``rounds`` rounds into epoch 2, kill it, restart it (--resume).

    Returns the server, the parties, the rounds of an epoch, and the last training round party 1
    saw before it was killed.
    """
    address = f"127.0.0.1:{free_port()}"
    server = start_server(scenario, address)
    parties = {p: start_party(scenario, p, address) for p in (1, 2)}
    spawned += [server, *parties.values()]
    wait_for_epoch(scenario, server, 1)
    per_epoch = int(RunDirectory(scenario.run_dir).read_metrics()[-1]["round"])
    wait_for(
        lambda: training_round_seen(scenario, 1) >= per_epoch + rounds,
        TIMEOUT,
        f"party 1 to train {rounds} rounds into epoch 2",
    )
    parties[1].send_signal(signal.SIGKILL)
    parties[1].wait()
    killed_at = training_round_seen(scenario, 1)
    parties[1] = start_party(scenario, 1, address, "--resume")
    spawned.append(parties[1])
    return server, parties, per_epoch, killed_at


def assert_ends_as_simulated(
    scenario: Scenario, server: subprocess.Popen[bytes], parties: Processes, reference_dir: Path
) -> list[dict[str, Any]]:
    """Every process ends well, every epoch is recorded, and the result is the simulated run's."""
    assert server.wait(TIMEOUT) == 0, (scenario.root / "server.log").read_text()[-3000:]
    assert all(p.wait(60) == 0 for p in parties.values())
    records = RunDirectory(scenario.run_dir).read_metrics()
    assert [r["epoch"] for r in records] == list(range(EPOCHS + 1))
    reference = simulate_aligned(scenario, reference_dir)
    reference_accuracy = RunDirectory(reference_dir).read_metrics()[-1]["test_accuracy"]
    assert simulation_rounds(reference) == records[-1]["round"]
    assert abs(final_accuracy(scenario.run_dir) - reference_accuracy) <= 0.005
    return records


def test_a_party_killed_mid_epoch_and_restarted_with_resume_completes_the_run(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Prepare
    scenario = scenario_for(tmp_path / "deployment")

    # Execute: kill party 1 during epoch 2 and restart it from its state directory
    server, parties, per_epoch, killed_at = kill_party_1_in_epoch_2(scenario, spawned, 10)

    # Assert: the kill fell inside epoch 2, which was rolled back and trained again
    records = assert_ends_as_simulated(scenario, server, parties, tmp_path / "reference")
    assert per_epoch + 10 <= killed_at < int(records[2]["round"])
    assert "resuming from the last checkpoint" in (scenario.root / "server.log").read_text()


def test_a_party_killed_after_a_mid_epoch_checkpoint_rebuilds_its_open_round(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Prepare: a checkpoint every 5 rounds; with pipelined rounds each one falls while a
    # round's gradient waits at the server, so the party's checkpoint holds that open round
    scenario = make_scenario(
        tmp_path / "deployment",
        rows=(3000, 400),
        epochs=EPOCHS,
        deployment=("request_timeout_s = 5", "connect_timeout_s = 60"),
        train=("checkpoint_every = 5",),
    )

    # Execute: kill party 1 between two checkpoints and restart it from its state directory
    server, parties, per_epoch, _ = kill_party_1_in_epoch_2(scenario, spawned, 12)

    # Assert: restored at a round inside an epoch, and the run ends as the simulated one does
    assert_ends_as_simulated(scenario, server, parties, tmp_path / "reference")
    restored = re.findall(r"restored at round (\d+)", (scenario.root / "party-1.log").read_text())
    assert restored and all(int(r) % per_epoch != 0 for r in restored)


def test_a_server_killed_mid_epoch_and_restarted_with_resume_completes_the_run(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Prepare: parties keep dialing the same address while the server is down
    scenario = scenario_for(tmp_path / "deployment")
    address = f"127.0.0.1:{free_port()}"
    server = start_server(scenario, address)
    parties = {p: start_party(scenario, p, address) for p in (1, 2)}
    spawned += [server, *parties.values()]
    wait_for_epoch(scenario, server, 1)

    # Execute
    server.send_signal(signal.SIGKILL)
    server.wait()
    server = start_server(scenario, address, "--resume")
    spawned.append(server)

    # Assert
    assert server.wait(TIMEOUT) == 0, (scenario.root / "server.log").read_text()[-3000:]
    assert all(p.wait(60) == 0 for p in parties.values())
    records = RunDirectory(scenario.run_dir).read_metrics()
    assert [r["epoch"] for r in records] == list(range(EPOCHS + 1))
    simulate_aligned(scenario, tmp_path / "reference")
    reference_accuracy = RunDirectory(tmp_path / "reference").read_metrics()[-1]["test_accuracy"]
    assert abs(final_accuracy(scenario.run_dir) - reference_accuracy) <= 0.005


def test_a_party_that_never_comes_back_stops_the_run_with_an_error_naming_it(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Prepare: the server waits 12 s for a lost party and reports every 10 s while it waits
    scenario = scenario_for(
        tmp_path / "deployment", "request_timeout_s = 1", "attempts = 2", "connect_timeout_s = 12"
    )
    address = f"127.0.0.1:{free_port()}"
    server = start_server(scenario, address)
    parties = {p: start_party(scenario, p, address) for p in (1, 2)}
    spawned += [server, *parties.values()]
    wait_for_epoch(scenario, server, 1)

    # Execute
    parties[2].send_signal(signal.SIGKILL)
    status = server.wait(60)

    # Assert: which party, how long it has been gone, and what to do
    assert status == 2
    log = (scenario.root / "server.log").read_text()
    assert re.search(
        r"waiting for parties \[2\] \(party 2 disconnected \d+ s ago\); giving up in", log
    )
    assert re.search(
        r"parties \[2\] did not connect within 12 s \(party 2 disconnected \d+ s ago\); the run"
        " stops at its checkpoint",
        log,
    )


def test_parties_stop_with_a_message_when_the_server_dies_for_good(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Prepare: parties that give up 4 s after losing the server
    scenario = scenario_for(tmp_path / "deployment")
    address = f"127.0.0.1:{free_port()}"
    server = start_server(scenario, address)
    parties = {p: start_party(scenario, p, address, "--set=give_up_s=4") for p in (1, 2)}
    spawned += [server, *parties.values()]
    wait_for_epoch(scenario, server, 1)

    # Execute: the server dies and is not restarted
    server.send_signal(signal.SIGKILL)
    server.wait()
    started = time.monotonic()
    statuses = {p: process.wait(60) for p, process in parties.items()}

    # Assert: both stop within seconds, saying what happened and what to do
    assert statuses == {1: 2, 2: 2}
    assert time.monotonic() - started < 30
    for party in parties:
        log = (scenario.root / f"party-{party}.log").read_text()
        assert f"party {party}: lost the server at {address}" in log
        assert "giving up in 4 s" in log
        assert (
            f"vfl: error: party {party} could not reach the server at {address} for" in log
            and "giving up (restart it with --resume once the server runs)" in log
        )


def test_a_party_that_stops_answering_stops_the_run_after_the_retries_with_a_clear_error(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Prepare: short timeouts; the parties' keepalive (5 s) is slower than the retries
    scenario = scenario_for(
        tmp_path / "deployment", "request_timeout_s = 1", "attempts = 3", "backoff_s = 0.2"
    )
    address = f"127.0.0.1:{free_port()}"
    server = start_server(scenario, address)
    parties = {p: start_party(scenario, p, address) for p in (1, 2)}
    spawned += [server, *parties.values()]
    wait_for_epoch(scenario, server, 1)
    # the epoch's checkpoint exchange follows its metrics line and waits up to
    # setup_timeout_s (600 s): freeze the party only once it trains in epoch 2
    end_of_epoch_1 = int(RunDirectory(scenario.run_dir).read_metrics()[-1]["round"])
    wait_for(
        lambda: training_round_seen(scenario, 2) >= end_of_epoch_1,
        TIMEOUT,
        "party 2 to train in epoch 2",
    )

    # Execute: freeze party 2 (its process lives on, its connection stays open, it answers nothing)
    parties[2].send_signal(signal.SIGSTOP)
    started = time.monotonic()
    status = server.wait(60)
    waited = time.monotonic() - started

    # Assert: retried, then stopped with an error naming the party and how to continue
    assert status == 2
    log = (scenario.root / "server.log").read_text()
    assert "no reply from party 2; sending" in log and "(attempt 3 of 3)" in log
    assert "party 2 did not answer" in log and "although it is connected" in log
    assert "the run stops at its checkpoint after epoch" in log
    assert "recovery 1 of" not in log  # a stuck process is not rolled back to
    assert waited < 30


def simulation_rounds(simulation: object) -> int:
    return int(simulation.trainer.rounds)  # type: ignore[attr-defined]
