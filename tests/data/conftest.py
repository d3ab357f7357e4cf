"""Test isolation for the data tests: a temporary cache, and no network or package tools."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vfl.data import registry


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Point the cache at a temporary folder and make any real network or package-tool use fail."""
    monkeypatch.setenv("VFL_DATA_DIR", str(tmp_path / "cache"))
    real_urlopen = urllib.request.urlopen

    def local_only(request: Any, *args: Any, **kwargs: Any) -> Any:
        url = request.full_url if isinstance(request, urllib.request.Request) else str(request)
        if not url.startswith("file:"):
            raise RuntimeError(f"a test tried to reach the network: {url}")
        return real_urlopen(request, *args, **kwargs)

    def no_tools(argv: Any, cwd: Path) -> None:
        raise RuntimeError(f"a test tried to run a package tool: {argv}")

    monkeypatch.setattr(urllib.request, "urlopen", local_only)
    monkeypatch.setattr(registry, "run_package_tool", no_tools)
    yield
