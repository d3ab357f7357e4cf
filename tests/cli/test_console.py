"""What ``vfl run`` prints: one summary line, or with ``--json`` the whole summary."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from tests.cli.runs import small_config, vfl
from vfl.run.console import describe
from vfl.run.signals import stop_on_signals

VFL = [sys.executable, "-m", "vfl.cli"]
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}


def test_quiet_prints_one_summary_line_and_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    run_dir = tmp_path / "run"

    # Execute
    outcome = vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir), "--quiet")

    # Assert
    assert outcome.status == 0
    assert outcome.err == ""
    final = json.loads((run_dir / "summary.json").read_text())["final"]
    assert outcome.out == (
        f"final: test_loss {final['test_loss']:.4f}, test_accuracy {final['test_accuracy']:.4f},"
        f" test_f1 {final['test_f1']:.4f}, test_auc {final['test_auc']:.4f}"
        f" (results in {run_dir})\n"
    )


def test_json_prints_the_summary_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    run_dir = tmp_path / "run"

    # Execute
    outcome = vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir), "--json")

    # Assert: stdout is exactly summary.json; the human lines go to stderr
    assert outcome.status == 0
    assert json.loads(outcome.out) == json.loads((run_dir / "summary.json").read_text())
    lines = outcome.err.splitlines()
    assert lines[0] == f"run directory: {run_dir}" and lines[-1].startswith("final: ")
    assert [line.split(" | ")[0] for line in lines[1:-1]] == [
        "untrained model",
        "epoch 1",
        "epoch 2",
        "epoch 3",
    ]


def test_without_json_stdout_is_not_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the negative control of the test above
    run_dir = tmp_path / "run"

    # Execute
    outcome = vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir))

    # Assert
    assert outcome.status == 0
    assert outcome.out.startswith("final: test_loss ") and outcome.out.count("\n") == 1
    assert outcome.err.startswith(f"run directory: {run_dir}\n")


def test_each_epoch_prints_its_line_with_its_wall_time_as_it_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: output.progress = false (no bar) still shows the epochs; --quiet alone hides them
    run_dir = tmp_path / "run"

    # Execute
    outcome = vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir))

    # Assert: one line per epoch, as describe() writes it from the epoch's metrics record
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    printed = [line for line in outcome.err.splitlines() if line.startswith("epoch ")]
    assert len(printed) == 3
    for line, record in zip(printed, records[1:], strict=True):
        assert line.startswith(describe(record).rpartition(" | ")[0] + " | ")
        wall = float(line.rpartition(" | ")[2].split(" s ")[0])
        assert line.endswith(f" s (training {record['epoch_train_seconds']:.1f} s)")
        assert wall >= round(record["epoch_train_seconds"], 1)


def test_on_a_terminal_each_epoch_shows_a_bar_of_its_rounds(tmp_path: Path) -> None:
    # Prepare: a real process whose standard error is a terminal (a pseudo-terminal here)
    config = small_config(tmp_path)
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))  # 160 columns
    command = [*VFL, "run", str(config), "--run-dir", str(tmp_path / "run")]
    command += ["--set", "output.progress=true", "--set", "train.epochs=1"]

    # Execute
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, env=ENV)
    os.close(follower)
    shown = _read_all(leader)
    out = process.communicate(timeout=300)[0]

    # Assert: tqdm's bar (epoch, rounds, rate, loss), then the epoch's line
    assert process.returncode == 0, shown
    assert "epoch 1/1" in shown and "10/10" in shown and "round/s" in shown, shown
    assert "loss=0." in shown
    assert "epoch 1 | train_loss" in shown
    assert out.decode().startswith("final: ")


def test_a_warning_is_one_clean_line(tmp_path: Path) -> None:
    # Prepare: a 2-bit quantizer on unbounded embeddings: allowed, with a warning
    config = small_config(tmp_path)
    command = [*VFL, "run", str(config), "--run-dir", str(tmp_path / "run"), "--quiet"]
    command += ["--set", "compress.embedding.name=lattice", "--set", "compress.embedding.bits=2"]
    command += ["--set", "train.epochs=1"]

    # Execute
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=300)

    # Assert: vfl's notice format; no source path, line of code or warning class
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("vfl: warning: compress.embedding: a 2-bit lattice quantizer")
    assert "UserWarning" not in done.stderr and ".py" not in done.stderr


def _read_all(descriptor: int) -> str:
    """Everything written to a pseudo-terminal until its other end closes."""
    chunks = []
    while True:
        try:
            chunk = os.read(descriptor, 4096)
        except OSError:  # the process exited and closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(descriptor)
    return b"".join(chunks).decode(errors="replace")


def test_signal_handlers_are_ours_only_inside_the_context() -> None:
    # Prepare
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}

    # Execute
    with stop_on_signals() as stop:
        inside = {number: signal.getsignal(number) for number in before}
        signal.raise_signal(signal.SIGTERM)
        requested = stop.reason
        after_one = signal.getsignal(signal.SIGTERM)

    # Assert
    assert all(inside[number] is not before[number] for number in before)
    assert requested == "SIGTERM"
    assert after_one == signal.SIG_DFL  # a second SIGTERM terminates at once
    assert {number: signal.getsignal(number) for number in before} == before


def test_a_second_ctrl_c_interrupts_at_once() -> None:
    # Execute / Assert
    with stop_on_signals() as stop:
        signal.raise_signal(signal.SIGINT)
        assert stop.requested
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)


def test_outside_the_main_thread_signals_are_left_alone() -> None:
    # Prepare
    seen: list[object] = []

    def in_a_thread() -> None:
        with stop_on_signals() as stop:
            seen.append(signal.getsignal(signal.SIGINT))
            seen.append(stop.requested)

    # Execute
    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()

    # Assert
    assert seen == [signal.getsignal(signal.SIGINT), False]


@pytest.mark.parametrize(("argv", "frozen"), [("None", True), ("['data', 'list']", False)])
def test_only_a_process_s_own_command_skips_the_final_garbage_collection(
    tmp_path: Path, argv: str, frozen: bool
) -> None:
    # Prepare: main() reads sys.argv as the console script does; main([...]) is a call from
    # Python (a test, a notebook), whose process goes on and must keep collecting
    script = (
        "import gc, sys\n"
        "sys.argv = ['vfl', 'data', 'list']\n"
        "from vfl.cli import main\n"
        f"main({argv})\n"
        "print(gc.get_freeze_count() > 0)\n"
    )
    source = str(Path(__file__).parents[2] / "src")
    environment = {**os.environ, "PYTHONPATH": source, "VFL_DATA_DIR": str(tmp_path)}

    # Execute
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment
    )

    # Assert
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == str(frozen)


def test_an_epoch_resumed_part_way_says_its_wall_time_counts_from_the_resume() -> None:
    # Prepare: a record whose training time (0.3 s, the rounds before the stop included) is more
    # than the wall time since the resume (0.1 s), and an epoch run whole (negative control)
    record = {"epoch": 2, "train_loss": 0.5, "test_loss": 0.4, "epoch_train_seconds": 0.3}

    # Execute
    resumed = describe(record, wall_s=0.1)
    whole = describe(record, wall_s=0.6)

    # Assert
    assert resumed.endswith("| 0.1 s since the resume (training 0.3 s in all)")
    assert whole.endswith("| 0.6 s (training 0.3 s)")
