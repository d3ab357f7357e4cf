"""The ``fake_cuda`` fixture: a CUDA device played by the CPU (see ``fake_accelerator``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.device.fake_accelerator import FakeCuda, fake_cuda_device


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCuda]:
    with fake_cuda_device(monkeypatch) as fake:
        yield fake
