"""What ``vfl run`` prints: one summary line, or with ``--json`` the whole summary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.cli.runs import small_config, vfl
from vfl.run.signals import stop_on_signals


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
    assert outcome.err.splitlines() == [
        f"run directory: {run_dir}",
        next(line for line in outcome.err.splitlines() if line.startswith("final: ")),
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
