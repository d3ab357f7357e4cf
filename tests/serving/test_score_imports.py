"""``vfl score`` and ``vfl --help`` load no torch (``vfl score`` no numpy): they start fast."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCORE = """
import sys
from vfl.cli import main
status = main(["score", "127.0.0.1:9", "7", "--ca", "{missing}", "--cert", "{missing}",
               "--key", "{missing}"])
print(status, sorted(name for name in ("torch", "pandas", "numpy") if name in sys.modules))
"""


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_vfl_score_imports_no_torch(tmp_path: Path) -> None:
    # Execute: the whole command, up to the first file it reads (missing: refused, status 2)
    line = run_python(SCORE.format(missing=tmp_path / "missing.pem"))

    # Assert
    assert line == "2 []"


def test_the_check_sees_torch_when_it_is_loaded() -> None:
    # Negative control: the scoring service (server side) does load torch
    line = run_python("import sys, vfl.deploy.scoring; print('torch' in sys.modules)")
    assert line == "True"


def test_vfl_help_imports_no_torch() -> None:
    code = (
        "import sys, contextlib, io\nfrom vfl.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\nprint('torch' in sys.modules)"
    )
    assert run_python(code) == "False"
