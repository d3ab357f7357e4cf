"""PARTY.toml and the deployment part of RUN.toml: typed loading, paths, clear errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from vfl.deploy.config import load_party_config, load_run_config, party_view
from vfl.errors import ConfigError

DIGEST = "ab" * 32

RUN = """
[data]
name = "table"
path = "labels/train.csv"
test_path = "labels/test.csv"
label = "y"
id_column = "id"
[deployment]
listen = "0.0.0.0:7000"
[deployment.tls]
cert = "certs/server.pem"
key = "certs/server.key"
[[deployment.parties]]
id = 1
token_sha256 = "{digest}"
config = "p1.toml"
[[deployment.parties]]
id = 2
token_sha256 = "{digest}"
"""

PARTY = """
party_id = 2
server = "server.example:7000"
state_dir = "state"
token_file = "/secrets/party-2.token"
[data]
train = "bank_train.parquet"
test = "bank_test.parquet"
id_column = "customer"
columns = ["income", "debt"]
[tls]
ca = "certs/ca.pem"
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_run_config_resolves_paths_next_to_the_file_and_fills_the_partition(
    tmp_path: Path,
) -> None:
    # Prepare
    run_toml = write(tmp_path / "run.toml", RUN.format(digest=DIGEST))

    # Execute
    config, deployment = load_run_config(run_toml, ["train.epochs=3"])

    # Assert
    assert config.data.path == str(tmp_path / "labels/train.csv")
    assert deployment.tls.cert == str(tmp_path / "certs/server.pem")
    assert deployment.parties[0].config == str(tmp_path / "p1.toml")
    assert config.partition.num_parties == 2
    assert config.train.epochs == 3
    assert sorted(deployment.credentials()) == [1, 2]
    assert party_view(config).data.path == ""


def test_party_config_keeps_absolute_paths_and_resolves_relative_ones(tmp_path: Path) -> None:
    # Execute
    config = load_party_config(write(tmp_path / "party.toml", PARTY), ["give_up_s=5"])

    # Assert
    assert config.party_id == 2
    assert config.data.train == str(tmp_path / "bank_train.parquet")
    assert config.token_file == "/secrets/party-2.token"
    assert config.tls.ca == str(tmp_path / "certs/ca.pem")
    assert config.data.columns == ("income", "debt")
    assert config.give_up_s == 5


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('name = "table"', 'name = "mnist"'), "data.name must be 'table'"),
        (lambda t: t.replace('id_column = "id"', ""), "data.id_column must name"),
        (lambda t: t.split("[deployment]")[0], "has no \\[deployment\\] table"),
        (lambda t: t.replace(f'token_sha256 = "{DIGEST}"\n', "", 1), "party 1 needs a token"),
        (lambda t: t.replace("id = 2", "id = 1"), "party ids must be distinct"),
        (lambda t: t + "[partition]\nscheme = 'random'\nnum_parties = 3\n", "num_parties is 3"),
        (lambda t: t.replace('cert = "certs/server.pem"\n', ""), "TLS is required"),
        (lambda t: t.replace("listen =", "listn ="), "did you mean 'deployment.listen'"),
        (
            lambda t: t.replace('"0.0.0.0:7000"', '"0.0.0.0:99999"'),
            "deployment.listen: '0.0.0.0:99999': port 99999 is out of range; give 0..65535"
            " \\(0: a free port\\)",
        ),
        (
            lambda t: t.replace('"0.0.0.0:7000"', '"0.0.0.0"'),
            "deployment.listen: '0.0.0.0' has no port; give host:port",
        ),
    ],
)
def test_run_configs_a_deployment_cannot_run_are_refused_by_name(
    tmp_path: Path,
    edit: Callable[[str], str],
    message: str,
) -> None:
    run_toml = write(tmp_path / "run.toml", edit(RUN.format(digest=DIGEST)))
    with pytest.raises(ConfigError, match=message):
        load_run_config(run_toml)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('server = "server.example:7000"', 'server = "nohost"'), "host:port"),
        (
            lambda t: t.replace('"server.example:7000"', '"server.example"'),
            "^server: 'server.example' has no port; give host:port, e.g. server.example:50051$",
        ),
        (
            lambda t: t.replace('"server.example:7000"', '"server.example:0"'),
            "^server: 'server.example:0': port 0 is out of range; give 1..65535$",
        ),
        (lambda t: t.replace('id_column = "customer"', 'id_column = ""'), "name the ID column"),
        (lambda t: t.replace('["income", "debt"]', '["customer"]'), "must not include the ID"),
        (lambda t: t.replace('ca = "certs/ca.pem"', 'cert = "c.pem"'), "TLS is required"),
        (lambda t: t.replace("party_id = 2", "party_id = 0"), "party ids start at 1"),
        (
            lambda t: t + "[privacy]\nmax_epsilon = -1\n",
            r"^privacy\.max_epsilon: must be >= 0 \(0 = no limit\), got -1\.0$",
        ),
        (
            lambda t: t + "[privacy]\ndelta = 1\n",
            r"^privacy\.delta: must lie in \(0, 1\), got 1\.0$",
        ),
    ],
)
def test_party_configs_with_errors_are_refused_by_name(
    tmp_path: Path,
    edit: Callable[[str], str],
    message: str,
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_party_config(write(tmp_path / "party.toml", edit(PARTY)))
