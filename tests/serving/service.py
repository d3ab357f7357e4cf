"""Start ``vfl serve`` and its parties as real processes, and call the scoring API."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.serving.registry_runs import ROOT, Deployed
from vfl.deploy.score_client import ScoringClient
from vfl.transport.security import PartyTls


def start(deployed: Deployed, name: str, *args: str) -> subprocess.Popen[bytes]:
    """``vfl ARGS`` with its output in ``ROOT/<name>.log``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    log = (deployed.root / f"{name}.log").open("ab")
    command = [sys.executable, "-m", "vfl.cli", *args]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)


@dataclass
class Service:
    """A running ``vfl serve`` with one ``vfl party --serve`` per party."""

    deployed: Deployed
    server: subprocess.Popen[bytes]
    port: int
    parties: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self, *, cert: tuple[Path, Path] | None = None) -> ScoringClient:
        cert_file, key_file = cert or self.deployed.client
        tls = PartyTls(self.deployed.ca.read_bytes(), cert_file.read_bytes(), key_file.read_bytes())
        return ScoringClient(self.address, tls)

    def score(self, ids: list[str]) -> dict[str, Any]:
        client = self.client()
        try:
            return client.score(ids)
        finally:
            client.close()

    def start_party(self, party: int, *extra: str) -> subprocess.Popen[bytes]:
        """(Re)start party ``party``'s ``vfl party --serve``."""
        process = self.start_party_process(party, *extra, name=f"party-{party}")
        self.parties[party] = process
        return process

    def start_party_process(self, party: int, *extra: str, name: str) -> subprocess.Popen[bytes]:
        """``vfl party --serve`` of party ``party`` (not tracked), logging to ``name``.log."""
        toml = str(self.deployed.party_tomls[party])
        return start(
            self.deployed, name, "party", "--config", toml, "--serve",
            "--server", self.address, *extra,
        )  # fmt: skip

    def wait_for_log(self, name: str, text: str, *, count: int = 1, timeout: float = 60) -> None:
        """Wait until ``name``'s log holds ``text`` ``count`` times (fail after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while self.log(name).count(text) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} in {name}.log:\n{self.log(name)[-3000:]}")
            time.sleep(0.05)

    def log(self, name: str) -> str:
        return (self.deployed.root / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        for process in [self.server, *self.parties.values()]:
            if process.poll() is None:
                process.terminate()
        for process in [self.server, *self.parties.values()]:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def start_service(deployed: Deployed, *extra: str, wait_s: float = 3.0) -> Service:
    """``vfl serve [EXTRA]`` and every party, once the server listens."""
    port_file = deployed.root / "serve.port"
    port_file.unlink(missing_ok=True)
    server = start(
        deployed, "serve", "serve", "--config", str(deployed.run_toml), "--model",
        str(deployed.run_dir), "--port-file", str(port_file), f"--wait-s={wait_s}", *extra,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not port_file.exists() or not port_file.read_text().strip():
        if server.poll() is not None or time.monotonic() > deadline:
            log = (deployed.root / "serve.log").read_text()[-3000:]
            server.kill()
            raise AssertionError(f"vfl serve did not start:\n{log}")
        time.sleep(0.05)
    service = Service(deployed, server, int(port_file.read_text()))
    for party in deployed.party_tomls:
        service.start_party(party)
    for party in deployed.party_tomls:
        service.wait_for_log("serve", f"party {party} connected")
    return service
