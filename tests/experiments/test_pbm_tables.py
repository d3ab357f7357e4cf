"""docs/reproductions/pbm.md's four tables are what experiments/pbm/table.py makes of the
committed results in experiments/pbm/results/."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _table_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pbm_table", ROOT / "experiments/pbm/table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_doc_s_tables_are_regenerated_from_the_committed_results() -> None:
    # Prepare
    script = _table_script()
    doc = (ROOT / "docs/reproductions/pbm.md").read_text()

    # Execute
    regenerated = script.with_tables(doc)

    # Assert
    assert regenerated == doc, (
        "docs/reproductions/pbm.md's tables are stale: run"
        " .venv/bin/python experiments/pbm/table.py --doc"
    )


def test_every_run_of_every_table_is_committed() -> None:
    # Prepare
    script = _table_script()

    # Execute
    missing = [
        f"{name}/{run['dir']}"
        for name in script.SWEEPS
        for setting in json.loads((script.RESULTS / name / "sweep.json").read_text())["settings"]
        for run in setting["runs"]
        if not (script.RESULTS / name / run["dir"] / "summary.json").is_file()
    ]

    # Assert
    assert missing == []


def test_a_changed_result_makes_the_doc_stale(tmp_path: Path) -> None:
    # Prepare: the negative control: one run's final accuracy altered in a copy of the results
    script = _table_script()
    doc = (ROOT / "docs/reproductions/pbm.md").read_text()
    for name in script.SWEEPS:
        source, target = script.RESULTS / name, tmp_path / name
        manifest = json.loads((source / "sweep.json").read_text())
        target.mkdir()
        (target / "sweep.json").write_text(json.dumps(manifest))
        for setting in manifest["settings"]:
            for run in setting["runs"]:
                (target / run["dir"]).mkdir()
                summary = json.loads((source / run["dir"] / "summary.json").read_text())
                (target / run["dir"] / "summary.json").write_text(json.dumps(summary))
    first = json.loads((tmp_path / script.SWEEPS[0] / "sweep.json").read_text())
    altered = tmp_path / script.SWEEPS[0] / first["settings"][0]["runs"][0]["dir"] / "summary.json"
    summary = json.loads(altered.read_text())
    summary["final"]["test_accuracy"] -= 0.05
    altered.write_text(json.dumps(summary))

    # Execute
    regenerated = script.with_tables(doc, tmp_path)

    # Assert
    assert regenerated != doc
