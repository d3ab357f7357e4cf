"""``vfl launch``'s processes forked from one interpreter that imported torch once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.deploy.scenario import make_scenario, run_launch
from vfl.deploy.forked import ForkedProcess, can_fork, fork_vfl

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="forked processes: Linux only")


def test_the_preload_runs_no_thread_so_that_a_launch_can_fork() -> None:
    # Prepare: a fresh interpreter, as `vfl launch` is
    script = (
        "import threading\n"
        "from vfl.deploy.forked import preload\n"
        "preload()\n"
        "import sys\n"
        "import gc\n"
        "heavy = ('torch', 'torch._dynamo', 'sympy', 'numba')\n"
        "print(threading.active_count(), *(m in sys.modules for m in heavy))\n"
        "print(gc.isenabled(), gc.get_freeze_count() > 100_000)\n"
    )

    # Execute
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    # Assert: no thread to copy half way; torch loaded, nothing the processes never use; the
    # collector on again, with the imported objects frozen out of its walks
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "True", "False", "False", "False", "True", "True"]


def test_only_this_interpreter_on_linux_is_forked(tmp_path: Path) -> None:
    # Prepare: another interpreter, here a link to this one's name elsewhere
    other = tmp_path / "python"
    other.write_text("#!/bin/sh\n")

    # Execute / Assert
    assert can_fork(sys.executable)
    assert not can_fork(str(other))


FORK_ONE = """
import json, os, sys
from vfl.deploy.forked import fork_vfl

log_path, env_json, *args = sys.argv[1:]
with open(log_path, "ab") as log:
    child = fork_vfl(args, log, json.loads(env_json), pipe_stdout=True)
    printed = child.stdout.read().decode()
    status = child.wait(timeout=60)
