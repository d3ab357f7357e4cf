"""What a deployment command does on Ctrl-C or SIGTERM, and what it then says to do next.

``vfl launch`` passes the first signal to its server (which stops after the round with a
checkpoint every party shares) and a second one stops every process at once
(``forwarding_signals``). Each command then names what was saved and the exact command that
continues it: ``launch_stopped``, ``server_next_step``, ``party_stopped``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from vfl.deploy.party_config import PartyConfig
from vfl.deploy.process import Process, kill_group
from vfl.results.files import CHECKPOINT, ERROR


def again_command(run_toml: Path, run_dir: Path | None, overrides: Sequence[str]) -> str:
    """``vfl launch RUN.toml [--run-dir DIR] [--set ...]``: this launch's command line."""
    words = ["vfl", "launch", str(run_toml)]
    words += ["--run-dir", str(run_dir)] if run_dir is not None else []
    words += [f"--set={item}" for item in overrides]
    return shlex.join(words)


class LaunchStop:
    """The signal that stopped the launch, if any, and whether to stop everything at once."""

    def __init__(self) -> None:
        self.reason = ""
        self.at_once = False


@contextmanager
def forwarding_signals(processes: Sequence[Process]) -> Iterator[LaunchStop]:
    """SIGINT and SIGTERM go to the server, ``processes[0]`` (first), or kill them all (second).

    ``processes`` may grow while the context is open (the parties start later).
    """
    stop = LaunchStop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handle(number: int, frame: FrameType | None) -> None:
        name = signal.Signals(number).name
        if stop.reason:
            stop.at_once = True
            for process in processes:
                kill_group(process)
            return
        stop.reason = name
        if processes and processes[0].poll() is None:
            processes[0].send_signal(number)
        note = (
            f"\nvfl: {name}: the server stops (a neural run after this round, anything else at"
            " once, keeping what it saved); again to stop every process at once\n"
        )
        os.write(2, note.encode())

    previous = {number: signal.signal(number, handle) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def launch_stopped(run_dir: Path, reason: str, again: str) -> str:
    """What a stopped launch saved (the server's own words) and the command that goes on."""
    said = run_dir / ERROR
    what = said.read_text().strip() if said.exists() else f"stopped by {reason}"
    if (run_dir / CHECKPOINT).exists():
        return (
            f"{what}; every party saved its state at the server's checkpoint; continue with"
            f" `{again} --resume`"
        )
    return f"{what}; nothing trained yet, so nothing to resume: start again with `{again}`"


def server_command(args: argparse.Namespace, run_dir: Path) -> str:
    """``vfl server --config RUN.toml --run-dir DIR [--set ...]``: this server's command line."""
    words = ["vfl", "server", "--config", str(args.config), "--run-dir", str(run_dir)]
    return shlex.join(words + [f"--set={item}" for item in args.overrides])


def server_next_step(run_dir: Path, again: str) -> str:
    """What to run after the server stopped: continue from its checkpoint, or start again."""
    if (run_dir / CHECKPOINT).exists():
        return (
            f"the parties saved their state at the same round; continue with `{again} --resume`"
            " (parties still running wait for it; restart one that stopped with"
            " `vfl party --config PARTY.toml --resume`)"
        )
    return f"nothing trained yet, so nothing to resume: start again with `{again}`"


def party_stopped(args: argparse.Namespace, config: PartyConfig, reason: str) -> str:
    """What a party stopped by a signal saved, and the command that continues it."""
    from vfl.deploy.state import checkpoint_rounds  # deferred: it imports torch

    rounds = checkpoint_rounds(Path(config.state_dir))
    saved = (
        f"its checkpoints of rounds {', '.join(map(str, rounds))} are in {config.state_dir}"
        if rounds
        else f"no checkpoint yet in {config.state_dir}"
    )
    words = ["vfl", "party", "--config", str(args.config)]
    words += [f"--set={item}" for item in args.overrides]
    if args.server:
        words += ["--server", args.server]
    command = shlex.join([*words, "--resume"])
    return (
        f"party {config.party_id} stopped by {reason}; {saved}; continue with `{command}` once"
        " the server runs with --resume"
    )
