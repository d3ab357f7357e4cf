from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from vfl.transport import Ledger

entries = st.lists(
    st.tuples(
        st.integers(0, 5),
        st.sampled_from(["setup", "train", "eval"]),
        st.sampled_from(["up", "down"]),
        st.integers(1, 4),
        st.sampled_from(["EmbedReply", "Ack"]),
        st.integers(0, 10_000),
    ),
    max_size=40,
)


def fill(rows: list[tuple]) -> Ledger:  # type: ignore[type-arg]
    ledger = Ledger()
    for round_, phase, direction, party, kind, nbytes in rows:
        ledger.record(
            round=round_, phase=phase, direction=direction, party=party, kind=kind, nbytes=nbytes
        )
    return ledger


@given(rows=entries)
def test_totals_equal_the_sum_of_recorded_sizes(rows: list[tuple]) -> None:  # type: ignore[type-arg]
    # Execute
    ledger = fill(rows)

    # Assert
    assert ledger.total() == sum(r[5] for r in rows)
    assert ledger.messages() == len(rows)
    assert ledger.total(phase="train", direction="up") == sum(
        r[5] for r in rows if r[1] == "train" and r[2] == "up"
    )
    per_round = ledger.bytes_by_round(phase="train")
    assert sum(d["up"] + d["down"] for d in per_round.values()) == ledger.total(phase="train")


@given(rows=entries)
def test_state_dict_round_trips(rows: list[tuple]) -> None:  # type: ignore[type-arg]
    # Prepare
    ledger = fill(rows)
    restored = Ledger()

    # Execute
    restored.load_state_dict(ledger.state_dict())

    # Assert
    assert restored.rows() == ledger.rows()


def test_csv_has_one_line_per_row(tmp_path: Path) -> None:
    # Prepare
    ledger = fill(
        [(0, "train", "up", 1, "EmbedReply", 100), (0, "train", "up", 1, "EmbedReply", 50)]
    )

    # Execute
    ledger.write_csv(tmp_path / "ledger.csv")

    # Assert
    lines = (tmp_path / "ledger.csv").read_text().splitlines()
    assert lines == [
        "round,phase,direction,party,kind,messages,bytes",
        "0,train,up,1,EmbedReply,2,150",
    ]
