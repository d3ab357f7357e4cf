"""Every command checks all its arguments before it changes a file: ``vfl certs --force`` first,
and ``vfl launch`` into a folder that is not its own.

Each case runs ``vfl`` as a real process over a folder that holds a working CA, keys and tokens,
with ``--force`` and one bad argument: it must exit 2 naming the value, print no traceback, and
leave every file where and as it was.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.runs import snapshot, vfl_process
from tests.deploy.scenario import make_scenario

TIMEOUT_S = 60


def vfl(*args: str) -> subprocess.CompletedProcess[str]:
    return vfl_process(*args, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def working_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("certs")
    made = vfl("certs", "--out", str(folder), "--parties", "1", "2", "--clients", "analyst")
    assert made.returncode == 0, made.stderr
    return folder


BAD_ARGUMENTS = {
    "a server name with a space": (["--server-name", "a b"], "invalid server name 'a b'"),
    "a non-ASCII server name": (
        ["--server-name", "bücher.example"],
        "give its ASCII (IDNA) form 'xn--bcher-kva.example'",
    ),
    "an empty server name": (["--server-name", ""], "invalid server name ''"),
    "ten million days": (["--days", "10000000"], "--days must lie in 1..36500"),
    "a huge number of days": (["--days", "9" * 40], "--days must lie in 1..36500"),
    "zero days": (["--days", "0"], "got 0"),
    "a non-ASCII client name": (["--clients", "анна"], "invalid client name 'анна'"),
    "a party id of zero": (["--parties", "0", "1"], "party ids must be distinct"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_certs_with_force_and_a_bad_argument_moves_nothing(working_ca: Path, name: str) -> None:
    # Prepare
    extra, fragment = BAD_ARGUMENTS[name]
    before = snapshot(working_ca)
    parties = [] if "--parties" in extra else ["--parties", "1", "2"]

    # Execute
    result = vfl("certs", "--out", str(working_ca), *parties, "--force", *extra)

    # Assert: refused in one line naming the value; every file where and as it was
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("vfl: error: ") and fragment in result.stderr
    assert snapshot(working_ca) == before


def test_certs_with_force_and_good_arguments_does_move_the_files(tmp_path: Path) -> None:
    # Prepare: the negative control: the same call with valid names replaces the files
    assert vfl("certs", "--out", str(tmp_path), "--parties", "1").returncode == 0
    before = snapshot(tmp_path)

    # Execute
    result = vfl(
        "certs", "--out", str(tmp_path), "--parties", "1", "--force", "--server-name", "a.example"
    )

    # Assert
    assert result.returncode == 0, result.stderr
    (aside,) = tmp_path.glob("replaced-*")
    assert snapshot(aside) == before
    assert (tmp_path / "ca.key").read_bytes() != before["ca.key"]


def test_launch_into_a_users_folder_writes_nothing_there(tmp_path: Path) -> None:
    # Prepare: the run folder holds the user's own notes
    scenario = make_scenario(tmp_path / "deployment", num_parties=1)
    run_dir = tmp_path / "mine"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("mine\n")

    # Execute
    result = vfl("launch", str(scenario.run_toml), "--run-dir", str(run_dir))

    # Assert: refused before the logs folder (or anything) goes in
    assert result.returncode == 2
    assert "'notes.txt'" in result.stderr and "Traceback" not in result.stderr
    assert snapshot(run_dir) == {"notes.txt": b"mine\n"}
    assert [p.name for p in run_dir.iterdir()] == ["notes.txt"]
