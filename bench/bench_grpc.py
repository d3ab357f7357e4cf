"""Time and bytes of one training epoch over gRPC (TLS, loopback) against the in-process transport.

The MNIST example by default (4 quadrant parties). The server-side loop runs in this process;
over gRPC each party is a separate OS process (``multiprocessing`` spawn) that builds its role
with ``vfl.run.compose.build_party`` and dials the server with mutual TLS and a token, as a
deployed party does. Both runs use the same config, data and batch order; epochs alternate
between the two transports so that machine drift hits both alike. Reported per transport: the
median over ``--repeats`` epochs (after one warm-up epoch) of the training time (evaluation
excluded), the ledger's training bytes per epoch, and for gRPC the bytes its own counters saw
on the wire. On a shared machine wall time depends on what else runs (five busy processes get
more CPU than one), so the CPU seconds all processes of a run spent per epoch are reported too
(Linux ``/proc``). Every process uses one torch thread: on a shared machine, more OpenMP
threads than free cores make an epoch up to 25 times slower at random (threads spin at barriers
while their partner waits for a core).

    .venv/bin/python bench/bench_grpc.py [--config ...] [--repeats 3] [--set k=v] [--json out]
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from vfl.config import RunConfig, load_config
from vfl.deploy.certs import PkiFiles, create_test_pki
from vfl.run.compose import Blueprint, build_loop, build_party, build_server, build_session
from vfl.run.data import prepare
from vfl.run.models import ConfigModels, embedding_width
from vfl.run.session import LocalParties, Session
from vfl.transport import PartyEndpoint
from vfl.transport.grpc_party import PartyLink
from vfl.transport.grpc_transport import GrpcTransport
from vfl.transport.ledger import Ledger
from vfl.transport.link import PartyUnavailableError
from vfl.transport.security import PartyCredential, PartyTls, ServerTls

ROOT = Path(__file__).resolve().parents[1]


def serve_party(
    config_path: str, overrides: list[str], party: int, port: int, pki_dir: str
) -> None:
    """One party process: its block of the data, its role, its link to the server."""
    torch.set_num_threads(1)  # as the server and the in-process run (see the module docstring)
    logging.basicConfig(level=logging.WARNING, format=f"party {party}: %(levelname)s %(message)s")
    config = load_config(Path(config_path), overrides)
    _, _, data = prepare(config)
    role = build_party(
        Blueprint.from_config(config),
        party,
        data.train_blocks[party - 1],
        data.test_blocks[party - 1],
        task=data.task,
    )
    pki = Path(pki_dir)
    tls = PartyTls(
        (pki / "ca.pem").read_bytes(),
        (pki / f"party-{party}.pem").read_bytes(),
        (pki / f"party-{party}.key").read_bytes(),
    )
    token = (pki / f"party-{party}.token").read_text().strip()
    link = PartyLink(
        party,
        PartyEndpoint(party, role.handle).handle_frame,
        address=f"localhost:{port}",
        tls=tls,
        token=token,
        give_up_s=30,  # exit soon if the benchmark dies
    )
    link.serve()


def grpc_run(
    config: RunConfig, args: argparse.Namespace, pki: PkiFiles
) -> tuple[Session, GrpcTransport, list[Any]]:
    """The server loop over gRPC, with every party in its own process."""
    _, _, data = prepare(config)
    parties = list(range(1, data.num_parties + 1))
    tls = ServerTls(
        pki.server_cert.read_bytes(),
        pki.server_key.read_bytes(),
        pki.ca_cert.read_bytes(),
        mutual=True,
    )
    transport = GrpcTransport(
        {p: PartyCredential(pki.parties[p].token_sha256) for p in parties}, tls=tls
    )
    spawn = multiprocessing.get_context("spawn")
    processes = [
        spawn.Process(
            target=serve_party,
            args=(str(args.config), args.overrides, p, transport.port, str(pki.ca_cert.parent)),
            daemon=True,
        )
        for p in parties
    ]
    for process in processes:
        process.start()
    wait_for_parties(transport, processes, timeout_s=600)
    models = ConfigModels(config)
    widths = {
        p: embedding_width(models.bottom(p, block), block)
        for p, block in zip(parties, data.train_blocks, strict=True)
    }
    blueprint = Blueprint(config, models)
    server = build_server(
        blueprint,
        task=data.task,
        train_labels=data.train_labels,
        test_labels=data.test_labels,
        widths=widths,
    )
    return Session(build_loop(blueprint, server, transport), LocalParties()), transport, processes


def wait_for_parties(transport: GrpcTransport, processes: list[Any], *, timeout_s: float) -> None:
    """Wait until every party process has connected; fail at once if one of them died."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            transport.wait_for_parties(1.0)
            return
        except PartyUnavailableError:
            dead = [p.name for p in processes if p.exitcode is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"party processes did not connect (exited: {dead})") from None


