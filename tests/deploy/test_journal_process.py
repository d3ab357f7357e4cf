"""A ``vfl party`` process with a damaged release journal refuses to start, and one whose journal
ends in a torn record (as a kill leaves it) starts: bit flips in the middle and in the tail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np

from tests.deploy.scenario import ROOT, Scenario, deploy_command, free_port
from vfl.deploy.journal import frame
from vfl.deploy.releases import FILE_NAME, MAGIC, id_keys, open_journal
from vfl.privacy.events import PbmEvent

KEYS = id_keys([b"a", b"b", b"c"])
EVENT = PbmEvent(trials=16, beta=0.05, parties=2, dimension=4)


def three_releases(folder: Path) -> Path:
    folder.mkdir()
    path = folder / FILE_NAME
    journal = open_journal(path, KEYS)[0]
    for rows in ([0], [1, 2], [0]):
        journal.append(np.array(rows, dtype=np.int64), EVENT)
    journal.close()
    return path


def start_party(scenario: Scenario, journal_dir: Path) -> subprocess.CompletedProcess[str]:
    """Party 1 with ``journal_dir``, dialing a port nothing listens on, giving up after 1 s."""
    command = deploy_command(
        "party",
        "--config",
        str(scenario.party_tomls[1]),
        "--server",
        f"127.0.0.1:{free_port()}",
        f"--set=privacy.journal_dir={journal_dir}",
        f"--set=state_dir={journal_dir.parent / (journal_dir.name + '-state')}",
        "--set=give_up_s=1",
    )
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        cwd=scenario.root,
        check=False,
    )


def test_a_bit_flipped_in_a_middle_record_stops_the_party_naming_file_and_offset(
    scenario: Scenario, tmp_path: Path
) -> None:
    # Prepare: one bit of the second release's keys
    path = three_releases(tmp_path / "middle")
    second = len(MAGIC) + len(frame(b"E", bytes(20))) + len(frame(b"R", bytes(8)))
    data = bytearray(path.read_bytes())
    data[second + 9 + 3] ^= 0x01
    path.write_bytes(bytes(data))

    # Execute
    result = start_party(scenario, path.parent)

    # Assert: refused before dialing, naming the file and the offset; nothing cut or copied
    assert result.returncode == 2
    assert f"vfl: error: {str(path)!r} is damaged at byte {second}" in result.stderr
    assert "could not reach the server" not in result.stderr
    assert path.read_bytes() == bytes(data)
    assert [p.name for p in path.parent.iterdir()] == [FILE_NAME]


def test_a_bit_flipped_in_a_torn_tail_still_starts_the_party(
    scenario: Scenario, tmp_path: Path
) -> None:
    # Prepare: the negative control: a kill left part of a fourth release, one bit flipped
    path = three_releases(tmp_path / "tail")
    whole = path.read_bytes()
    tail = bytearray(frame(b"R", KEYS[[1, 2]].astype("<u8").tobytes())[:20])
    tail[14] ^= 0x01
    path.write_bytes(whole + bytes(tail))

    # Execute
    result = start_party(scenario, path.parent)

    # Assert: it started (and gave up on the missing server), the tail dropped, a copy kept
    assert result.returncode == 2
    assert "could not reach the server" in result.stderr
    assert "ends in an incomplete record (20 bytes" in result.stderr
    assert path.read_bytes() == whole
    (copy,) = path.parent.glob(f"{FILE_NAME}.torn-*")
    assert copy.read_bytes() == whole + bytes(tail)
