"""Fixtures of the deployment tests: one test PKI for the whole session."""

from __future__ import annotations

import pytest

from vfl.deploy.certs import PkiFiles, create_test_pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PkiFiles:
    return create_test_pki(tmp_path_factory.mktemp("pki"), parties=[1, 2, 3])
