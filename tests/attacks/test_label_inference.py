"""Label inference from gradients: perfect on exact logistic-head gradients, chance on noise."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.attacks.synthetic import feed_batches, known_positives, logistic_gradients
from vfl.attacks import Inference
from vfl.attacks.base import PartyKnowledge
from vfl.attacks.label_inference import LabelInference
from vfl.attacks.scoring import Truth, score
from vfl.run.observe import Delivery


def _own(rows: int, classes: int = 2) -> PartyKnowledge:
    """The party's own knowledge (label inference uses none of it)."""
    return PartyKnowledge(1, torch.zeros(rows, 1), torch.nn.Identity(), classes)


def _infer(attack: LabelInference, rows: int, classes: int = 2) -> Inference:
    return attack.infer(_own(rows, classes), seed=0)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    width=st.integers(1, 32),
    positive_share=st.floats(0.05, 0.95),
)
def test_direction_scoring_recovers_every_label_of_a_logistic_head(
    seed: int, width: int, positive_share: float
) -> None:
    # Prepare: exact gradients of a logistic head, any width, any class balance
    generator = torch.Generator().manual_seed(seed)
    rows = 512
    labels = (torch.rand(rows, generator=generator) < positive_share).to(torch.int64)
    labels[:2] = torch.tensor([1, 0])  # both classes present
    embeddings = torch.randn(rows, width, generator=generator, dtype=torch.float64)
    weight = torch.randn(width, generator=generator, dtype=torch.float64)
    gradients = logistic_gradients(embeddings, labels, weight)
    attack = LabelInference(rows, known_positives(labels, 1), num_classes=2, direct=True)

    # Execute
    order = torch.randperm(rows, generator=generator)
    feed_batches(attack, order, gradients, kind="GradRequest")
    metrics = score(_infer(attack, rows), Truth(labels, 2))

    # Assert
    assert metrics["attack_direction_auc"] == 1.0
    assert metrics["attack_accuracy"] == 1.0


def test_norm_scoring_ranks_the_rare_class_first_when_the_head_predicts_the_base_rate() -> None:
    # Prepare: every logit at the base rate p = 0.1, so |σ − y| is 0.9 for positives, 0.1 else
    rows, rate = 1000, 0.1
    labels = torch.zeros(rows, dtype=torch.int64)
    labels[: int(rows * rate)] = 1
    weight = torch.ones(4, dtype=torch.float64)
    logit = torch.logit(torch.tensor(rate, dtype=torch.float64)) / 4
    embeddings = torch.full((rows, 4), float(logit), dtype=torch.float64)
    gradients = logistic_gradients(embeddings, labels, weight)
    attack = LabelInference(rows, known_positives(labels, 1), num_classes=2, direct=True)

    # Execute
    feed_batches(attack, torch.arange(rows), gradients, kind="GradRequest")
    metrics = score(_infer(attack, rows), Truth(labels, 2))

    # Assert
    assert metrics["attack_norm_auc"] == 1.0


def _norm_metrics(predicted: float, labels: torch.Tensor) -> dict[str, float]:
    """Norm scoring of a logistic head that predicts ``predicted`` for every sample."""
    rows = len(labels)
    logit = float(torch.logit(torch.tensor(predicted, dtype=torch.float64))) / 4
    embeddings = torch.full((rows, 4), logit, dtype=torch.float64)
    gradients = logistic_gradients(embeddings, labels, torch.ones(4, dtype=torch.float64))
    attack = LabelInference(rows, known_positives(labels, 1), num_classes=2, direct=True)
    feed_batches(attack, torch.arange(rows), gradients, kind="GradRequest")
    return score(_infer(attack, rows), Truth(labels, 2))


def test_a_score_that_ranks_the_classes_backwards_is_read_with_its_sign_flipped() -> None:
    # Prepare: 10 % positives
    labels = torch.zeros(1000, dtype=torch.int64)
    labels[:100] = 1

    # Execute: a head predicting 0.95 for all gives the common class the larger gradients
    # (|σ − y| = 0.95 against 0.05): the norm ranks the classes backwards, an AUC of 0 as it is
    backwards = _norm_metrics(0.95, labels)
    forwards = _norm_metrics(0.1, labels)

    # Assert: the attacker reads the negated score: AUC 1, sign -1 (the negative control: at
    # the base rate the norm ranks the rare class first and is read as it is, sign +1)
    assert backwards["attack_norm_auc"] == 1.0
    assert backwards["attack_norm_sign"] == -1.0
    assert forwards["attack_norm_auc"] == 1.0
    assert forwards["attack_norm_sign"] == 1.0


