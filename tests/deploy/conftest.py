"""Fixtures of the deployment tests: one test PKI for the whole session, loopbacks closed,
processes killed, a one-party deployment per module."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.deploy import loopback
from tests.deploy.scenario import Scenario, make_scenario
from vfl.deploy.certs import PkiFiles, create_test_pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PkiFiles:
    return create_test_pki(tmp_path_factory.mktemp("pki"), parties=[1, 2, 3])


@pytest.fixture(autouse=True)
def close_loopbacks() -> Iterator[None]:
    """Close every loopback a test started, also when the test failed half-way."""
    yield
    while loopback.OPEN:
        loopback.OPEN.pop().close()


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test started; whatever still runs at the end is killed."""
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """A one-party deployment's files, shared by the tests of a module."""
    return make_scenario(tmp_path_factory.mktemp("one-party") / "d", num_parties=1)
