from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from vfl.results.metrics import Task, evaluate_logits, f1_score, roc_auc


def brute_force_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    pos = scores[labels == 1]
    neg = scores[labels == 0]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


@given(pairs=st.lists(st.tuples(st.integers(0, 1), st.integers(0, 5)), min_size=2, max_size=40))
def test_auc_equals_the_pairwise_definition_with_ties(pairs: list[tuple[int, int]]) -> None:
    # Prepare
    labels = np.array([p[0] for p in pairs])
    scores = np.array([p[1] for p in pairs], dtype=np.float64)

    # Execute
    auc = roc_auc(labels, scores)

    # Assert
    if labels.min() == labels.max():
        assert np.isnan(auc)
    else:
        assert auc == pytest.approx(brute_force_auc(labels, scores))


def test_f1_of_the_positive_class() -> None:
    labels = np.array([1, 1, 0, 0, 1])
    predictions = np.array([1, 0, 1, 0, 1])
    # precision 2/3, recall 2/3
    assert f1_score(labels, predictions) == pytest.approx(2 / 3)
    assert f1_score(labels, np.zeros(5, dtype=int)) == 0.0


def test_binary_task_uses_one_logit_and_reports_f1_and_auc() -> None:
    # Prepare
    task = Task(2)
    logits = torch.tensor([[2.0], [-1.0], [0.5], [-3.0]])
    labels = torch.tensor([1, 0, 0, 0])

    # Execute
    metrics = evaluate_logits(task, logits, labels)

    # Assert
    assert task.output_dim == 1
    assert metrics["accuracy"] == 0.75
    assert metrics["auc"] == 1.0
    assert metrics["f1"] == pytest.approx(2 / 3)
    expected = torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], labels.float())
    assert metrics["loss"] == pytest.approx(float(expected))


def test_multiclass_task_reports_loss_and_accuracy_only() -> None:
    task = Task(3)
    metrics = evaluate_logits(task, torch.eye(3), torch.tensor([0, 1, 1]))
    assert set(metrics) == {"loss", "accuracy"}
    assert metrics["accuracy"] == pytest.approx(2 / 3)


def test_a_task_needs_two_classes() -> None:
    with pytest.raises(ValueError, match=">= 2 classes"):
        Task(1)
