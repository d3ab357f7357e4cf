"""Every path key of every config kind: a relative path in a file means a path next to the file.

Checked with the working directory elsewhere, so that a path resolved against it would differ.
Where results go in a run config or a sweep (``output.dir``, ``output_dir``) follows the working
directory instead (documented in docs/config.md and docs/experiments.md); a value given with
``--set`` is taken as typed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vfl.config import load_config
from vfl.deploy.config import load_party_config, load_run_config
from vfl.experiments.spec import read_sweep

RUN_TOML = """
[data]
name = "table"
path = "labels.csv"
test_path = "labels_test.csv"
label = "y"
id_column = "id"
[output]
dir = "results"
[deployment]
[deployment.tls]
cert = "certs/server.pem"
key = "certs/server.key"
ca = "certs/ca.pem"
[[deployment.parties]]
id = 1
config = "party1.toml"
token_sha256 = "{digest}"
"""
PARTY_TOML = """
party_id = 1
server = "localhost:50051"
state_dir = "state"
token_file = "party.token"
audit_log = "audit.jsonl"
model = "bundle"
[data]
train = "train.csv"
test = "test.csv"
predict = "new.csv"
serve = "serve.csv"
id_column = "id"
[tls]
ca = "certs/ca.pem"
cert = "certs/p.pem"
key = "certs/p.key"
[privacy]
journal_dir = "journal"
"""
RUN_PATH_KEYS: dict[str, Callable[[Any], str]] = {
    "data.path": lambda c: c[0].data.path,
    "data.test_path": lambda c: c[0].data.test_path,
    "output.dir": lambda c: c[0].output.dir,
    "deployment.tls.cert": lambda c: c[1].tls.cert,
    "deployment.tls.key": lambda c: c[1].tls.key,
    "deployment.tls.ca": lambda c: c[1].tls.ca,
    "deployment.parties.config": lambda c: c[1].parties[0].config,
}
PARTY_PATH_KEYS: dict[str, Callable[[Any], str]] = {
    "state_dir": lambda c: c.state_dir,
    "token_file": lambda c: c.token_file,
    "audit_log": lambda c: c.audit_log,
    "model": lambda c: c.model,
    "data.train": lambda c: c.data.train,
    "data.test": lambda c: c.data.test,
    "data.predict": lambda c: c.data.predict,
    "data.serve": lambda c: c.data.serve,
    "tls.ca": lambda c: c.tls.ca,
    "tls.cert": lambda c: c.tls.cert,
    "tls.key": lambda c: c.tls.key,
    "privacy.journal_dir": lambda c: c.privacy.journal_dir,
}
PARTY_VALUES = {
    "data.train": "train.csv",
    "data.test": "test.csv",
    "data.predict": "new.csv",
    "data.serve": "serve.csv",
    "tls.ca": "certs/ca.pem",
    "tls.cert": "certs/p.pem",
    "tls.key": "certs/p.key",
    "state_dir": "state",
    "token_file": "party.token",
    "audit_log": "audit.jsonl",
    "model": "bundle",
    "privacy.journal_dir": "journal",
}
RUN_VALUES = {
    "data.path": "labels.csv",
    "data.test_path": "labels_test.csv",
    "output.dir": "results",
    "deployment.tls.cert": "certs/server.pem",
    "deployment.tls.key": "certs/server.key",
    "deployment.tls.ca": "certs/ca.pem",
    "deployment.parties.config": "party1.toml",
}


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[Path]:
    """The folder of the config files, with the working directory set to another one."""
    folder, cwd = tmp_path / "configs", tmp_path / "cwd"
    folder.mkdir()
    cwd.mkdir()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        yield folder
    finally:
        os.chdir(before)


@pytest.mark.parametrize("key", RUN_PATH_KEYS)
def test_each_path_of_run_toml_resolves_against_its_folder(elsewhere: Path, key: str) -> None:
    # Prepare
    path = elsewhere / "RUN.toml"
    path.write_text(RUN_TOML.format(digest="0" * 64))

    # Execute
    loaded = load_run_config(path)

    # Assert
    assert RUN_PATH_KEYS[key](loaded) == str(elsewhere / RUN_VALUES[key])


@pytest.mark.parametrize("key", PARTY_PATH_KEYS)
def test_each_path_of_party_toml_resolves_against_its_folder(elsewhere: Path, key: str) -> None:
    # Prepare
    path = elsewhere / "party1.toml"
    path.write_text(PARTY_TOML)

    # Execute
    loaded = load_party_config(path)

    # Assert
    assert PARTY_PATH_KEYS[key](loaded) == str(elsewhere / PARTY_VALUES[key])


@pytest.mark.parametrize("key", ["path", "test_path"])
def test_the_data_files_of_a_run_config_resolve_against_its_folder(
    elsewhere: Path, key: str
) -> None:
    # Prepare
    path = elsewhere / "run.toml"
    other = "test_path" if key == "path" else "path"
    path.write_text(
        f'[data]\nname = "table"\n{key} = "tables/t.csv"\n{other} = "/abs.csv"\nlabel = "y"\n'
    )

    # Execute
    config = load_config(path)

    # Assert
    assert getattr(config.data, key) == str(elsewhere / "tables/t.csv")


def test_where_a_run_config_s_results_go_follows_the_working_directory(elsewhere: Path) -> None:
    # Prepare: the control of the tests above: `vfl run examples/x.toml` writes runs/ here
    path = elsewhere / "run.toml"
    path.write_text('[output]\ndir = "runs"\n')

    # Execute
    config = load_config(path)

    # Assert
    assert config.output.dir == "runs"


def test_a_path_given_with_set_is_taken_as_typed(elsewhere: Path) -> None:
    # Prepare
    run, party = elsewhere / "RUN.toml", elsewhere / "party1.toml"
    run.write_text(RUN_TOML.format(digest="0" * 64))
    party.write_text(PARTY_TOML)

    # Execute
    config, _ = load_run_config(run, ["output.dir=mine", "data.path=mine.csv"])
    party_config = load_party_config(party, ["state_dir=here"])
    plain = load_config(None, ["data.path=x.csv"])

    # Assert
    assert (config.output.dir, config.data.path) == ("mine", "mine.csv")
    assert party_config.state_dir == "here"
    assert plain.data.path == "x.csv"


def test_a_sweep_s_base_resolves_against_its_folder_and_its_output_does_not(
    elsewhere: Path,
) -> None:
    # Prepare
    (elsewhere / "base.toml").write_text("[train]\nepochs = 1\n")
    path = elsewhere / "sweep.toml"
    path.write_text('base = "base.toml"\nname = "s"\n')

    # Execute
    spec = read_sweep(path)

    # Assert
    assert spec.base == elsewhere / "base.toml"
    assert spec.folder == Path("runs/sweeps/s")
