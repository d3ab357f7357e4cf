"""The labels' epsilon holds against a coalition of every passive party pooling its copies.

Every passive party of a real simulated run is observed (``vfl.run.observe``: what its handler
receives). For each training sample the test counts the distinct noised gradient rows the
coalition of all of them holds at the end, and checks the stated ``label_epsilon`` is
dp-accounting's PLD epsilon of that many Gaussian releases:

- a sum head: every party receives the same noised row (one release per sample and epoch,
  whatever the number of parties): pooling the copies gives nothing a single party lacks;
- the negative control, a concatenating head: each party's row is its own and noised on its
  own, so the coalition holds one release per party and epoch, and the stated epsilon counts
  them all (the one-release epsilon would be exceeded by what the coalition holds);
- the sequential schedule likewise (each party's row is taken after the previous party's update).
"""

from __future__ import annotations

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


def _pld_epsilon(releases: int) -> float:
    """Independently: dp-accounting's PLD epsilon of ``releases`` Gaussian releases of
    sensitivity 2C and noise zC (noise multiplier z/2 in dp-accounting's unit)."""
    from dp_accounting import GaussianDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    from vfl.privacy.pld import discretization

    interval = discretization(((MULTIPLIER, 2.0, releases),))
    accountant = PLDAccountant(value_discretization_interval=interval)
    accountant.compose(GaussianDpEvent(MULTIPLIER / 2.0), releases)
    return float(accountant.get_epsilon(DELTA))


class Coalition:
    """Every gradient row each passive party received, by sample."""

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


ACTIVE = ("protocol.active_party=1", "protocol.local_steps=2")


@pytest.mark.parametrize(
    ("head", "overrides", "passive", "rows_per_epoch"),
    [
        ("sum", ("model.head.fusion=sum",), PARTIES, 1),
        ("concat (negative control)", ("model.head.fusion=concat",), PARTIES, 3),
        ("sequential", ("model.head.fusion=sum", "protocol.schedule=sequential"), PARTIES, 3),
        ("active party, concat", ("model.head.fusion=concat", *ACTIVE), (2, 3), 2),
        ("active party, sum", ("model.head.fusion=sum", *ACTIVE), (2, 3), 1),
    ],
)
def test_the_stated_label_epsilon_counts_every_release_the_coalition_can_pool(
    tmp_path: Path,
    head: str,
    overrides: tuple[str, ...],
    passive: tuple[int, ...],
    rows_per_epoch: int,
) -> None:
    # Prepare, Execute
    coalition, final, rows = _train(tmp_path, passive, *overrides)

    # Assert: every sample was sent to every party once per epoch ...
    samples = sorted(coalition.rows)
    assert samples == list(range(rows))
    assert all(len(coalition.rows[s]) == len(passive) * EPOCHS for s in samples)
    # ... and the coalition holds exactly rows_per_epoch distinct noised rows of it per epoch
    # (with a shared row, the three parties' copies are equal bit for bit: their average, what
    # a coalition would pool, is that row again, its noise not shrunk)
    held = {coalition.distinct_rows(s) for s in samples}
    assert held == {rows_per_epoch * EPOCHS}, head
    # the stated epsilon is dp-accounting's for what the coalition holds, no less
    assert final["label_epsilon"] == pytest.approx(_pld_epsilon(rows_per_epoch * EPOCHS), rel=1e-6)
