"""Checksums of metrics.jsonl's records: damage anywhere is named, a kill's tail is not damage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.results.files import RunDirectory, RunFileError, read_records
from vfl.results.record_sums import append_line, sums_path

RECORDS = st.lists(
    st.fixed_dictionaries(
        {"epoch": st.integers(0, 10**6), "loss": st.floats(allow_nan=False, width=32)}
    ),
    min_size=2,
    max_size=8,
)


def written(folder: Path, records: list[dict[str, object]]) -> Path:
    path = folder / "metrics.jsonl"
    path.unlink(missing_ok=True)
    sums_path(path).unlink(missing_ok=True)
    for record in records:
        append_line(path, json.dumps(record))
    return path


@given(records=RECORDS, data=st.data())
def test_any_changed_byte_of_any_record_is_named_with_its_line(
    tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, object]], data: st.DataObject
) -> None:
    # Prepare: one byte of one complete line changed to another printable byte
    path = written(tmp_path_factory.mktemp("sums"), records)
    lines = path.read_text().split("\n")[:-1]
    number = data.draw(st.integers(0, len(lines) - 1))
    position = data.draw(st.integers(0, len(lines[number]) - 1))
    byte = data.draw(
        st.sampled_from("0123456789abcdef{}:, ").filter(lambda c: c != lines[number][position])
    )
    lines[number] = lines[number][:position] + byte + lines[number][position + 1 :]
    damaged = "".join(line + "\n" for line in lines)
    path.write_text(damaged)

    # Execute
    with pytest.raises(RunFileError) as raised:
        read_records(path, torn_tail=True)

    # Assert: refused, naming the line; nothing shortened
    assert f"line {number + 1} " in str(raised.value) and "checksum" in str(raised.value)
    assert path.read_text() == damaged


@given(records=RECORDS)
def test_the_records_as_written_read_back_checked(
    tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, object]]
) -> None:
    # Prepare
    path = written(tmp_path_factory.mktemp("sums"), records)

    # Execute
    read = read_records(path)

    # Assert
    assert read == records


def test_a_shortened_file_is_damage_not_a_torn_tail(tmp_path: Path) -> None:
    # Prepare: the last complete record removed (its sum stays)
    path = written(tmp_path, [{"epoch": e} for e in range(4)])
    path.write_text("".join(line + "\n" for line in path.read_text().split("\n")[:3]))

    # Execute
    with pytest.raises(RunFileError, match="shortened"):
        read_records(path, torn_tail=True)


def test_a_kill_between_the_two_appends_is_read_and_summed_on_resume(tmp_path: Path) -> None:
    # Prepare: the last record written, its sum not (the process was killed in between)
    run = RunDirectory(tmp_path / "run")
    for epoch in range(3):
        run.append_metrics({"epoch": epoch, "round": 10 * epoch})
    sums = sums_path(run.file("metrics.jsonl"))
    sums.write_text("".join(line + "\n" for line in sums.read_text().split("\n")[:2]))

    # Execute
    read = run.read_metrics()
    run.truncate_metrics(rounds=20)
    run.append_metrics({"epoch": 3, "round": 30})

    # Assert: every record read, and checked again once the resume rewrote the sums
    assert [r["epoch"] for r in read] == [0, 1, 2]
    assert [r["epoch"] for r in run.read_metrics()] == [0, 1, 2, 3]
    assert len(sums.read_text().splitlines()) == 4


def test_a_file_from_before_sums_is_read_unchecked_and_summed_at_its_next_append(
    tmp_path: Path,
) -> None:
    # Prepare: the negative control: without a sums file a changed record is not noticed
    run = RunDirectory(tmp_path / "run")
    run.file("metrics.jsonl").write_text('{"epoch": 0, "round": 0}\n{"epoch": 1, "round": 9}\n')

    # Execute
    before = run.read_metrics()
    run.append_metrics({"epoch": 2, "round": 20})
    text = run.file("metrics.jsonl").read_text()
    run.file("metrics.jsonl").write_text(text.replace('"round": 9', '"round": 8'))

    # Assert: read as it is before; checked from its first append on
    assert [r["round"] for r in before] == [0, 9]
    with pytest.raises(RunFileError, match="line 2 "):
        run.read_metrics()
