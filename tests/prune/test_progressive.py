from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tests.prune.models import build, inputs, masked_original
from vfl.errors import ConfigError
from vfl.prune import ProgressivePruner, kept_count, unit_widths


def _train_a_little(model: nn.Module, x: torch.Tensor) -> None:
    """Move the weights so that a second pass ranks trained, not initial, weights."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(3):
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()


def test_a_lower_or_equal_ratio_later_never_regrows() -> None:
    # Prepare
    pruner = ProgressivePruner.for_model(build("cnn-hidden"))
    model = pruner.step(build("cnn-hidden"), 0.5)
    assert model is not None
    widths = pruner.widths()

    # Execute
    results = [pruner.step(model.model, ratio) for ratio in (0.0, 0.2, 0.5)]

    # Assert
    assert results == [None, None, None]
    assert pruner.widths() == widths == unit_widths(model.model)
    assert pruner.max_ratio == 0.5


def test_ratios_are_relative_to_the_original_widths() -> None:
    # Prepare
    original = build("cnn-hidden")
    stepwise, at_once = ProgressivePruner.for_model(original), ProgressivePruner.for_model(original)

    # Execute
    first = stepwise.step(original, 0.2)
    assert first is not None
    second = stepwise.step(first.model, 0.6)
    direct = at_once.step(original, 0.6)

    # Assert
    assert second is not None and direct is not None
    expected = {name: kept_count(width, 0.6) for name, width in unit_widths(original).items()}
    assert unit_widths(second.model) == unit_widths(direct.model) == expected


def test_the_kept_original_indices_mask_the_original_model_exactly() -> None:
    # Prepare
    model, x = build("cnn-hidden"), inputs("cnn-hidden")
    pruner = ProgressivePruner.for_model(model)
    first = pruner.step(model, 0.3)
    assert first is not None

    # Execute
    second = pruner.step(first.model, 0.7)

    # Assert
    assert second is not None
    kept = {name: torch.tensor(units) for name, units in pruner.kept.items()}
    torch.testing.assert_close(second.model(x), masked_original(model, kept)(x))


def test_restore_rebuilds_the_pruned_architecture_for_a_checkpoint() -> None:
    # Prepare: prune, train, prune again, as in a run that is then checkpointed
    model, x = build("cnn-hidden"), inputs("cnn-hidden")
    pruner = ProgressivePruner.for_model(model)
    first = pruner.step(model, 0.3)
    assert first is not None
    _train_a_little(first.model, x)
    second = pruner.step(first.model, 0.7)
    assert second is not None
    checkpoint = second.model.state_dict()

    # Execute: a fresh original (other seed) restored to the recorded units, then loaded
    restored = pruner.restore(build("cnn-hidden", seed=9))
    restored.model.load_state_dict(checkpoint)

    # Assert
    assert unit_widths(restored.model) == pruner.widths()
    torch.testing.assert_close(restored.model(x), second.model(x))


def test_a_second_pass_ranks_the_trained_weights() -> None:
    # Prepare
    model, x = build("mlp"), inputs("mlp")
    pruner = ProgressivePruner.for_model(model)
    first = pruner.step(model, 0.25)
    assert first is not None
    _train_a_little(first.model, x)

    # Execute
    second = pruner.step(first.model, 0.5)

    # Assert: the second pass equals masking the trained first model
    assert second is not None
    masked = masked_original(first.model, second.units)
    torch.testing.assert_close(second.model(x), masked(x), atol=1e-5, rtol=1e-5)


def test_a_ratio_that_changes_no_count_raises_the_maximum_but_returns_none() -> None:
    # Prepare: 16 and 10 units; 0.05 keeps ceil(15.2) = 16 and ceil(9.5) = 10
    model = build("mlp")
    pruner = ProgressivePruner.for_model(model)

    # Execute
    result = pruner.step(model, 0.05)

    # Assert
    assert result is None
    assert pruner.max_ratio == 0.05


@settings(max_examples=30, deadline=None)
@given(ratios=st.lists(st.floats(0.0, 0.95), min_size=1, max_size=6))
def test_widths_always_follow_the_running_maximum(ratios: list[float]) -> None:
    # Prepare
    model = build("cnn-hidden")
    originals = unit_widths(model)
    pruner = ProgressivePruner(originals)

    # Execute / Assert
    running = 0.0
    for ratio in ratios:
        result = pruner.step(model, ratio)
        model = model if result is None else result.model
        running = max(running, ratio)
        expected = {name: kept_count(width, running) for name, width in originals.items()}
        assert unit_widths(model) == pruner.widths() == expected


def test_state_dict_is_plain_and_resumes_the_same_pruning() -> None:
    # Prepare
    model, x = build("cnn"), inputs("cnn")
    pruner = ProgressivePruner.for_model(model)
    first = pruner.step(model, 0.4)
    assert first is not None

    # Execute
    state = json.loads(json.dumps(pruner.state_dict()))  # plain types survive JSON
    resumed = ProgressivePruner.for_model(build("cnn"))
    resumed.load_state_dict(state)
    a, b = pruner.step(first.model, 0.6), resumed.step(first.model, 0.6)

    # Assert
    assert a is not None and b is not None
    assert resumed.state_dict() == pruner.state_dict()
    torch.testing.assert_close(a.model(x), b.model(x))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"original_widths": {"features.0": 6}}, "layers"),
        ({"max_ratio": 1.0}, "max_ratio"),
        ({"kept": {"features.0": [0, 1], "features.3": [7]}}, "features.3"),
        ({"kept": {"features.0": [1, 0], "features.3": [0]}}, "features.0"),
        ({"kept": {"features.0": [0]}}, "all layers"),
        ({"kept": {"features.0": [-1, 0], "features.3": [0]}}, "features.0"),
    ],
)
def test_load_state_dict_refuses_inconsistent_state(
    change: dict[str, object], message: str
) -> None:
    # Prepare
    pruner = ProgressivePruner.for_model(build("cnn"))
    state = {**pruner.state_dict(), **change}

    # Execute / Assert
    with pytest.raises(ConfigError, match=message):
        pruner.load_state_dict(state)


def test_load_state_dict_refuses_missing_keys() -> None:
    with pytest.raises(ConfigError, match="lacks"):
        ProgressivePruner.for_model(build("cnn")).load_state_dict({"max_ratio": 0.5})


def test_step_refuses_a_model_the_pruner_did_not_leave() -> None:
    # Prepare
    pruner = ProgressivePruner.for_model(build("mlp"))
    assert pruner.step(build("mlp"), 0.5) is not None

    # Execute / Assert
    with pytest.raises(ConfigError, match="pass the model the last step returned"):
        pruner.step(build("mlp"), 0.7)


def test_restore_needs_the_unpruned_model() -> None:
    # Prepare
    pruner = ProgressivePruner.for_model(build("mlp"))
    result = pruner.step(build("mlp"), 0.5)
    assert result is not None

    # Execute / Assert
    with pytest.raises(ConfigError, match="unpruned"):
        pruner.restore(result.model)


def test_original_widths_must_be_positive_integers() -> None:
    with pytest.raises(ConfigError, match=r"layers\.1"):
        ProgressivePruner({"layers.1": 0})
