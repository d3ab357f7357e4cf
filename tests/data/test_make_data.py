"""examples/deploy/make_data.py writes where it is told, and never over existing tables."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "deploy" / "make_data.py"


def make_data() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_data", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tables_go_to_out_and_by_default_to_data_under_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    script = make_data()
    monkeypatch.chdir(tmp_path)
    package_data = SCRIPT.parent / "data"
    before = sorted(package_data.iterdir()) if package_data.exists() else []

    # Execute
    asked = script.main(["--out", str(tmp_path / "elsewhere")])
    default = script.main([])

    # Assert
    assert asked == default == 0
    expected = sorted(
        f"{h}_{s}.csv" for h in ("labels", "bank", "telco", "retail") for s in ("train", "test")
    )
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == expected
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == expected
    assert list(pd.read_csv(tmp_path / "data" / "bank_train.csv").columns) == [
        "customer_id",
        "income",
        "debt",
        "savings",
    ]
    after = sorted(package_data.iterdir()) if package_data.exists() else []
    assert after == before  # nothing written next to the script


def test_existing_tables_are_kept_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the user's own bank_train.csv is already there
    script = make_data()
    (tmp_path / "bank_train.csv").write_text("mine\n")

    # Execute
    refused = script.main(["--out", str(tmp_path)])
    kept = (tmp_path / "bank_train.csv").read_text()
    forced = script.main(["--out", str(tmp_path), "--force"])

    # Assert
    assert refused == 2 and kept == "mine\n"
    assert capsys.readouterr().err == (
        f"make_data.py: {tmp_path} already holds bank_train.csv; pass --force to overwrite"
        " them, or choose another --out\n"
    )
    assert forced == 0 and (tmp_path / "bank_train.csv").read_text().startswith("customer_id,")
