"""Run a sweep's runs as Ray tasks, one task per run, on a local instance or a Ray cluster.

``vfl sweep SWEEP.toml --executor ray [--address ADDR]`` (``docs/experiments.md``). The sweep
itself (planning, ``sweep.json``, moving folders aside, the reports) happens in the ``vfl``
process exactly as with the local pool; each task calls the pool's own ``run_task`` on a node,
so a run's folder holds the same files either way. The nodes must see the sweep folder and the
data at the same paths as the ``vfl`` process (a shared file system) and have vfl installed.

Ray is an optional dependency (``pip install 'vfl[ray]'``), imported only here.
"""

from __future__ import annotations

import os
import socket
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from vfl.errors import ConfigError
from vfl.experiments.tasks import RunOutcome, RunTask, record_failure, run_task

ENV_PREFIX = "VFL_"
"""Environment variables passed on to every task (e.g. ``VFL_DATA_DIR``)."""
CONNECT_SECONDS = 30.0
"""How long ``--address`` may take to answer as a Ray cluster before the sweep stops."""
GCS_PROBE = "/ray.rpc.NodeInfoGcsService/GetClusterId"
"""A call every Ray cluster's control service (GCS) answers, whose request has no fields."""


@dataclass(frozen=True)
class RayOptions:
    """Where and with what resources the runs go.

    Attributes:
        address: A Ray cluster's address (``ray.init(address=...)``: ``HOST:PORT`` or
            ``"auto"``); ``None`` starts a Ray instance on this machine for the sweep alone,
            with ``workers * cpus_per_run`` CPUs, and stops it afterwards. When this process
            is already connected to Ray (``ray.is_initialized()``), that connection is used.
        cpus_per_run: CPUs each run reserves; also its torch threads (at least 1).
        gpus_per_run: GPUs each run reserves (for ``train.device = "cuda"``).
        connect_timeout_s: How long ``address`` may take to answer as a Ray cluster.
    """

    address: str | None = None
    cpus_per_run: float = 1.0
    gpus_per_run: float = 0.0
    connect_timeout_s: float = CONNECT_SECONDS

    def __post_init__(self) -> None:
        if not self.cpus_per_run > 0:
            raise ConfigError(f"--cpus-per-run must be > 0, got {self.cpus_per_run}")
        if not self.gpus_per_run >= 0:
            raise ConfigError(f"--gpus-per-run must be >= 0, got {self.gpus_per_run}")
        if not 0 < self.connect_timeout_s < float("inf"):
            raise ConfigError(f"--connect-timeout-s must be > 0, got {self.connect_timeout_s}")


def import_ray() -> ModuleType:
    """The ``ray`` module.

    Raises:
        ModuleNotFoundError: (with ``name == "ray"``) saying how to install it.
    """
    try:
        import ray
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "--executor ray needs Ray, an optional dependency: pip install 'vfl[ray]'", name="ray"
        ) from error
    return ray


class RaySession:
    """A connection to Ray for one sweep; ``close`` stops what ``connect`` started."""

    def __init__(self, ray: ModuleType, *, owned: bool) -> None:
        self.ray, self._owned = ray, owned

    @classmethod
    def connect(cls, options: RayOptions, *, workers: int, log: TextIO) -> RaySession:
        """Use this process's Ray connection, join ``options.address``, or start an instance.

        Raises:
            ModuleNotFoundError: if Ray is not installed.
            ConfigError: if the cluster at ``options.address`` cannot be reached.
        """
        ray = import_ray()
        if ray.is_initialized():
            print("ray: using this process's Ray connection", file=log)
            return cls(ray, owned=False)
        if options.address is None:
            cpus = max(1, round(workers * options.cpus_per_run))
            ray.init(address="local", num_cpus=cpus, include_dashboard=False)
            print(f"ray: started a local instance with {cpus} CPUs", file=log)
            return cls(ray, owned=True)
        _check_reachable(options.address, options.connect_timeout_s)
        try:
            ray.init(address=options.address)
        except Exception as error:  # Ray raises ConnectionError, RuntimeError, ValueError...
            raise ConfigError(
                f"--address {options.address!r}: cannot connect to a Ray cluster there"
                f" ({type(error).__name__}: {error}); {_connect_hint(error)}"
            ) from None
        cpus = ray.cluster_resources().get("CPU", 0)
        print(f"ray: connected to {options.address} ({cpus:g} CPUs)", file=log)
        return cls(ray, owned=True)

    def close(self) -> None:
        """Disconnect (and stop a local instance) if ``connect`` made the connection."""
        if self._owned:
            self.ray.shutdown()


