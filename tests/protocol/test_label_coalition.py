"""The labels' epsilon holds against a coalition of every passive party pooling its copies.

Every passive party of a real simulated run is observed (``vfl.run.observe``: what its handler
receives). For each training sample the test counts the distinct noised gradient rows the
coalition of all of them holds at the end, and checks that the stated ``label_epsilon`` is
dp-accounting's PLD epsilon of that many Gaussian releases (and ``label_epsilon_one_party`` that
of one party's): each party's row gets a noise draw of its own, whatever the head, so the
coalition holds one release per party and epoch, and the accountant counts them all.

The negative controls: with a sum head the parties' rows are equal before the noise, so a
coalition that averages its copies shrinks the noise by sqrt(M), which the measured spread of
the copies shows; that average is one Gaussian release of noise z / sqrt(M), whose epsilon is
the stated one (an accountant of one release per epoch would claim less than the coalition
holds, and the count above would catch it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest
import torch

from tests.run.variants import write_run_config
from vfl.config import load_config
from vfl.run.compose import build_session
from vfl.run.data import prepare
from vfl.run.fit import fit
from vfl.run.observe import Delivery, Listener, Taps

MULTIPLIER, EPOCHS, DELTA = 0.8, 2, 1e-5
PARTIES = (1, 2, 3)
ACTIVE = ("protocol.active_party=1", "protocol.local_steps=2")


def _pld_epsilon(releases: int, multiplier: float = MULTIPLIER) -> float:
    """Independently: dp-accounting's PLD epsilon of ``releases`` Gaussian releases of
    sensitivity 2C and noise zC (noise multiplier z/2 in dp-accounting's unit)."""
    from dp_accounting import GaussianDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    from vfl.privacy.pld import discretization

    interval = discretization(((multiplier, 2.0, releases),))
    accountant = PLDAccountant(value_discretization_interval=interval)
    accountant.compose(GaussianDpEvent(multiplier / 2.0), releases)
    return float(accountant.get_epsilon(DELTA))


class Coalition:
    """Every gradient row each passive party received, by sample, in arrival order."""

    def __init__(self) -> None:
        self.rows: dict[int, list[tuple[int, torch.Tensor]]] = defaultdict(list)

    def listener(self, party: int) -> Listener:
        def heard(delivery: Delivery) -> None:
            if delivery.kind == "GradRequest" and delivery.tensor is not None:
                assert delivery.ids is not None
                for sample, row in zip(delivery.ids.tolist(), delivery.tensor, strict=True):
                    self.rows[sample].append((party, row.clone()))

        return heard

    def distinct_rows(self, sample: int) -> int:
        """How many different noised rows of ``sample`` the coalition holds."""
        kept: list[torch.Tensor] = []
        for _, row in self.rows[sample]:
            if not any(torch.equal(row, other) for other in kept):
                kept.append(row)
        return len(kept)


def _train(
    tmp_path: Path, passive: tuple[int, ...], *overrides: str
) -> tuple[Coalition, dict[str, float], int]:
    """Train with every passive party observed: the coalition, the last record, the rows."""
    config = load_config(
        write_run_config(tmp_path),
        [
            f"privacy.gradient_noise.noise_multiplier={MULTIPLIER}",
            f"train.epochs={EPOCHS}",
            *overrides,
        ],
    )
    _, _, data = prepare(config)
    coalition = Coalition()
    taps = Taps(parties={party: coalition.listener(party) for party in passive})
    session = build_session(config, data, taps=taps)
    records = fit(session, epochs=EPOCHS, progress=False, eval_at_start=False)
    session.trainer.close()
    return coalition, records[-1], len(data.train_labels)


@pytest.mark.parametrize(
    ("head", "overrides", "passive"),
    [
        ("sum", ("model.head.fusion=sum",), PARTIES),
        ("concat", ("model.head.fusion=concat",), PARTIES),
        ("sequential", ("model.head.fusion=sum", "protocol.schedule=sequential"), PARTIES),
        ("active party", ("model.head.fusion=sum", *ACTIVE), (2, 3)),
    ],
)
def test_the_stated_label_epsilon_counts_every_release_the_coalition_can_pool(
    tmp_path: Path, head: str, overrides: tuple[str, ...], passive: tuple[int, ...]
) -> None:
    # Prepare, Execute
    coalition, final, rows = _train(tmp_path, passive, *overrides)

    # Assert: every sample was sent to every passive party once per epoch ...
    samples = sorted(coalition.rows)
    assert samples == list(range(rows))
    assert all(len(coalition.rows[s]) == len(passive) * EPOCHS for s in samples)
    # ... each copy noised on its own: the coalition holds one release per party and epoch
    held = {coalition.distinct_rows(s) for s in samples}
    assert held == {len(passive) * EPOCHS}, head
    # the stated epsilons are dp-accounting's for what the coalition and one party hold
    assert final["label_epsilon"] == pytest.approx(_pld_epsilon(len(passive) * EPOCHS), rel=1e-6)
    assert final["label_epsilon_one_party"] == pytest.approx(_pld_epsilon(EPOCHS), rel=1e-6)
    assert final["label_epsilon"] > final["label_epsilon_one_party"]


def test_pooling_shrinks_the_noise_by_sqrt_m_which_the_stated_epsilon_covers(
    tmp_path: Path,
) -> None:
    # Prepare, Execute: a sum head, so the three parties' rows are equal before the noise
    coalition, final, _ = _train(tmp_path, PARTIES, "model.head.fusion=sum")

    # Assert: the copies of a sample in one epoch differ by noise alone, of std z C / B per
    # coordinate (320 training rows in batches of B = 32, C = 1); their average, the
    # coalition's estimate, keeps a sqrt(3)-th of it
    differences = []
    for copies in coalition.rows.values():
        first_epoch = torch.stack([row for _, row in copies[: len(PARTIES)]])
        differences.append(first_epoch - first_epoch.mean(dim=0))
    spread = torch.cat(differences).double()
    per_copy = math.sqrt(float(spread.pow(2).mean()) * len(PARTIES) / (len(PARTIES) - 1))
    assert per_copy == pytest.approx(MULTIPLIER / 32, rel=0.05)
    # the stated epsilon is that of one release per epoch of noise z / sqrt(3): the average
    assert final["label_epsilon"] == pytest.approx(
        _pld_epsilon(EPOCHS, MULTIPLIER / math.sqrt(len(PARTIES))), rel=1e-3
    )
    # an accountant of one release per epoch would claim less than the coalition holds
    assert _pld_epsilon(EPOCHS) < final["label_epsilon"]
