"""The layer contract (pyproject.toml, `lint-imports`) holds, and breaks if a layer imports up."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(source_root: Path) -> subprocess.CompletedProcess[str]:
    """Run import-linter with the project's contract on the package under ``source_root``."""
    env = {**os.environ, "PYTHONPATH": str(source_root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        cwd=source_root,
        check=False,
    )


def copy_package(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    shutil.copytree(ROOT / "src/vfl", source / "vfl", ignore=shutil.ignore_patterns("__pycache__"))
    return source


def test_the_package_keeps_its_layers(tmp_path: Path) -> None:
    # Execute
    result = lint_imports(copy_package(tmp_path))

    # Assert
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


def test_an_attack_importing_a_role_breaks_the_attack_contract(tmp_path: Path) -> None:
    # Prepare: an attack algorithm reaching for the server role (a path to the labels)
    source = copy_package(tmp_path)
    attack = source / "vfl/attacks/label_inference.py"
    attack.write_text(attack.read_text() + "\nfrom vfl.roles import server  # noqa: E402, F401\n")

    # Execute
    result = lint_imports(source)

    # Assert
    assert result.returncode != 0
    assert "Attack algorithms import no role, transport, data or harness BROKEN" in result.stdout
    assert "vfl.attacks.label_inference -> vfl.roles.server" in result.stdout


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(tmp_path: Path) -> None:
    # Prepare: the wire format reaching up into the composition root
    source = copy_package(tmp_path)
    checks = source / "vfl/wire/checks.py"
    checks.write_text(checks.read_text() + "\nfrom vfl.run import compose  # noqa: E402, F401\n")

    # Execute
    result = lint_imports(source)

    # Assert
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert "vfl.wire.checks -> vfl.run.compose" in result.stdout


def test_a_new_top_level_package_must_be_placed_in_a_layer(tmp_path: Path) -> None:
    # Prepare: a subpackage the contract does not list
    source = copy_package(tmp_path)
    (source / "vfl/newcomer").mkdir()
    (source / "vfl/newcomer/__init__.py").write_text('"""Not in any layer."""\n')

    # Execute
    result = lint_imports(source)

    # Assert
    assert result.returncode != 0
    assert "vfl.newcomer" in result.stdout


def test_the_architecture_doc_shows_the_real_import_graph() -> None:
    # Prepare
    spec = importlib.util.spec_from_file_location(
        "gen_layer_table", ROOT / "tools/gen_layer_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = (ROOT / "docs/architecture.md").read_text()

    # Execute
    table = doc.split("<!-- layer-table:start -->\n")[1].split("<!-- layer-table:end -->")[0]

    # Assert
    assert table == module.render(), (
        "docs/architecture.md's layer table is stale: run .venv/bin/python"
        " tools/gen_layer_table.py and paste it between the layer-table markers"
    )