print(json.dumps({"status": status, "printed": printed}))
"""
"""Forks ``vfl ARGS`` from a fresh interpreter (a test process may run threads of other tests)."""


def _fork_one(args: list[str], env: dict[str, str], log_path: Path) -> tuple[int, str]:
    command = [sys.executable, "-c", FORK_ONE, str(log_path), json.dumps(env), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    return result["status"], result["printed"]


def test_a_forked_command_writes_its_output_and_returns_its_status(tmp_path: Path) -> None:
    # Prepare
    log_path = tmp_path / "child.log"

    # Execute: `vfl --version` (status 0, on standard output), `vfl no-such` (status 2)
    good_status, printed = _fork_one(["--version"], dict(os.environ), log_path)
    bad_status, _ = _fork_one(["no-such-command"], dict(os.environ), log_path)

    # Assert: each exit status as the command's; the failure's line in its log
    assert good_status == 0 and printed.startswith("vfl ")
    assert bad_status == 2
    assert "invalid choice: 'no-such-command'" in log_path.read_text()


def _adult_line(env: dict[str, str], log_path: Path) -> str:
    status, printed = _fork_one(["data", "list"], env, log_path)
    assert status == 0, log_path.read_text()
    return next(line for line in printed.splitlines() if line.startswith("adult "))


def test_a_forked_command_gets_the_environment_it_is_given(tmp_path: Path) -> None:
    # Prepare: two data caches, Adult's files in one only (VFL_DATA_DIR, read by `vfl data list`)
    holding, empty = tmp_path / "holding", tmp_path / "empty"
    (holding / "adult").mkdir(parents=True)
    empty.mkdir()
    for name in ("adult.data", "adult.test"):
        (holding / "adult" / name).touch()

    # Execute
    seen_holding = _adult_line(dict(os.environ, VFL_DATA_DIR=str(holding)), tmp_path / "a.log")
    seen_empty = _adult_line(dict(os.environ, VFL_DATA_DIR=str(empty)), tmp_path / "b.log")

    # Assert: each child read its own environment
    assert seen_holding.split()[1] == "cached"
    assert seen_empty.split()[1:3] == ["not", "cached"]


def test_a_forked_process_times_out_and_stops_on_a_signal() -> None:
    # Prepare: a child that waits
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        time.sleep(60)
        os._exit(0)
    process = ForkedProcess(pid, None)

    # Execute
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.2)
    still_running = process.poll()
    process.terminate()
    status = process.wait(timeout=10)

    # Assert: it ran until told, then ended by SIGTERM (as Popen reports it)
    assert still_running is None
    assert status == -signal.SIGTERM
    process.kill()  # an ended process: nothing is sent


@pytest.mark.slow
def test_a_launch_forks_on_the_cpu_and_starts_each_process_anew_otherwise(
    tmp_path: Path,
) -> None:
    # Prepare: the same deployment twice, on the CPU and with train.device = "auto" (the CPU on
    # this machine, CUDA where there is one: a fork after CUDA was touched breaks the children)
    on_cpu = make_scenario(tmp_path / "cpu", epochs=1)
    on_auto = make_scenario(tmp_path / "auto", epochs=1, train=['device = "auto"'])

    # Execute
    forked = run_launch(on_cpu)
    started = run_launch(on_auto)

    # Assert: both train; only the CPU launch imported torch once and forked its processes
    assert forked.returncode == 0, forked.stderr
    assert started.returncode == 0, started.stderr
    assert "loaded torch and vfl once for the server and 2 parties" in forked.stderr
    assert "loaded torch and vfl once" not in started.stderr
    assert "epoch 1 | " in forked.stderr and "epoch 1 | " in started.stderr


def test_nothing_is_forked_while_another_thread_runs(tmp_path: Path) -> None:
    # Prepare: a thread that holds on until told
    import threading

    release = threading.Event()
    waiting = threading.Thread(target=release.wait, name="waiting")
    waiting.start()

    # Execute
    try:
        with (tmp_path / "child.log").open("ab") as log, pytest.raises(RuntimeError) as refused:
            fork_vfl(["--version"], log, dict(os.environ), pipe_stdout=False)
    finally:
        release.set()
        waiting.join()

    # Assert: the thread is named; no child was made
    assert "waiting" in str(refused.value)
    assert (tmp_path / "child.log").read_text() == ""


def test_a_forked_command_writes_no_warning_of_its_start(tmp_path: Path) -> None:
    # Prepare: vfl.cli imported (by the `vfl` script) and the preload, as under `vfl launch`, then
    # a fork (runpy warns when the module it runs as __main__ was imported already)
    script = (
        "import json, os, sys\n"
        "import vfl.cli\n"  # as the `vfl` script that runs `vfl launch` imports it
        "from vfl.deploy.forked import fork_vfl, preload\n"
        "preload()\n"
        f"with open({str(tmp_path / 'child.log')!r}, 'ab') as log:\n"
        "    child = fork_vfl(['--version'], log, dict(os.environ), pipe_stdout=False)\n"
        "    print(child.wait(timeout=60))\n"
    )

    # Execute
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    # Assert: the version, nothing else
    assert done.returncode == 0 and done.stdout.split() == ["0"], done.stderr
    logged = (tmp_path / "child.log").read_text()
    assert logged.startswith("vfl ") and "Warning" not in logged


HEAVY = ("torch._dynamo", "sympy", "numba")
"""What no process of a launch imports: vfl's optimizers, backward pass and small messages keep
them out (a second of CPU in each process)."""


def test_no_process_of_a_launch_imports_dynamo_sympy_or_numba(tmp_path: Path) -> None:
    # Prepare: every import written to standard error (-X importtime's variable), a forked
    # child's into its log; a launch that trains, evaluates and saves
    scenario = make_scenario(tmp_path, epochs=1)

    # Execute
    launched = run_launch(scenario, env_extra={"PYTHONPROFILEIMPORTTIME": "1"})

    # Assert: the launcher and every process; each log shows the imports after its fork (the
    # control: an import there would be seen)
    assert launched.returncode == 0, launched.stderr[-3000:]
    logs = sorted((scenario.run_dir / "logs").glob("*.log"))
    assert [log.name for log in logs] == ["party-1.log", "party-2.log", "server.log"]
    for name, text in [("launcher", launched.stderr)] + [
        (log.name, log.read_text()) for log in logs
    ]:
        imported = {
            line.rsplit("|", 1)[1].strip()
            for line in text.splitlines()
            if line.startswith("import time:")
        }
        assert imported, f"{name} shows no import"
        assert not imported & set(HEAVY), name
