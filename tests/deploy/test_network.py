"""Server and parties on different hosts: two network namespaces joined by a veth pair.

Needs root and ``ip netns`` (skipped otherwise). The server listens on 10.200.N.1 in one
namespace; both parties run in the other, at 10.200.N.2, and dial it across the link. The
link's own byte counters then show what TLS, HTTP/2 and TCP/IP add to the transport's counts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.scenario import ROOT, deploy_command, make_scenario

pytestmark = pytest.mark.network


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


def _namespaces_available() -> bool:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    probe = f"vflprobe{os.getpid()}"
    if _ip("netns", "add", probe).returncode != 0:
        return False
    _ip("netns", "del", probe)
    return True


@dataclass(frozen=True)
class Hosts:
    server_ns: str
    server_ip: str
    party_ns: str
    party_ip: str
    server_link: str


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    if not _namespaces_available():
        pytest.skip("network namespaces need root and `ip netns`")
    tag = os.getpid() % 100000
    net = 10 + os.getpid() % 240
    made = Hosts(f"vfls{tag}", f"10.200.{net}.1", f"vflp{tag}", f"10.200.{net}.2", f"vfla{tag}")
    peer = f"vflb{tag}"
    commands = [
        ["netns", "add", made.server_ns],
        ["netns", "add", made.party_ns],
        ["link", "add", made.server_link, "type", "veth", "peer", "name", peer],
        ["link", "set", made.server_link, "netns", made.server_ns],
        ["link", "set", peer, "netns", made.party_ns],
    ]
    for ns, link, address in (
        (made.server_ns, made.server_link, made.server_ip),
        (made.party_ns, peer, made.party_ip),
    ):
        commands += [
            ["-n", ns, "addr", "add", f"{address}/24", "dev", link],
            ["-n", ns, "link", "set", link, "up"],
            ["-n", ns, "link", "set", "lo", "up"],
        ]
    try:
        for command in commands:
            result = _ip(*command)
            assert result.returncode == 0, f"ip {' '.join(command)}: {result.stderr}"
        yield made
    finally:
        _ip("netns", "del", made.server_ns)
        _ip("netns", "del", made.party_ns)


def _in(ns: str, command: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        ["ip", "netns", "exec", ns, *command],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        env=env,
        cwd=cwd,
    )


def _counter(ns: str, link: str, name: str) -> int:
    result = subprocess.run(
        ["ip", "netns", "exec", ns, "cat", f"/sys/class/net/{link}/statistics/{name}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(result.stdout)


def test_server_and_parties_on_different_hosts_complete_a_run(hosts: Hosts, tmp_path: Path) -> None:
    # Prepare
    scenario = make_scenario(tmp_path, server_names=[hosts.server_ip], epochs=2)
    address = f"{hosts.server_ip}:50051"
    server_args = ["server", "--config", str(scenario.run_toml), "--run-dir", str(scenario.run_dir)]
    server = _in(
        hosts.server_ns,
        deploy_command(*server_args, f"--set=deployment.listen={address}"),
        tmp_path / "server.log",
        tmp_path,
    )
    parties = [
        _in(
            hosts.party_ns,
            deploy_command("party", "--config", str(toml), "--server", address),
            tmp_path / f"party-{party}.log",
            tmp_path,
        )
        for party, toml in scenario.party_tomls.items()
    ]

    # Execute
    try:
        status = server.wait(timeout=180)
        party_status = [p.wait(timeout=60) for p in parties]
    finally:
        for process in [server, *parties]:
            if process.poll() is None:
                process.kill()

    # Assert
    assert status == 0, (tmp_path / "server.log").read_text()[-3000:]
    assert party_status == [0, 0]
    assert f"connected to {address}" in (tmp_path / "party-1.log").read_text()
    summary = json.loads((scenario.run_dir / "summary.json").read_text())
    assert summary["epochs"] == 2
    wire = json.loads((scenario.run_dir / "wire.json").read_text())
    application = sum(c["bytes"] for d in ("sent", "received") for c in wire[d].values())
    link = sum(_counter(hosts.server_ns, hosts.server_link, n) for n in ("tx_bytes", "rx_bytes"))
    print(f"\nbytes on the veth link: {link}; counted by the transport: {application}")
    assert application < link
