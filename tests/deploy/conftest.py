"""Fixtures of the deployment tests: one test PKI for the whole session, loopbacks closed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deploy import loopback
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
