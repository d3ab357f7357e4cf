"""Online scoring latency and throughput: ``vfl serve`` with 3 Adult parties on loopback.

Trains the Adult example (``examples/adult_3party.toml``, 3 parties by column groups) for
``--epochs`` in one process, which exports its bundles; writes each party's raw table of the
whole Adult test split (16,281 rows, the party's own columns), a test CA with server, party and
client certificates, a RUN.toml and one PARTY.toml per party; then starts ``vfl serve`` and
three ``vfl party --serve`` processes, each dialing the service over mutual TLS with a token.

Measured from one client process holding one channel (mutual TLS, client certificate):

- single-ID latency: ``--singles`` sequential requests of one random test ID each (after
  ``--warmup`` requests), p50 and p99 in ms;
- throughput: ``--batches`` sequential requests of 1,000 random test IDs, IDs scored per second
  (median over requests).

Every process uses one torch thread. ``--repeats`` runs the measurement that many times on the
same service and reports the median of each figure across runs.

    .venv/bin/python bench/bench_serve.py [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from vfl.cli import main as vfl_main
from vfl.data.adult import read_adult_file
from vfl.data.fetch import data_dir
from vfl.deploy.certs import create_test_pki
from vfl.deploy.score_client import ScoringClient
from vfl.run.bundles import BUNDLE
from vfl.run.predict import Model
from vfl.transport.security import PartyTls

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples/adult_3party.toml"


def train(root: Path, epochs: int) -> Path:
    """The Adult example trained in one process; its bundles in RUN_DIR/bundle."""
    run_dir = root / "run"
    args = ["run", str(EXAMPLE), "--run-dir", str(run_dir), "--set", f"train.epochs={epochs}"]
    if vfl_main([*args, "--set", "output.progress=false"]) != 0:
        raise SystemExit("training failed")
    return run_dir


def write_deployment(run_dir: Path, root: Path) -> tuple[Path, dict[int, Path], list[str], Path]:
    """RUN.toml, PARTY.tomls, the parties' tables and certificates; the test IDs; the CA dir."""
    model = Model.load(run_dir)
    raw = read_adult_file(data_dir() / "adult" / "adult.test")
    ids = np.arange(len(raw))
    pki = create_test_pki(root / "certs", parties=list(model.parties), clients=["bench"])
    labels = root / "ids.csv"
    pd.DataFrame({"id": ids, "income": raw["income"]}).to_csv(labels, index=False)
    run_lines = [
        "[data]",
        'name = "table"',
        f'path = "{labels}"',
        f'test_path = "{labels}"',
        'label = "income"',
        'id_column = "id"',
        "[train]",
        "threads = 1",
        "[deployment]",
        'listen = "127.0.0.1:0"',
        "request_timeout_s = 30",
        "[deployment.tls]",
        f'cert = "{pki.server_cert}"',
        f'key = "{pki.server_key}"',
        f'ca = "{pki.ca_cert}"',
        "mutual = true",
    ]
    tomls = {}
    for party, bundle in model.parties.items():
        assert bundle.encoder is not None
        table = root / f"party{party}.csv"
        raw[list(bundle.encoder.raw_columns)].assign(id=ids).to_csv(table, index=False)
        files = pki.parties[party]
        toml = root / f"party{party}.toml"
        toml.write_text(
            f'party_id = {party}\nserver = "localhost:1"\nstate_dir = "{root}/state{party}"\n'
            f'model = "{run_dir / BUNDLE}"\ntoken_file = "{files.token}"\nthreads = 1\n'
            f'[data]\ntrain = "{table}"\ntest = "{table}"\nserve = "{table}"\n'
            f'id_column = "id"\n[tls]\nca = "{pki.ca_cert}"\ncert = "{files.cert}"\n'
            f'key = "{files.key}"\n'
        )
        tomls[party] = toml
        run_lines += ["[[deployment.parties]]", f"id = {party}", f'config = "{toml}"']
        run_lines.append(f'token_sha256 = "{files.token_sha256}"')
    run_toml = root / "run.toml"
    run_toml.write_text("\n".join(run_lines) + "\n")
    return run_toml, tomls, [str(i) for i in ids], root / "certs"


def start(root: Path, name: str, *args: str) -> subprocess.Popen[bytes]:
    """``vfl ARGS`` as a process with one torch thread, logging to ``root/name.log``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    log = (root / f"{name}.log").open("ab")
    command = [sys.executable, "-m", "vfl.cli", *args]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_for(condition: object, what: str, timeout: float = 120) -> None:
    """Poll ``condition()`` until true; exit naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def measure(client: ScoringClient, ids: list[str], args: argparse.Namespace) -> dict[str, float]:
    """One measurement: single-ID latencies and 1,000-ID throughput."""
    rng = np.random.default_rng()
    for key in rng.choice(ids, args.warmup):
        client.score([str(key)])
    latencies = []
    for key in rng.choice(ids, args.singles):
        started = time.perf_counter()
        answer = client.score([str(key)])
        latencies.append((time.perf_counter() - started) * 1000)
        assert "error" not in answer["results"][0], answer
    rates = []
    for _ in range(args.batches):
        chosen = [str(k) for k in rng.choice(ids, 1000, replace=False)]
        started = time.perf_counter()
        answer = client.score(chosen)
        rates.append(1000 / (time.perf_counter() - started))
        assert len(answer["results"]) == 1000
    return {
        "single_p50_ms": float(np.percentile(latencies, 50)),
        "single_p99_ms": float(np.percentile(latencies, 99)),
        "batch_ids_per_s": statistics.median(rates),
    }


def main() -> None:
    """Parse arguments, set up the service, measure, print (and write) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--singles", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vfl-bench-serve-") as folder:
        root = Path(folder)
        run_dir = train(root, args.epochs)
        run_toml, tomls, ids, certs = write_deployment(run_dir, root)
        port_file = root / "serve.port"
        serve = ["serve", "--config", str(run_toml), "--model", str(run_dir)]
        processes = [start(root, "serve", *serve, "--port-file", str(port_file))]
        try:
            wait_for(lambda: port_file.exists() and port_file.read_text().strip(), "the port")
            address = f"127.0.0.1:{int(port_file.read_text())}"
            for party, toml in tomls.items():
                party_args = ["party", "--config", str(toml), "--serve", "--server", address]
                processes.append(start(root, f"party-{party}", *party_args))
            log = root / "serve.log"
            wait_for(lambda: log.read_text().count(" connected (process") == 3, "the parties")
            tls = PartyTls(
                (certs / "ca.pem").read_bytes(),
                (certs / "client-bench.pem").read_bytes(),
                (certs / "client-bench.key").read_bytes(),
            )
            client = ScoringClient(address, tls)
            runs = [measure(client, ids, args) for _ in range(args.repeats)]
            client.close()
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=30)
    result = {
        "figures": {key: statistics.median(run[key] for run in runs) for key in runs[0]},
        "runs": runs,
        "settings": vars(args) | {"json": str(args.json)},
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
        },
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
