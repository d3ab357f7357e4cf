"""Every generated table and figure of docs/reproductions/ is what its paper's table script makes
of the committed results: one contract for every script (DOC, RESULTS, SWEEPS, COMMAND, blocks,
figures)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from vfl.errors import ConfigError
from vfl.experiments.doc_blocks import replace_blocks, stale_figures

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("pbm", "fedbcd", "cvfl", "lvfl")
COMMITTED = ("sweep.json", "summary.json", "metrics.jsonl", "config.toml", "error.txt")


def _script(paper: str) -> ModuleType:
    path = ROOT / "experiments" / paper / "table.py"
    spec = importlib.util.spec_from_file_location(f"{paper}_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the script loads
    spec.loader.exec_module(module)
    return module


def _runs(results: Path, sweep: str) -> list[Path]:
    manifest = json.loads((results / sweep / "sweep.json").read_text())
    return [results / sweep / run["dir"] for s in manifest["settings"] for run in s["runs"]]


def _compact_copy(script: ModuleType, target: Path) -> Path:
    """The committed files of every sweep of ``script``, copied under ``target``."""
    for sweep in script.SWEEPS:
        (target / sweep).mkdir(parents=True)
        shutil.copy(script.RESULTS / sweep / "sweep.json", target / sweep)
        for run in _runs(script.RESULTS, sweep):
            (target / sweep / run.name).mkdir()
            for name in COMMITTED:
                if (run / name).is_file():
                    shutil.copy(run / name, target / sweep / run.name)
    return target


@pytest.mark.parametrize("paper", SCRIPTS)
def test_the_doc_s_tables_are_regenerated_from_the_committed_results(paper: str) -> None:
    # Prepare
    script = _script(paper)
    doc = script.DOC.read_text(encoding="utf-8")

    # Execute
    regenerated = replace_blocks(doc, script.blocks(script.RESULTS), source=str(script.DOC))

    # Assert
    assert regenerated == doc, f"{script.DOC} is stale: run {script.COMMAND}"


@pytest.mark.parametrize("paper", SCRIPTS)
def test_the_doc_s_figures_are_redrawn_from_the_committed_results(paper: str) -> None:
    # Prepare
    script = _script(paper)

    # Execute
    stale = stale_figures(script.figures(script.RESULTS))

    # Assert
    assert stale == [], f"stale figures: run {script.COMMAND}"


@pytest.mark.parametrize("paper", SCRIPTS)
def test_every_run_of_every_table_is_committed(paper: str) -> None:
    # Prepare
    script = _script(paper)

    # Execute: a run is committed when its summary is, or the error that ended it
    missing = [
        str(run.relative_to(script.RESULTS))
        for sweep in script.SWEEPS
        for run in _runs(script.RESULTS, sweep)
        if not ((run / "summary.json").is_file() or (run / "error.txt").is_file())
    ]

    # Assert
    assert missing == []


@pytest.mark.parametrize("paper", SCRIPTS)
def test_a_missing_run_makes_the_doc_stale(paper: str, tmp_path: Path) -> None:
    # Prepare: the negative control: the first run of every sweep left out of a compact copy
    script = _script(paper)
    doc = script.DOC.read_text(encoding="utf-8")
    copy = _compact_copy(script, tmp_path)
    for sweep in script.SWEEPS:
        shutil.rmtree(_runs(copy, sweep)[0])

    # Execute
    regenerated = replace_blocks(doc, script.blocks(copy), source=str(script.DOC))

    # Assert
    assert regenerated != doc


@pytest.mark.parametrize("paper", SCRIPTS)
def test_a_shortened_curve_makes_every_figure_stale(paper: str, tmp_path: Path) -> None:
    # Prepare: the negative control: every run's last evaluation dropped from a compact copy
    script = _script(paper)
    copy = _compact_copy(script, tmp_path)
    for sweep in script.SWEEPS:
        for run in _runs(copy, sweep):
            metrics = run / "metrics.jsonl"
            if metrics.is_file():
                lines = metrics.read_text().splitlines(keepends=True)
                metrics.write_text("".join(lines[:-1]))

    # Execute
    stale = stale_figures(script.figures(copy))

    # Assert
    assert sorted(stale) == sorted(script.figures(script.RESULTS))


def _claims_script() -> ModuleType:
    path = ROOT / "experiments/claims.py"
    spec = importlib.util.spec_from_file_location("claims", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_index_counts_every_ledger() -> None:
    # Prepare
    claims = _claims_script()
    index = claims.INDEX.read_text(encoding="utf-8")

    # Execute
    regenerated = replace_blocks(index, {"claims": claims.index_table()}, source="README.md")

    # Assert
    assert regenerated == index, f"stale claims table: run {claims.COMMAND}"


@pytest.mark.parametrize("file", ["cvfl.md", "fedbcd.md", "lvfl.md", "pbm.md"])
def test_each_ledger_s_count_line_agrees_with_its_rows(file: str) -> None:
    # Prepare
    claims = _claims_script()
    path = claims.INDEX.parent / file
    counts = Counter(claims.ledger(path).values())

    # Execute
    expected = (
        f"**Count: {sum(counts.values())} claims: {counts['reproduced']} reproduced,"
        f" {counts['partly']} partly, {counts['not reproduced']} not reproduced,"
        f" {counts['not attempted']} not attempted.**"
    )

    # Assert
    assert expected in path.read_text(encoding="utf-8").replace("\n", " ")


def test_a_status_outside_the_four_is_refused(tmp_path: Path) -> None:
    # Prepare: the negative control for the counting
    claims = _claims_script()
    doc = tmp_path / "paper.md"
    doc.write_text("## Claims ledger\n\n| # | claim | status |\n|---|---|---|\n| 1 | x | maybe |\n")

    # Execute / Assert
    with pytest.raises(ConfigError, match="'maybe'"):
        claims.ledger(doc)
