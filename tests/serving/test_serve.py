"""``vfl serve`` with real processes: a label holder and three Adult parties over mutual TLS.

One service (module fixture) answers every test; each bad input is followed by a request that
is scored, showing the service stayed up. Tables are replaced atomically (write, then rename),
as docs/predict.md asks, and each test puts the original back.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.serving.registry_runs import PBM, Deployed, deployment_of, trained_run
from tests.serving.service import Service, start_service
from vfl.cli import main
from vfl.deploy.score_client import call
from vfl.errors import ProtocolError
from vfl.transport.security import PartyTls

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Deployed:
    root = tmp_path_factory.mktemp("serve")
    run_dir = trained_run("adult", root)
    assert main(["predict", str(run_dir), "--out", str(root / "batch.csv")]) == 0
    return deployment_of(run_dir, root / "deploy")


@pytest.fixture(scope="module")
def service(trained: Deployed) -> Iterator[Service]:
    running = start_service(trained)
    yield running
    running.stop()


@pytest.fixture
def batch(trained: Deployed) -> pd.DataFrame:
    """``vfl predict``'s probabilities of the test split (from the same bundles), by ID."""
    frame = pd.read_csv(trained.root.parent / "batch.csv", dtype={"id": str, "predicted": str})
    return frame.set_index("id")


def replace_table(path: Path, frame: pd.DataFrame) -> None:
    """Write ``frame`` to a new file and rename it over ``path`` (what a party's ETL should do)."""
    staged = path.with_suffix(".staged.csv")
    frame.to_csv(staged, index=False)
    os.replace(staged, path)


@pytest.fixture
def tables(trained: Deployed) -> Iterator[dict[int, pd.DataFrame]]:
    """Every party's table (ID as text); each is put back after the test."""
    original = {p: pd.read_csv(t, dtype={"id": str}) for p, t in trained.tables.items()}
    yield {p: frame.copy() for p, frame in original.items()}
    for party, frame in original.items():
        replace_table(trained.tables[party], frame)


def results(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["id"]: entry for entry in answer["results"]}


def assert_scored_like_batch(entry: dict[str, Any], batch: pd.DataFrame) -> None:
    assert "error" not in entry, entry
    expected = batch.loc[entry["id"]]
    for name, probability in entry["probabilities"].items():
        assert abs(probability - expected[f"probability_{name}"]) <= 1e-6
    assert entry["predicted"] == expected["predicted"]


def test_online_scores_equal_batch_prediction(service: Service, batch: pd.DataFrame) -> None:
    # Prepare
    ids = list(batch.index)

    # Execute: every test ID in one request, and a few one at a time
    together = results(service.score(ids))
    alone = [results(service.score([key]))[key] for key in ids[:3]]

    # Assert
    assert list(together) == ids
    for entry in [*together.values(), *alone]:
        assert_scored_like_batch(entry, batch)


def test_concurrent_requests_are_all_answered_correctly(
    service: Service, batch: pd.DataFrame
) -> None:
    # Prepare
    ids = list(batch.index)[:12]
    answers: dict[str, dict[str, Any]] = {}

    def ask(key: str) -> None:
        answers[key] = results(service.score([key]))[key]

    # Execute
    threads = [threading.Thread(target=ask, args=(key,)) for key in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Assert
    assert sorted(answers) == sorted(ids)
    for entry in answers.values():
        assert_scored_like_batch(entry, batch)


def test_an_id_unknown_to_one_party_fails_alone_with_the_reason(
    service: Service, batch: pd.DataFrame, tables: dict[int, pd.DataFrame], trained: Deployed
) -> None:
    # Prepare: party 2 no longer holds the first ID
    first, second = list(batch.index)[:2]
    replace_table(trained.tables[2], tables[2][tables[2]["id"] != first])

    # Execute
    answer = results(service.score([first, second, "no-such-id"]))

    # Assert
    assert answer[first]["error"] == "party 2 holds no row with this ID"
    assert_scored_like_batch(answer[second], batch)
    assert "party 1 holds no row with this ID" in answer["no-such-id"]["error"]


def test_a_table_missing_a_column_names_it_and_nothing_is_scored_from_it(
    service: Service, batch: pd.DataFrame, tables: dict[int, pd.DataFrame], trained: Deployed
) -> None:
    # Prepare
    key = next(iter(batch.index))
    replace_table(trained.tables[3], tables[3].drop(columns=["capital-gain"]))

    # Execute
    broken = results(service.score([key]))[key]
    replace_table(trained.tables[3], tables[3])
    repaired = results(service.score([key]))[key]

    # Assert
    assert "party 3's table party3.csv has no column(s) ['capital-gain']" in broken["error"]
    assert_scored_like_batch(repaired, batch)


def test_a_cell_of_the_wrong_type_fails_its_id_naming_the_column(
    service: Service, batch: pd.DataFrame, tables: dict[int, pd.DataFrame], trained: Deployed
) -> None:
    # Prepare
    bad, good = list(batch.index)[:2]
    frame = tables[1].astype({"age": object})
    frame.loc[frame["id"] == bad, "age"] = "fifty"
    replace_table(trained.tables[1], frame)

    # Execute
    answer = results(service.score([bad, good]))

    # Assert
    assert "numeric column 'age' holds a value that is not a finite number" in answer[bad]["error"]
    assert "fifty" not in answer[bad]["error"]  # the party's value never reaches the caller
    assert_scored_like_batch(answer[good], batch)


def test_an_unseen_category_is_scored_by_the_training_rule_with_a_note(
    service: Service, batch: pd.DataFrame, tables: dict[int, pd.DataFrame], trained: Deployed
) -> None:
    # Prepare
    key, other = list(batch.index)[:2]
    frame = tables[1].copy()
    frame.loc[frame["id"] == key, "race"] = "Martian"
    replace_table(trained.tables[1], frame)

    # Execute
    answer = results(service.score([key, other]))

    # Assert: scored (all-zeros one-hot), with a note naming the column; the other unchanged
    assert "error" not in answer[key]
    assert any(
        "column 'race' holds a category unseen in training" in n for n in answer[key]["notes"]
    )
    assert_scored_like_batch(answer[other], batch)
    assert "notes" not in answer[other]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"\xff\xfe not json", "not UTF-8 JSON"),
        (b'{"ids": []}', '"ids" must be a list of 1 to'),
        (b'{"ids": [{"a": 1}]}', "\"ids\"[0] is {'a': 1}"),
        (b'{"names": ["1"]}', 'one key "ids"'),
    ],
)
def test_a_malformed_request_is_refused_and_the_service_stays_up(
    service: Service, batch: pd.DataFrame, body: bytes, reason: str
) -> None:
    # Prepare
    cert, key = service.deployed.client
    tls = PartyTls(service.deployed.ca.read_bytes(), cert.read_bytes(), key.read_bytes())
    first = next(iter(batch.index))

    # Execute
    with pytest.raises(ProtocolError) as refused:
        call(service.address, body, tls)
    after = results(service.score([first]))[first]

    # Assert
    assert "INVALID_ARGUMENT" in str(refused.value) and reason in str(refused.value)
    assert_scored_like_batch(after, batch)


