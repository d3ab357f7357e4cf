"""A party's audit log: every record carries a checksum, and a torn last line is kept, ended."""

from __future__ import annotations

import json
from pathlib import Path

from vfl.deploy.audit import audited, record_is_sound
from vfl.wire import Ack, encode


def answer(frame: bytes) -> bytes:
    return frame


def test_every_record_carries_a_checksum_that_an_edit_breaks(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "audit.jsonl"
    handle = audited(answer, path)

    # Execute
    for round_ in range(3):
        handle(encode(Ack(round=round_), sender=0))

    # Assert: sound as written; the negative control: one edited field is not
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["round"] for r in records] == [0, 1, 2]
    assert all(record_is_sound(r) for r in records)
    assert not record_is_sound({**records[1], "round": 7})


def test_a_torn_last_line_is_kept_and_ended_before_new_records(tmp_path: Path) -> None:
    # Prepare: a process killed while it wrote its second record
    path = tmp_path / "audit.jsonl"
    audited(answer, path)(encode(Ack(round=0), sender=0))
    torn = path.read_text() + '{"time": 1.5, "by'
    path.write_text(torn)

    # Execute
    audited(answer, path)(encode(Ack(round=1), sender=0))

    # Assert: nothing lost, and the new record reads back whole on its own line
    lines = path.read_text().splitlines()
    assert path.read_text().startswith(torn + "\n")
    assert len(lines) == 3 and json.loads(lines[2])["round"] == 1
