"""The deployment commands of ``vfl``: argument handling and the errors they report."""

from __future__ import annotations

import logging
import stat
import time
import warnings
from pathlib import Path

import pytest

from tests.deploy.scenario import make_scenario, run_launch
from vfl.cli import main
from vfl.deploy.port_file import read_port, wait_for_port
from vfl.errors import ProtocolError
from vfl.transport.security import token_digest


@pytest.mark.parametrize("command", ["server", "party", "launch", "certs"])
def test_the_deployment_commands_are_subcommands_of_vfl(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Execute
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])

    # Assert
    assert exited.value.code == 0
    assert f" {command} " in capsys.readouterr().out


def test_certs_writes_the_files_and_prints_the_token_digests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Execute
    status = main(["certs", "--out", str(tmp_path), "--parties", "1", "2"])

    # Assert
    assert status == 0
    out = capsys.readouterr().out
    for party in (1, 2):
        digest = token_digest((tmp_path / f"party-{party}.token").read_text().strip())
        assert f'id = {party}\ntoken_sha256 = "{digest}"' in out
    assert {p.name for p in tmp_path.iterdir()} >= {"ca.pem", "server.pem", "server.key"}


def test_certs_refuses_a_folder_that_holds_a_ca_and_names_the_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: a folder with a CA and keys from an earlier call
    assert main(["certs", "--out", str(tmp_path), "--parties", "1"]) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    capsys.readouterr()

    # Execute
    status = main(["certs", "--out", str(tmp_path), "--parties", "1", "2"])

    # Assert: refused by name, and nothing was touched
    assert status == 2
    error = capsys.readouterr().err
    assert (
        "already holds ca.pem, ca.key, server.pem, server.key, party-1.pem, party-1.key,"
        " party-1.token; writing a new CA would replace them" in error
    )
    assert "--force" in error and "party-2" not in error
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_certs_with_force_moves_every_replaced_file_and_key_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    assert main(["certs", "--out", str(tmp_path), "--parties", "1"]) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    # Execute
    status = main(["certs", "--out", str(tmp_path), "--parties", "1", "--force"])

    # Assert: a new CA and keys, and every old file kept, byte for byte, keys still private
    assert status == 0
    (aside,) = tmp_path.glob("replaced-*")
    assert f"moved the files it replaces, keys included, to {aside}" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in aside.iterdir()} == before
    assert (tmp_path / "ca.key").read_bytes() != before["ca.key"]
    for key in ("ca.key", "server.key", "party-1.key", "party-1.token"):
        assert stat.S_IMODE((aside / key).stat().st_mode) == 0o600
    assert stat.S_IMODE(aside.stat().st_mode) == 0o700


def test_a_server_config_without_a_deployment_table_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    config = tmp_path / "run.toml"
    config.write_text('[data]\nname = "table"\npath = "x.csv"\nlabel = "y"\n')

    # Execute
    status = main(["server", "--config", str(config)])

    # Assert
    assert status == 2
    assert "has no [deployment] table" in capsys.readouterr().err


def test_a_party_refuses_a_state_directory_of_an_earlier_run_without_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path)
    scenario.state_dir(1).mkdir()
    (scenario.state_dir(1) / "checkpoint-5.pt").write_bytes(b"")

    # Execute
    status = main(["party", "--config", str(scenario.party_tomls[1])])

    # Assert
    assert status == 2
    assert "holds a previous run" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ("localhost", "--server: 'localhost' has no port; give host:port, e.g. localhost:50051"),
        ("localhost:99999", "--server: 'localhost:99999': port 99999 is out of range"),
        ("::1:5000", "--server: '::1:5000': write an IPv6 host in brackets, e.g. [::1]:5000"),
    ],
)
def test_a_party_refuses_a_server_address_it_cannot_dial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: str, expected: str
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path)

    # Execute
    started = time.monotonic()
    status = main(["party", "--config", str(scenario.party_tomls[1]), "--server", server])

    # Assert: refused before anything is dialed (a missing port used to dial 443)
    assert status == 2
    assert expected in capsys.readouterr().err
    assert time.monotonic() - started < 5
    assert not scenario.state_dir(1).exists()


def test_the_server_refuses_a_listen_port_out_of_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path)
    listen = "--set=deployment.listen=127.0.0.1:99999"

    # Execute
    status = main(["server", "--config", str(scenario.run_toml), listen])

    # Assert: refused, where 99999 used to become another port silently
    assert status == 2
    assert (
        "deployment.listen: '127.0.0.1:99999': port 99999 is out of range; give 0..65535"
        in capsys.readouterr().err
    )


def test_launch_stops_every_process_and_names_a_refused_party(tmp_path: Path) -> None:
    # Prepare: a one-party run whose party's token file holds the wrong token
    scenario = make_scenario(tmp_path, num_parties=1, epochs=1)
    scenario.pki.parties[1].token.write_text("forged\n")

    # Execute
    result = run_launch(scenario, timeout=120)

    # Assert
    assert result.returncode == 2
    assert "party-1 exited with status 2" in result.stderr
    assert "refused party 1" in result.stderr
    assert "wrong token" in (scenario.run_dir / "logs" / "server.log").read_text()