def timed_epoch(simulation: Session, epoch: int) -> float:
    started = time.perf_counter()
    simulation.trainer.train_epoch(epoch)
    return time.perf_counter() - started


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system, all threads) of this process and of ``pids``."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = time.process_time()
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def train_bytes(ledger: Ledger | None) -> int:
    assert ledger is not None
    return ledger.total(phase="train")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "mnist_quadrants.toml")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = load_config(args.config, args.overrides)
    _, _, data = prepare(config)
    inproc = build_session(config, data)
    with tempfile.TemporaryDirectory() as directory:
        pki = create_test_pki(Path(directory), parties=list(range(1, data.num_parties + 1)))
        grpc, transport, processes = grpc_run(config, args, pki)
        pids = [p.pid for p in processes if p.pid is not None]
        results = measure(inproc, grpc, transport, args.repeats, pids)
        grpc.trainer.close()
        for process in processes:
            process.join(timeout=30)
    results["machine"] = f"{platform.machine()}, {torch.get_num_threads()} torch threads"
    results["config"] = str(args.config)
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def measure(
    inproc: Session,
    grpc: Session,
    transport: GrpcTransport,
    repeats: int,
    party_pids: list[int],
) -> dict[str, Any]:
    """Alternate epochs between the two transports; medians and per-epoch bytes."""
    times: dict[str, list[float]] = {"inproc": [], "grpc": []}
    cpu: dict[str, list[float]] = {"inproc": [], "grpc": []}
    pids: dict[str, list[int]] = {"inproc": [], "grpc": party_pids}
    ledger_bytes: dict[str, list[int]] = {"inproc": [], "grpc": []}
    wire_bytes: list[int] = []
    runs: dict[str, Session] = {"inproc": inproc, "grpc": grpc}
    for name, simulation in runs.items():  # warm-up: first-call costs, caches, connections
        print(f"warm-up epoch {name}: {timed_epoch(simulation, 0):.3f} s", flush=True)
    for epoch in range(1, repeats + 1):
        for name, simulation in runs.items():
            before = train_bytes(simulation.trainer.ledger)
            wire_before = transport.wire.sent("train") + transport.wire.received("train")
            cpu_before = cpu_seconds(pids[name])
            times[name].append(timed_epoch(simulation, epoch))
            cpu[name].append(cpu_seconds(pids[name]) - cpu_before)
            ledger_bytes[name].append(train_bytes(simulation.trainer.ledger) - before)
            if name == "grpc":
                wire = transport.wire.sent("train") + transport.wire.received("train")
                wire_bytes.append(wire - wire_before)
            print(
                f"epoch {epoch} {name}: {times[name][-1]:.3f} s, {cpu[name][-1]:.3f} CPU s",
                flush=True,
            )
    median: Callable[[list[float]], float] = statistics.median
    ledger = ledger_bytes["grpc"][0]
    return {
        "seconds_per_epoch": {name: median(t) for name, t in times.items()},
        "all_seconds": times,
        "time_ratio": median(times["grpc"]) / median(times["inproc"]),
        "cpu_seconds_per_epoch": {name: median(c) for name, c in cpu.items()},
        "cpu_ratio": median(cpu["grpc"]) / median(cpu["inproc"]),
        "ledger_bytes_per_epoch": {name: b[0] for name, b in ledger_bytes.items()},
        "ledgers_equal": ledger_bytes["inproc"] == ledger_bytes["grpc"],
        "wire_bytes_per_epoch": wire_bytes[0],
        "wire_over_ledger": wire_bytes[0] / ledger - 1,
    }


if __name__ == "__main__":
    main()
