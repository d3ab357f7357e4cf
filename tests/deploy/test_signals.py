"""Signals and re-runs of the deployment commands, as real processes: what each says and saves.

Ctrl-C and SIGTERM on a waiting server, on a party, and on ``vfl launch`` in the middle of
training print what was saved and the exact command that continues; a second launch over an
existing run names ``vfl launch ... --resume``.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.deploy.scenario import (
    ROOT,
    Scenario,
    deploy_command,
    make_scenario,
    run_launch,
    wait_for,
)
from vfl.deploy.process import kill_group

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def start(scenario: Scenario, *args: str) -> subprocess.Popen[str]:
    """``vfl ARGS`` in the scenario's folder, both outputs captured."""
    return subprocess.Popen(
        deploy_command(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=scenario.root,
    )


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_server_waiting_for_parties_says_why_it_stopped_and_can_start_again(
    tmp_path: Path, number: signal.Signals
) -> None:
    # Prepare: a server no party dials
    scenario = make_scenario(tmp_path)
    port_file = tmp_path / "port"
    args = ["server", "--config", str(scenario.run_toml), "--run-dir", str(scenario.run_dir)]
    args += ["--set=deployment.listen=127.0.0.1:0", "--port-file", str(port_file)]
    server = start(scenario, *args)
    wait_for(port_file.exists, 120, "the server to listen")

    # Execute
    server.send_signal(number)
    out, err = server.communicate(timeout=60)

    # Assert: its exit status, what it was doing, and the command that starts it again
    assert server.returncode == 128 + number, err
    words = ["vfl", "server", "--config", str(scenario.run_toml), "--run-dir"]
    again = shlex.join([*words, str(scenario.run_dir), "--set=deployment.listen=127.0.0.1:0"])
    assert err.strip().splitlines()[-1] == (
        f"vfl: stopped by {number.name} while waiting for parties 1, 2 to connect; nothing"
        f" trained yet, so nothing to resume: start again with `{again}`"
    )
    assert out == ""
    # Assert: that command is accepted (the folder holds only what the set-up wrote)
    port_file.unlink()
    again_server = start(scenario, *args)
    wait_for(port_file.exists, 120, "the server to listen again")
    again_server.send_signal(signal.SIGTERM)
    assert again_server.wait(60) == 143


def test_a_party_stopped_by_sigterm_names_its_state_and_the_command_that_continues(
    tmp_path: Path,
) -> None:
    # Prepare: a party dialing a server that does not listen
    scenario = make_scenario(tmp_path)
    party = start(
        scenario, "party", "--config", str(scenario.party_tomls[1]), "--server", "127.0.0.1:9"
    )
    wait_for(lambda: scenario.state_dir(1).exists(), 120, "the party to read its tables")
    time.sleep(1)

    # Execute
    party.send_signal(signal.SIGTERM)
    _, err = party.communicate(timeout=60)

    # Assert
    assert party.returncode == 143, err
    command = shlex.join(
        ["vfl", "party", "--config", str(scenario.party_tomls[1]), "--server", "127.0.0.1:9"]
    )
    assert err.strip().splitlines()[-1] == (
        f"vfl: party 1 stopped by SIGTERM; no checkpoint yet in {scenario.state_dir(1)};"
        f" continue with `{command} --resume` once the server runs with --resume"
    )


def test_a_second_launch_over_a_run_names_launch_resume(tmp_path: Path) -> None:
    # Prepare: a run directory that holds a run (its checkpoint)
    scenario = make_scenario(tmp_path)
    scenario.run_dir.mkdir()
    (scenario.run_dir / "checkpoint.pt").write_bytes(b"")
    (scenario.run_dir / "logs").mkdir()
    (scenario.run_dir / "logs" / "server.log").write_text('{\n  "epochs": 2\n}\n')

    # Execute
    result = run_launch(scenario)

    # Assert: refused before any process starts, naming the command that continues it
    assert result.returncode == 2
    command = shlex.join(
        ["vfl", "launch", str(scenario.run_toml), "--run-dir", str(scenario.run_dir)]
    )
    assert result.stderr.strip() == (
        f"vfl: error: run directory {str(scenario.run_dir)!r} already holds a run; continue it"
        f" with `{command} --resume` (with --set train.epochs=N to train an ended run further),"
        " or for a new run choose another --run-dir and give each party a new state_dir in its"
        " PARTY.toml (or move the run folder and the parties' state folders aside)"
    )
    assert "vfl run --resume" not in result.stderr
    assert sorted(p.name for p in scenario.run_dir.iterdir()) == ["checkpoint.pt", "logs"]


@pytest.mark.slow
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_launch_stopped_in_training_saves_every_role_and_resumes_with_launch_resume(
    tmp_path: Path, number: signal.Signals
) -> None:
    # Prepare: a launch long enough to be stopped after its first epoch
    scenario = make_scenario(tmp_path, epochs=40)
    launch = start(scenario, "launch", str(scenario.run_toml), "--run-dir", str(scenario.run_dir))
    assert launch.stderr is not None
    seen = []
    for line in launch.stderr:
        seen.append(line)
        if line.startswith("epoch 1 | "):
            break

    # Execute: as Ctrl-C at a terminal reaches vfl launch alone
    launch.send_signal(number)
    out, err = launch.communicate(timeout=300)

    # Assert: it stopped after a round, every role saved, and the message says how to go on
    assert launch.returncode == 128 + number, "".join(seen) + err
    last = err.strip().splitlines()[-1]
    command = shlex.join(
        ["vfl", "launch", str(scenario.run_toml), "--run-dir", str(scenario.run_dir)]
    )
    assert last.startswith(f"vfl: stopped by {number.name} after round "), err
    assert last.endswith(
        f"; saved its checkpoint and the metrics so far in {scenario.run_dir}; every party saved"
        f" its state at the server's checkpoint; continue with `{command} --resume`"
    )
    assert out == ""
    for party in scenario.party_tomls:
        assert list(scenario.state_dir(party).glob("checkpoint-*.pt"))

    # Execute: the command it named
    resumed = run_launch(scenario, "--resume", "--quiet", "--set=train.epochs=2", timeout=300)

    # Assert
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert resumed.stdout.startswith("final: ")


def test_launch_refuses_resume_without_a_run(tmp_path: Path) -> None:
    # Prepare: the control: --resume where nothing ran
    scenario = make_scenario(tmp_path)

    # Execute
    result = run_launch(scenario, "--resume")

    # Assert
    assert result.returncode == 2
    assert "holds no deployed run to resume" in result.stderr


def test_a_second_signal_kills_what_each_process_started_too(tmp_path: Path) -> None:
    # Prepare: a process leading its own session that started a worker and waits (as the server
    # with SecureBoost's encryption pool), its worker's ID written to a file
    worker_file = tmp_path / "worker.pid"
    leader = subprocess.Popen(
        ["sh", "-c", f"sleep 300 & echo $! > {worker_file}; wait"], start_new_session=True
    )
    deadline = time.monotonic() + 10
    while not worker_file.exists() or not worker_file.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    worker = int(worker_file.read_text())

    # Execute
    kill_group(leader)
    leader.wait(timeout=10)

    # Assert: the worker is gone too (not left running, re-parented to init)
    deadline = time.monotonic() + 10
    while _running(worker):
        assert time.monotonic() < deadline, f"worker {worker} still runs"
        time.sleep(0.05)
    kill_group(leader)  # an ended, reaped process: nothing is sent


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
