"""``vfl sweep --executor ray``: the same run folders as the local pool, resumable, Ray optional.

The Ray tests start their own Ray (a local instance, or a one-node cluster from ``ray start
--head`` for ``--address``) with 2 CPUs and are skipped where Ray is not installed.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.experiments.sweeps import write_sweep
from tests.experiments.test_sweep import RUNS, TWO_RUNS, vfl
from tests.silent_listener import silent_listener
from vfl.cli import main
from vfl.errors import ConfigError
from vfl.experiments.ray_executor import RayOptions, _check_reachable
from vfl.experiments.spec import read_sweep
from vfl.experiments.sweep import run_sweep

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs vfl[ray]")


@pytest.fixture(autouse=True, scope="module")
def own_ray_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every Ray here authenticates with this module's own token, never ``~/.ray/auth_token``.

    ``ray start`` refuses to start in token mode when no token exists (only ``ray.init`` makes
    one), so with the default file the head test failed in a fresh home folder unless a local
    Ray test had run before it. One token for the module, not one per test: a process caches
    the first token it reads.
    """
    token = tmp_path_factory.mktemp("ray") / "auth_token"
    token.write_text(secrets.token_hex(32))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_AUTH_MODE", "token")
        patch.setenv("RAY_AUTH_TOKEN_PATH", str(token))
        yield


TWELVE_RUNS = """
seeds = [0, 1]
workers = 2
set = { "train.epochs" = 1 }
[grid]
"train.optimizer.lr" = [0.01, 0.05, 0.1]
"train.batch_size" = [16, 32]
"""
TIMING = re.compile(r"seconds|elapsed|wall_time")
"""Keys and columns that hold times, which differ between any two runs."""
STARTUP_SECONDS = 300
"""How long ``ray start`` may take on a loaded machine (a limit, not an assertion)."""


def without_timing(value: Any) -> Any:
    """``value`` with every timing key dropped and tensors as (dtype, shape, values)."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if not TIMING.search(str(k))}
    if isinstance(value, list | tuple):
        return [without_timing(v) for v in value]
    if isinstance(value, torch.Tensor):
        return (str(value.dtype), tuple(value.shape), value.tolist())
    return value


def comparable(path: Path) -> Any:
    """A file's contents, parsed where it holds times, with the times dropped."""
    if path.suffix == ".png":
        return "a plot"  # drawn from the files compared here
    if path.suffix == ".crc32":
        return "checksums"  # of the records compared here, whose timings differ
    if path.suffix == ".json":
        return without_timing(json.loads(path.read_text()))
    if path.suffix == ".jsonl":
        return [without_timing(json.loads(line)) for line in path.read_text().splitlines()]
    if path.suffix == ".csv":
        return [without_timing(row) for row in csv.DictReader(path.open(newline=""))]
    if path.suffix == ".pt":
        return without_timing(torch.load(path, weights_only=False))
    return path.read_bytes()


