"""docs/attacks.md's tables are what experiments/attacks/report.py makes of the committed
results; missing runs are marked, not dropped."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "experiments/attacks"


def _report() -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))  # figures.py imports its sibling report.py
    spec = importlib.util.spec_from_file_location("attack_report", SCRIPTS / "report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["attack_report"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_doc_s_tables_are_regenerated_from_the_committed_results() -> None:
    # Prepare
    report = _report()
    doc = (ROOT / "docs/attacks.md").read_text()

    # Execute
    current = doc.split(report.START, 1)[1].split(report.END, 1)[0]

    # Assert
    assert current == report.tables(), (
        "docs/attacks.md's tables are stale: run .venv/bin/python experiments/attacks/report.py"
    )


def test_a_run_that_did_not_finish_is_marked_missing(tmp_path: Path) -> None:
    # Prepare: a copy of one finished setting, with one of its runs' summaries removed
    report = _report()
    source = SCRIPTS / "results/label-inference"
    target = tmp_path / "label-inference"
    manifest = json.loads((source / "sweep.json").read_text())
    manifest["settings"] = [s for s in manifest["settings"] if s["label"] == "undefended"]
    target.mkdir()
    (target / "sweep.json").write_text(json.dumps(manifest))
    for run in manifest["settings"][0]["runs"]:
        shutil.copytree(source / run["dir"], target / run["dir"])
    (target / manifest["settings"][0]["runs"][-1]["dir"] / "summary.json").unlink()

    # Execute
    tables = report.tables(tmp_path)

    # Assert
    assert "| undefended | 2 of 3 (missing) |" in tables
    assert "Missing: 1 runs did not finish" in tables
    assert "Not run yet: no results in `completion`" in tables


def test_a_stale_doc_is_rewritten_and_the_rest_kept(tmp_path: Path) -> None:
    # Prepare: the negative control: a doc whose table region was edited by hand
    report = _report()
    doc = tmp_path / "attacks.md"
    doc.write_text(f"intro\n{report.START}| stale |\n{report.END}\noutro\n")

    # Execute
    changed = report.rewrite_doc(doc)

    # Assert: rewriting replaced the region and kept the rest
    text = doc.read_text()
    assert changed
    assert "| stale |" not in text
    assert text.startswith("intro\n") and text.endswith("\noutro\n")
    assert not report.rewrite_doc(doc)