def test_random_gradients_give_chance_level_auc() -> None:
    # Prepare: the negative control: gradients independent of the labels
    generator = torch.Generator().manual_seed(7)
    rows = 4000
    labels = torch.randint(0, 2, (rows,), generator=generator)
    gradients = torch.randn(rows, 16, generator=generator, dtype=torch.float64)
    attack = LabelInference(rows, known_positives(labels, 1), num_classes=2, direct=True)

    # Execute
    feed_batches(attack, torch.arange(rows), gradients, kind="GradRequest")
    metrics = score(_infer(attack, rows), Truth(labels, 2))

    # Assert: the standard error of a chance AUC here is about 0.009 (read with its better sign,
    # a chance AUC is at least 0.5)
    assert 0.5 <= metrics["attack_norm_auc"] < 0.55
    assert 0.5 <= metrics["attack_direction_auc"] < 0.55
    assert abs(metrics["attack_accuracy"] - 0.5) < 0.05


def test_direct_inference_reads_multiclass_labels_off_softmax_gradients() -> None:
    # Prepare: d loss / d logits of softmax cross-entropy, (p − e_y) / B
    generator = torch.Generator().manual_seed(3)
    rows, classes = 600, 10
    labels = torch.randint(0, classes, (rows,), generator=generator)
    logits = torch.randn(rows, classes, generator=generator)
    gradients = (logits.softmax(dim=1) - torch.nn.functional.one_hot(labels, classes)) / 64
    empty = torch.zeros(0, dtype=torch.int64)
    attack = LabelInference(rows, known_positives(empty, 0), num_classes=classes, direct=True)

    # Execute
    feed_batches(attack, torch.arange(rows), gradients, kind="GradRequest")
    metrics = score(_infer(attack, rows, classes), Truth(labels, classes))

    # Assert
    assert metrics["attack_accuracy"] == 1.0


def test_direct_inference_says_when_it_does_not_apply() -> None:
    # Prepare: gradients narrower than the classes (a trainable head above the party)
    rows, classes = 100, 10
    empty = torch.zeros(0, dtype=torch.int64)
    attack = LabelInference(rows, known_positives(empty, 0), num_classes=classes, direct=True)
    feed_batches(attack, torch.arange(rows), torch.randn(rows, 4), kind="GradRequest")

    # Execute
    inference = _infer(attack, rows, classes)

    # Assert
    assert inference.labels is None
    assert "not applicable" in inference.notes["multiclass"]


def test_label_inference_ignores_everything_but_gradients() -> None:
    # Prepare: embedding requests and evaluation traffic carry no gradient
    rows = 64
    labels = torch.randint(0, 2, (rows,), generator=torch.Generator().manual_seed(0))
    labels[0] = 1
    attack = LabelInference(rows, known_positives(labels, 1), num_classes=2, direct=True)
    ids = torch.arange(rows)

    # Execute
    attack.observe(Delivery(0, "train", "EmbedRequest", (1,), ids=ids))
    attack.observe(Delivery(0, "eval", "EvalRequest", (1,), ids=ids))
    inference = _infer(attack, rows)

    # Assert
    assert len(inference.ids) == 0


def test_the_samples_whose_labels_the_attacker_knew_are_not_scored() -> None:
    # Prepare
    rows = 200
    generator = torch.Generator().manual_seed(1)
    labels = torch.randint(0, 2, (rows,), generator=generator)
    known = known_positives(labels, 5)
    attack = LabelInference(rows, known, num_classes=2, direct=True)
    weight = torch.randn(3, dtype=torch.float64, generator=generator)
    embeddings = torch.randn(rows, 3, dtype=torch.float64, generator=generator)

    # Execute
    feed_batches(
        attack,
        torch.arange(rows),
        logistic_gradients(embeddings, labels, weight),
        kind="GradRequest",
    )
    inference = _infer(attack, rows)

    # Assert
    assert not torch.isin(inference.ids, known.ids).any()
    assert len(inference.ids) == rows - 5


def test_a_resumed_attack_scores_as_an_uninterrupted_one() -> None:
    # Prepare: half the rounds, a state round trip, the other half
    generator = torch.Generator().manual_seed(2)
    rows = 256
    labels = torch.randint(0, 2, (rows,), generator=generator)
    embeddings = torch.randn(rows, 5, dtype=torch.float64, generator=generator)
    gradients = logistic_gradients(embeddings, labels, torch.randn(5, dtype=torch.float64))
    known = known_positives(labels, 1)
    whole = LabelInference(rows, known, num_classes=2, direct=True)
    first = LabelInference(rows, known, num_classes=2, direct=True)
    feed_batches(whole, torch.arange(rows), gradients, kind="GradRequest")
    feed_batches(first, torch.arange(rows // 2), gradients, kind="GradRequest")

    # Execute
    second = LabelInference(rows, known, num_classes=2, direct=True)
    second.load_state_dict(first.state_dict())
    feed_batches(second, torch.arange(rows // 2, rows), gradients, kind="GradRequest")

    # Assert
    left, right = _infer(whole, rows), _infer(second, rows)
    assert torch.equal(left.ids, right.ids)
    assert torch.equal(left.scores["direction"], right.scores["direction"])