def test_launch_refuses_a_party_state_of_an_earlier_run_before_it_starts_anything(
    tmp_path: Path,
) -> None:
    # Prepare: party 2's state directory holds an earlier run; the run folder is new
    scenario = make_scenario(tmp_path)
    scenario.state_dir(2).mkdir()
    (scenario.state_dir(2) / "checkpoint-5.pt").write_bytes(b"kept")

    # Execute
    result = run_launch(scenario, timeout=120)

    # Assert: one line naming the folder, how to continue and how to start anew; no process
    # was started (the logs folder comes before the first), nothing of the old run changed
    assert result.returncode == 2
    assert "the state directories of parties [2] hold a previous run" in result.stderr
    assert f"whose run folder is not '{scenario.run_dir}'" in result.stderr
    assert "`--run-dir` and `--resume`" in result.stderr and "journal_dir" in result.stderr
    command = f"`vfl launch {scenario.run_toml}` with that run's"  # not this launch's --run-dir
    assert command in result.stderr
    assert not scenario.run_dir.exists()
    assert (scenario.state_dir(2) / "checkpoint-5.pt").read_bytes() == b"kept"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("id_column", "id_colum"), "unknown key 'data.id_colum' (did you mean 'data.id_column'?)"),
        (("party2-state", ""), "state_dir"),
    ],
    ids=["a mistyped key", "an empty state_dir"],
)
def test_launch_names_a_party_config_mistake_before_it_starts_anything(
    tmp_path: Path, edit: tuple[str, str], expected: str
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path)
    party2 = scenario.party_tomls[2]
    party2.write_text(party2.read_text().replace(*edit))

    # Execute
    result = run_launch(scenario, timeout=120)

    # Assert: the file and the key, before any process or folder
    assert result.returncode == 2
    assert f"{party2}: " in result.stderr and expected in result.stderr
    assert not scenario.run_dir.exists()


def test_the_server_never_starts_a_new_run_over_a_users_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the run folder holds the user's own notes
    scenario = make_scenario(tmp_path / "deployment")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("mine\n")

    # Execute
    status = main(["server", "--config", str(scenario.run_toml), "--run-dir", str(run_dir)])

    # Assert
    assert status == 2
    assert "'notes.txt'" in capsys.readouterr().err
    assert sorted(p.name for p in run_dir.iterdir()) == ["notes.txt"]


def test_a_server_run_that_fails_says_so_in_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the labels file the server config names is gone
    scenario = make_scenario(tmp_path / "deployment")
    labels = tmp_path / "deployment" / "holder0-train.csv"
    labels.unlink()
    run_dir = tmp_path / "run"

    # Execute
    status = main(["server", "--config", str(scenario.run_toml), "--run-dir", str(run_dir)])

    # Assert
    assert status == 2
    assert "holder0-train.csv" in (run_dir / "error.txt").read_text()
    assert "holder0-train.csv" in capsys.readouterr().err


def test_a_party_dials_either_an_address_or_a_port_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path)
    toml = str(scenario.party_tomls[1])
    both = ["--server", "127.0.0.1:5000", "--server-port-file", str(tmp_path / "port")]

    # Execute
    status = main(["party", "--config", toml, *both])

    # Assert: refused before anything is dialed or written
    assert status == 2
    assert "give one of --server and --server-port-file" in capsys.readouterr().err
    assert not scenario.state_dir(1).exists()


def test_a_port_file_is_read_once_it_is_complete(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "server.port"

    # Execute / Assert: absent, cut short, then whole
    assert read_port(path) is None
    path.write_text("512")
    assert read_port(path) is None
    path.write_text("51234\n")
    assert read_port(path) == 51234 == wait_for_port(path, 1.0)


def test_waiting_for_a_port_that_never_comes_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(
        ProtocolError, match=r"no server port appeared in .*server.port within 0.1 s"
    ):
        wait_for_port(tmp_path / "server.port", 0.1)


def test_serve_refuses_an_http_port_out_of_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path)
    args = ["--config", str(scenario.run_toml), "--model", str(tmp_path / "none")]

    # Execute
    status = main(["serve", *args, "--http-port", "70000"])

    # Assert
    assert status == 2
    assert "--http-port 70000 is out of range; give 0..65535" in capsys.readouterr().err


def test_a_launched_server_sends_its_warnings_to_launch_as_notes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the server under vfl launch (--events): what launch shows of its warnings
    from vfl.deploy.commands import warnings_as_notes
    from vfl.run.progress import Progress

    class Recorded(Progress):
        def __init__(self) -> None:
            self.notes: list[str] = []

        def note(self, text: str) -> None:
            self.notes.append(text)

    progress = Recorded()
    root = logging.getLogger()
    before = list(root.handlers)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)

    # Execute
    try:
        warnings_as_notes(progress)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("compress.embedding: a 2-bit lattice quantizer ...", stacklevel=1)
        logging.getLogger("vfl.transport").warning("waiting for parties [2] (...)")
    finally:
        root.handlers[:] = before

    # Assert: one clean line each, no source path
    assert progress.notes == [
        "vfl: warning: compress.embedding: a 2-bit lattice quantizer ...",
        "vfl: warning: waiting for parties [2] (...)",
    ]
    assert ".py" not in capsys.readouterr().err