def tree(folder: Path) -> dict[str, Any]:
    """Every file under ``folder``, by relative path, made ``comparable``."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return {str(p.relative_to(folder)): comparable(p) for p in files}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def ray_head(log: Path) -> Iterator[str]:
    """A one-node Ray cluster with 2 CPUs from ``ray start --head``; yields its address."""
    port = free_port()
    command = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--port={port}"]
    command += ["--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats", "--block"]
    with log.open("w") as out:  # the environment carries the token (own_ray_token)
        head = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while "Ray runtime started" not in log.read_text():
            if head.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start --head failed:\n{log.read_text()}")
            time.sleep(0.5)
        match = re.search(r"Local node IP: (\S+)", log.read_text())
        assert match is not None, log.read_text()
        yield f"{match[1]}:{port}"
    finally:
        os.killpg(head.pid, signal.SIGTERM)  # its group: the head and the services it started
        try:
            head.wait(timeout=5)
        except subprocess.TimeoutExpired:  # it drains for up to 30 s; nothing runs any more
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()


@needs_ray
def test_a_12_run_sweep_on_a_ray_cluster_writes_the_folders_the_local_pool_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: one torch thread per run in both executors (the pool gives cores // workers)
    path = write_sweep(tmp_path, TWELVE_RUNS)
    folder = read_sweep(path).folder
    monkeypatch.setattr("vfl.experiments.sweep.cores", lambda: 2)
    pooled = run_sweep(read_sweep(path), log=io.StringIO())
    folder.rename(tmp_path / "pool")

    # Execute
    with ray_head(tmp_path / "ray-head.log") as address:
        status = vfl(["sweep", str(path), "--executor", "ray", "--address", address])

    # Assert
    assert len(pooled.outcomes) == 12 and not pooled.failed
    assert status == 0
    on_ray, in_pool = tree(folder), tree(tmp_path / "pool")
    assert sum(name.endswith("summary.json") for name in on_ray) == 12
    assert on_ray.keys() == in_pool.keys()
    assert on_ray == in_pool


@needs_ray
def test_a_second_ray_sweep_skips_finished_runs_and_reruns_only_a_missing_one(
    tmp_path: Path,
) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, TWO_RUNS))
    options = RayOptions()  # a Ray instance on this machine, for each sweep alone
    first = run_sweep(spec, log=io.StringIO(), ray=options)
    summaries = {name: spec.folder / name / "summary.json" for name in RUNS}
    stamps = {name: path.stat().st_mtime_ns for name, path in summaries.items()}

    # Execute
    second = run_sweep(spec, log=io.StringIO(), ray=options)
    unchanged = {name: path.stat().st_mtime_ns for name, path in summaries.items()} == stamps
    summaries[RUNS[1]].unlink()
    third = run_sweep(spec, log=io.StringIO(), ray=options)

    # Assert
    assert sorted(o.name for o in first.outcomes if o.ok) == list(RUNS)
    assert second.states == dict.fromkeys(RUNS, "done") and second.outcomes == ()
    assert unchanged
    assert third.states == {RUNS[0]: "done", RUNS[1]: "partial"}
    assert [(o.name, o.ok) for o in third.outcomes] == [(RUNS[1], True)]
    lines = (spec.folder / RUNS[1] / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in lines] == [0, 1, 2]  # resumed, not repeated


@needs_ray
def test_an_address_nothing_listens_on_stops_the_sweep_before_it_writes(tmp_path: Path) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, TWO_RUNS))
    address = f"127.0.0.1:{free_port()}"  # closed again once free_port returns

    # Execute
    with pytest.raises(ConfigError, match=f"--address '{address}': nothing answers there"):
        run_sweep(spec, log=io.StringIO(), ray=RayOptions(address=address))

    # Assert
    assert not spec.folder.exists()


@needs_ray
def test_an_address_that_is_not_ray_fails_within_its_stated_timeout_naming_it(
    tmp_path: Path,
) -> None:
    # Prepare: a port that accepts connections and stays silent (Ray waited minutes on it)
    path = write_sweep(tmp_path, TWO_RUNS)
    command = [sys.executable, "-m", "vfl.cli", "sweep", str(path), "--executor", "ray"]

    # Execute
    with silent_listener() as address:
        started = time.monotonic()
        result = subprocess.run(
            [*command, "--address", address, "--connect-timeout-s", "2"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        elapsed = time.monotonic() - started

    # Assert: refused in one line naming the address and the timeout, in seconds not minutes
    assert result.returncode == 2, result.stderr
    assert f"--address '{address}': no Ray cluster answered within 2 s" in result.stderr
    assert "Traceback" not in result.stderr
    assert elapsed < 40
    assert not read_sweep(path).folder.exists()


@needs_ray
@pytest.mark.slow
def test_a_ray_clusters_address_passes_the_check(tmp_path: Path) -> None:
    # Negative control of the test above: a real cluster (in token mode) answers the probe
    with ray_head(tmp_path / "ray-head.log") as address:
        started = time.monotonic()
        _check_reachable(address, 30.0)
        assert time.monotonic() - started < 30


def test_without_ray_installed_executor_ray_says_how_to_install_it_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    path = write_sweep(tmp_path, TWO_RUNS)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ModuleNotFoundError

    # Execute
    status = main(["sweep", str(path), "--executor", "ray"])

    # Assert
    assert status == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "pip install 'vfl[ray]'" in error, error
    assert not read_sweep(path).folder.exists()


@pytest.mark.parametrize("option", [["--address", "auto"], ["--cpus-per-run", "2"]])
def test_ray_options_without_executor_ray_are_refused_by_name(
    tmp_path: Path, option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    path = write_sweep(tmp_path, TWO_RUNS)

    # Execute
    status = main(["sweep", str(path), *option])

    # Assert
    assert status == 2
    assert f"{option[0]} is an option of --executor ray" in capsys.readouterr().err
    assert not read_sweep(path).folder.exists()


@pytest.mark.parametrize(("cpus", "gpus"), [(0.0, 0.0), (1.0, -1.0)])
def test_ray_options_refuse_resources_that_cannot_be_reserved(cpus: float, gpus: float) -> None:
    # Execute / Assert
    with pytest.raises(ValueError, match="per-run must be"):
        RayOptions(cpus_per_run=cpus, gpus_per_run=gpus)
