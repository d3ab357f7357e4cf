"""The ``fake_cuda`` fixture: a CUDA device played by the CPU (see ``fake_accelerator``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.device.fake_accelerator import FakeCuda, fake_cuda_device


@pytest.fixture
def fake_cuda() -> Iterator[FakeCuda]:
    """The whole test runs on a machine with one (pretend) CUDA device."""
    with fake_cuda_device() as fake:
        yield fake