def execute_on_ray(
    session: RaySession,
    tasks: Sequence[RunTask],
    *,
    options: RayOptions,
    on_done: Callable[[RunOutcome], None],
) -> list[RunOutcome]:
    """Run each of ``tasks`` as one Ray task, calling ``on_done`` as each ends.

    A task whose worker died (or that could not start on its node) becomes a failed outcome
    with its traceback in the run's ``error.txt``, written by this process.
    """
    ray = session.ray
    remote = ray.remote(run_on_node).options(
        num_cpus=options.cpus_per_run, num_gpus=options.gpus_per_run, max_retries=0
    )
    workdir = str(Path.cwd())
    environ = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIX)}
    threads = max(1, int(options.cpus_per_run))
    shipped = [replace(t, run_dir=t.run_dir.absolute(), threads=threads) for t in tasks]
    pending: dict[Any, RunTask] = {remote.remote(t, workdir, environ): t for t in shipped}
    outcomes: list[RunOutcome] = []
    try:
        while pending:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            task = pending.pop(ref)
            outcomes.append(_collect(ray, ref, task))
            on_done(outcomes[-1])
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return outcomes


def run_on_node(task: RunTask, workdir: str, environ: dict[str, str]) -> RunOutcome:
    """The Ray task: train ``task`` in ``workdir`` (the ``vfl`` process's working directory).

    Raises:
        ConfigError: if this node does not see ``workdir`` or the sweep folder.
    """
    for needed in (Path(workdir), task.run_dir.parent):
        if not needed.is_dir():
            raise ConfigError(
                f"node {socket.gethostname()} has no folder {needed}: the sweep folder and the"
                " working directory must be on a file system shared by every node, at the"
                " same path"
            )
    os.environ.update(environ)
    os.chdir(workdir)  # relative data paths in the config resolve as in the vfl process
    return run_task(task)


def _check_reachable(address: str, timeout_s: float = CONNECT_SECONDS) -> None:
    """Refuse a ``HOST:PORT`` that does not answer as a Ray cluster within ``timeout_s``.

    Ray itself waits for minutes on an address that accepts connections but is not a cluster's
    control service, so the service is asked for its cluster ID first (``"auto"``,
    ``ray://...`` and a cluster with TLS are left to Ray).

    Raises:
        ConfigError: naming the address, the timeout and what was found there.
    """
    host, _, port = address.rpartition(":")
    if not host or "://" in address or not port.isdigit():
        return  # "auto", "ray://...": Ray resolves these
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as error:
        raise ConfigError(
            f"--address {address!r}: nothing answers there ({error}); is the cluster running?"
            " start one with `ray start --head` (docs/experiments.md)"
        ) from None
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        return
    import grpc  # a dependency of Ray

    with grpc.insecure_channel(address) as channel:
        try:
            channel.unary_unary(GCS_PROBE)(b"", timeout=timeout_s)
        except grpc.RpcError as error:
            _refuse_answer(address, timeout_s, error)


def _refuse_answer(address: str, timeout_s: float, error: Any) -> None:
    """Refuse what answered at ``address``, unless it is a Ray cluster that wants a token."""
    import grpc

    code = error.code()
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return  # a cluster in token mode: ray.init presents the token
    if code == grpc.StatusCode.UNIMPLEMENTED:
        found = "a gRPC service answers there, but not a Ray cluster's"
    else:
        found = f"no Ray cluster answered within {timeout_s:g} s ({code.name})"
    raise ConfigError(
        f"--address {address!r}: {found}; give the address `ray start --head` prints (its GCS"
        " port, 6379 by default), or raise --connect-timeout-s (docs/experiments.md)"
    )


def _connect_hint(error: BaseException) -> str:
    cause = error.__cause__ or error
    if "AuthToken" in str(cause) or "Authentication" in type(cause).__name__:
        return (
            "a cluster from `ray start` wants its token: set RAY_AUTH_MODE=token, with the"
            " cluster's token in ~/.ray/auth_token, RAY_AUTH_TOKEN or a file named by"
            " RAY_AUTH_TOKEN_PATH (docs/experiments.md)"
        )
    return "is it running? start one with `ray start --head` (docs/experiments.md)"


def _collect(ray: ModuleType, ref: Any, task: RunTask) -> RunOutcome:
    try:
        outcome: RunOutcome = ray.get(ref)
    except Exception as error:  # the worker died, or the task could not run on its node
        cause = getattr(error, "cause", None)
        shown = cause if isinstance(cause, BaseException) else error
        return record_failure(task, shown, traceback.format_exc(), 0.0)
    return outcome