def test_a_party_certificate_may_not_score(service: Service, trained: Deployed) -> None:
    # Prepare: party 1's own certificate (parties never see predictions)
    root = trained.root / "certs"
    party = (root / "party-1.pem", root / "party-1.key")

    # Execute
    client = service.client(cert=party)
    with pytest.raises(Exception) as refused:
        client.score(["1"])
    client.close()

    # Assert
    assert "PERMISSION_DENIED" in str(refused.value) and "client-<name>" in str(refused.value)


def test_a_party_that_is_down_fails_requests_in_bounded_time_and_comes_back(
    service: Service, batch: pd.DataFrame
) -> None:
    # Prepare
    key = next(iter(batch.index))
    service.parties[3].kill()
    service.parties[3].wait()
    service.wait_for_log("serve", "party 3 disconnected")

    # Execute: a request while it is down (bounded by --wait-s), then after it is back
    down = results(service.score([key]))[key]
    connected_before = service.log("serve").count("party 3 connected")
    service.start_party(3)
    service.wait_for_log("serve", "party 3 connected", count=connected_before + 1)
    back = results(service.score([key]))[key]

    # Assert
    assert "parties [3] did not connect within 3 s" in down["error"]
    assert service.server.poll() is None
    assert_scored_like_batch(back, batch)


def test_a_bundle_of_another_run_is_refused_at_connect(
    service: Service, batch: pd.DataFrame, tmp_path: Path
) -> None:
    # Prepare: a second run (another seed: another fingerprint)
    other = trained_run("adult", tmp_path, "train.seed=7")

    # Execute: a second party-1 process with the other run's bundle dials the service
    rogue = service.start_party_process(1, "--model", str(other / "bundle"), name="rogue-1")
    status = rogue.wait(timeout=60)
    first = next(iter(batch.index))
    after = results(service.score([first]))[first]

    # Assert: refused at connect, naming the mismatch; the service still scores
    log = service.log("rogue-1")
    assert status != 0
    assert "model bundle comes from another run" in log
    assert_scored_like_batch(after, batch)


@pytest.mark.parametrize("case", ["mnist", "adult-pbm"])
def test_online_scores_equal_batch_prediction_for_images_and_with_pbm(
    tmp_path: Path, case: str
) -> None:
    # Prepare: four MNIST quadrant parties serving their pixels from CSV tables, or Adult with
    # PBM and secure aggregation (the service sums the embeddings securely, as evaluation does)
    name, _, variant = case.partition("-")
    run_dir = trained_run(name, tmp_path, *(PBM if variant else ()))
    assert main(["predict", str(run_dir), "--out", str(tmp_path / "batch.csv")]) == 0
    expected = pd.read_csv(tmp_path / "batch.csv", dtype={"id": str, "predicted": str})
    expected = expected.set_index("id")
    running = start_service(deployment_of(run_dir, tmp_path / "deploy"))

    # Execute
    try:
        answer = results(running.score(list(expected.index)))
    finally:
        running.stop()

    # Assert
    assert list(answer) == list(expected.index)
    for entry in answer.values():
        assert_scored_like_batch(entry, expected)
