"""Feature reconstruction: a linear bottom is inverted from enough auxiliary rows; uploads
that say nothing about the rows leave the attacker at the auxiliary mean."""

from __future__ import annotations

import torch

from tests.attacks.synthetic import feed_batches
from vfl.attacks import KnownRows, ServerKnowledge
from vfl.attacks.reconstruction import FeatureReconstruction
from vfl.attacks.scoring import Truth, score

ROWS, WIDTH, EMBEDDING = 1200, 12, 24


def _server() -> ServerKnowledge:
    return ServerKnowledge(torch.zeros(ROWS, dtype=torch.int64), torch.nn.Identity(), 2)


def _attack(features: torch.Tensor, aux: int, *, party: int = 1) -> FeatureReconstruction:
    ids = torch.arange(0, ROWS, ROWS // aux)[:aux]
    known = KnownRows(ids, features[ids].clone())
    return FeatureReconstruction(party, ROWS, known, hidden=(), epochs=200, batch_size=64, lr=1e-2)


def _features(seed: int) -> torch.Tensor:
    return torch.randn(ROWS, WIDTH, generator=torch.Generator().manual_seed(seed))


def test_reconstruction_inverts_a_linear_bottom_from_enough_auxiliary_rows() -> None:
    # Prepare: the party uploads x A with A of full column rank (12 -> 24)
    features = _features(0)
    mixing = torch.randn(WIDTH, EMBEDDING, generator=torch.Generator().manual_seed(1))
    attack = _attack(features, aux=240)

    # Execute
    feed_batches(attack, torch.arange(ROWS), features @ mixing, kind="EmbedReply")
    metrics = score(attack.infer(_server(), seed=0), Truth(torch.zeros(ROWS), 2, features))

    # Assert: the prior (the rows' mean) has MSE about 1, the inverse almost none
    assert metrics["attack_mse_prior"] > 0.8
    assert metrics["attack_mse"] < 0.01


def test_uploads_independent_of_the_rows_leave_the_attacker_at_the_mean() -> None:
    # Prepare: the negative control: noise uploads
    features = _features(2)
    uploads = torch.randn(ROWS, EMBEDDING, generator=torch.Generator().manual_seed(3))
    attack = _attack(features, aux=240)

    # Execute
    feed_batches(attack, torch.arange(ROWS), uploads, kind="EmbedReply")
    metrics = score(attack.infer(_server(), seed=0), Truth(torch.zeros(ROWS), 2, features))

    # Assert: no better than guessing the mean (within sampling error)
    assert metrics["attack_mse"] > 0.95 * metrics["attack_mse_prior"]


def test_uploads_of_another_party_are_not_taken_for_the_target_s() -> None:
    # Prepare: only party 2's embeddings arrive
    features = _features(4)
    mixing = torch.randn(WIDTH, EMBEDDING, generator=torch.Generator().manual_seed(5))
    attack = _attack(features, aux=240, party=1)

    # Execute
    feed_batches(attack, torch.arange(ROWS), features @ mixing, kind="EmbedReply", party=2)
    inference = attack.infer(_server(), seed=0)

    # Assert
    assert len(inference.ids) == 0
    assert inference.notes["seen"] == "nothing"


def test_a_coordinate_constant_on_the_auxiliary_rows_does_not_blow_up_the_others() -> None:
    # Prepare: sparsified uploads (LVFL): coordinate 0 is zero on every auxiliary row only
    features = _features(6)
    mixing = torch.randn(WIDTH, EMBEDDING, generator=torch.Generator().manual_seed(7))
    uploads = features @ mixing
    attack = _attack(features, aux=240)
    uploads[attack.known.ids, 0] = 0.0

    # Execute
    feed_batches(attack, torch.arange(ROWS), uploads, kind="EmbedReply")
    metrics = score(attack.infer(_server(), seed=0), Truth(torch.zeros(ROWS), 2, features))

    # Assert: a tiny std must not scale the unseen rows' values to millions
    assert metrics["attack_mse"] < metrics["attack_mse_prior"]
