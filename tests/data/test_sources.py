from __future__ import annotations

import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from vfl.data import sources
from vfl.data.credit import load_default_credit
from vfl.data.fetch import FetchContext
from vfl.errors import DataError

from .fakes import zip_archive

HEADER = ["ID", "LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE", "PAY_0"]
HEADER += [f"PAY_{i}" for i in range(2, 7)] + [f"BILL_AMT{i}" for i in range(1, 7)]
HEADER += [f"PAY_AMT{i}" for i in range(1, 7)] + ["default payment next month"]


def _fake_xlrd(rows: list[list[object]]) -> types.ModuleType:
    """A stand-in for the optional xlrd package serving one sheet of ``rows``."""
    sheet = types.SimpleNamespace(nrows=len(rows), row_values=lambda i: rows[i])
    book = types.SimpleNamespace(sheet_by_index=lambda index: sheet)
    module = types.ModuleType("xlrd")
    module.open_workbook = lambda file_contents: book  # type: ignore[attr-defined]
    return module


def _sheet_rows(num_rows: int) -> list[list[object]]:
    codes: list[object] = ["", *(f"X{i}" for i in range(1, 24)), "Y"]
    data: list[list[object]] = [
        [float(i + 1), 2e4, 1.0 + i % 2, 2.0, 1.0, 30.0, *[0.0] * 18, float(i % 3 == 0)]
        for i in range(num_rows)
    ]
    return [codes, list(HEADER), *data]


def test_xls_sheet_converts_to_the_csv_layout_the_loader_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    monkeypatch.setitem(sys.modules, "xlrd", _fake_xlrd(_sheet_rows(12)))
    target = tmp_path / "default_of_credit_card_clients.csv"

    # Execute
    sources.xls_to_csv(b"xls bytes", target)

    # Assert
    frame = pd.read_csv(target)
    assert list(frame.columns) == [*HEADER[:-1], "default.payment.next.month"]
    assert frame["ID"].tolist() == list(range(1, 13))
    assert len(load_default_credit(target, test_fraction=0.25).test) == 3


def test_missing_xlrd_is_a_clear_data_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    monkeypatch.setitem(sys.modules, "xlrd", None)

    # Execute / Assert
    with pytest.raises(DataError, match=r"optional package xlrd \(pip install xlrd\)"):
        sources.xls_to_csv(b"", tmp_path / "out.csv")


def test_default_credit_download_with_permission_converts_the_sheet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    monkeypatch.setitem(sys.modules, "xlrd", _fake_xlrd(_sheet_rows(10)))
    bundle = zip_archive({"default of credit card clients.xls": b"xls bytes"})

    def download(url: str, dest: Path) -> None:
        dest.write_bytes(bundle)

    dest = tmp_path / "out"
    dest.mkdir()
    context = FetchContext(
        workdir=tmp_path, download=download, run_tool=None, allow_unverified=True
    )

    # Execute
    sources.fetch_default_credit(dest, context)

    # Assert
    assert [path.name for path in dest.iterdir()] == ["default_of_credit_card_clients.csv"]
