from __future__ import annotations

import copy
import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tests.prune.models import MODELS, build, inputs, l1_of_rows, masked_original
from vfl.errors import ConfigError
from vfl.models import MLP
from vfl.models.bottom import SmallCNN
from vfl.prune import (
    count_params,
    kept_count,
    prune_model,
    prune_units,
    select_units,
    top_units,
    unit_widths,
    weighted_links,
)
from vfl.seeding import torch_seed

# --- contract: every supported model -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("ratio", [0.3, 0.5, 0.8])
def test_pruned_model_computes_what_the_masked_original_computes(name: str, ratio: float) -> None:
    # Prepare
    model, x = build(name), inputs(name)

    # Execute
    pruned = prune_model(model, ratio)

    # Assert
    masked = masked_original(model, pruned.units)
    with torch.no_grad():
        expected, got, unmasked = masked(x), pruned.model(x), model(x)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(unmasked, expected, atol=1e-3)  # the masking did change something


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pruning_keeps_the_highest_l1_units_of_every_hidden_layer(name: str) -> None:
    # Prepare
    model = build(name)
    layers = dict(model.named_modules())

    # Execute
    pruned = prune_model(model, 0.5)

    # Assert
    assert set(pruned.units) == set(unit_widths(model))
    for layer_name, kept in pruned.units.items():
        scores = l1_of_rows(layers[layer_name])
        kept_set = set(kept.tolist())
        removed = [s for i, s in enumerate(scores) if i not in kept_set]
        assert len(kept_set) == math.ceil(0.5 * len(scores))
        assert min(scores[i] for i in kept_set) >= max(removed)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_embedding_layer_keeps_its_width_and_the_original_is_untouched(name: str) -> None:
    # Prepare
    model = build(name)
    before = copy.deepcopy(model.state_dict())
    x = inputs(name)

    # Execute
    pruned = prune_model(model, 0.75)

    # Assert
    last_old, last_new = weighted_links(model)[-1].module, weighted_links(pruned.model)[-1].module
    assert isinstance(last_old, nn.Linear | nn.Conv2d)
    assert isinstance(last_new, nn.Linear | nn.Conv2d)
    assert last_new.weight.shape[0] == last_old.weight.shape[0]
    assert pruned.model(x).shape == model(x).shape
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pruned_layers_are_rebuilt_smaller_not_masked(name: str) -> None:
    # Prepare
    model = build(name)

    # Execute
    pruned = prune_model(model, 0.5)

    # Assert
    assert count_params(pruned.model) < count_params(model)
    for link in weighted_links(pruned.model):
        layer = link.module
        assert isinstance(layer, nn.Linear | nn.Conv2d)
        assert bool((layer.weight != 0).any(dim=tuple(range(1, layer.weight.dim()))).all())
        if isinstance(layer, nn.Linear):
            assert layer.weight.shape == (layer.out_features, layer.in_features)
        else:
            assert layer.weight.shape[:2] == (layer.out_channels, layer.in_channels)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pruned_model_trains(name: str) -> None:
    # Prepare
    pruned = prune_model(build(name), 0.5).model
    x = inputs(name)

    # Execute
    pruned(x).square().sum().backward()

    # Assert
    assert all(p.grad is not None and p.grad.shape == p.shape for p in pruned.parameters())


# --- ranking -----------------------------------------------------------------------------------


def test_neurons_are_ranked_by_the_l1_norm_of_their_incoming_row() -> None:
    # Prepare: row L1 norms 3, 10, 2, 7 (the L2 order of rows 0 and 2 would differ)
    layer = nn.Linear(3, 4)
    with torch.no_grad():
        layer.weight.copy_(
            torch.tensor([[1.0, 1.0, 1.0], [0.0, -10.0, 0.0], [0.0, 0.0, 2.0], [-3.0, 4.0, 0.0]])
        )
        layer.bias.copy_(torch.tensor([100.0, 0.0, 100.0, 0.0]))  # biases do not count

    # Execute
    kept = top_units(layer, 2)

    # Assert
    assert kept.tolist() == [1, 3]


def test_filters_are_ranked_by_the_l1_norm_of_their_whole_kernel() -> None:
    # Prepare: filter j has all weights equal to w_j over 2 input channels x 3 x 3
    layer = nn.Conv2d(2, 5, kernel_size=3)
    values = torch.tensor([0.5, -4.0, 1.0, 3.0, -0.1])
    with torch.no_grad():
        layer.weight.copy_(values[:, None, None, None].expand(5, 2, 3, 3))

    # Execute
    kept = top_units(layer, 3)

    # Assert
    assert kept.tolist() == [1, 2, 3]


def test_ties_keep_the_lower_index() -> None:
    # Prepare
    layer = nn.Linear(2, 4)
    with torch.no_grad():
        layer.weight.fill_(1.0)

    # Execute / Assert
    assert top_units(layer, 2).tolist() == [0, 1]


def test_a_linear_after_conv_and_flatten_keeps_each_kept_channels_block() -> None:
    # Prepare: 3 channels of 2x2 flattened into 12 columns; channel 1 has the smallest filter
    conv, hidden = nn.Conv2d(1, 3, 1), nn.Linear(12, 2)
    model = nn.Sequential(conv, nn.Flatten(), hidden, nn.ReLU())
    model.append(nn.Linear(2, 1))
    with torch.no_grad():
        conv.weight.copy_(torch.tensor([2.0, 0.1, -3.0]).reshape(3, 1, 1, 1))
        hidden.weight.copy_(torch.arange(24.0).reshape(2, 12))

    # Execute
    pruned = prune_model(model, 0.5, original_widths={"0": 3, "2": 2})

    # Assert: channel 1 (columns 4..7) is gone from the Linear
    assert pruned.units["0"].tolist() == [0, 2]
    assert isinstance(pruned.model, nn.Sequential)
    linear = pruned.model[2]
    assert isinstance(linear, nn.Linear)
    expected = torch.arange(24.0).reshape(2, 12)[:, [0, 1, 2, 3, 8, 9, 10, 11]]
    assert torch.equal(linear.weight.detach()[:, :], expected[pruned.units["2"]])


def test_sigmoid_units_are_removed_from_the_next_layer_not_just_zeroed() -> None:
    # Prepare: sigmoid(0) = 0.5, so the reference removes the units' contributions downstream
    with torch_seed(3):
        model = MLP(6, [8], 3, activation_name="sigmoid")
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))

    # Execute
    pruned = prune_model(model, 0.5)

    # Assert
    reference = copy.deepcopy(model)
    removed = sorted(set(range(8)) - set(pruned.units["layers.1"].tolist()))
    next_layer = reference.layers[3]
    assert isinstance(next_layer, nn.Linear)
    with torch.no_grad():
        next_layer.weight[:, removed] = 0.0
    torch.testing.assert_close(pruned.model(x), reference(x), atol=1e-6, rtol=1e-5)


# --- counts and shapes (hypothesis) --------------------------------------------------------------


@given(
    original=st.integers(1, 5000),
    ratio=st.floats(0.0, 1.0, exclude_max=True),
    other=st.floats(0.0, 1.0, exclude_max=True),
)
def test_kept_count_is_the_ceiling_at_least_one_and_monotone(
    original: int, ratio: float, other: float
) -> None:
    # Execute
    kept = kept_count(original, ratio)

    # Assert
    assert 1 <= kept <= original
    assert kept >= (1 - ratio) * original - 1e-6
    assert kept - 1 < max(1.0, (1 - ratio) * original + 1e-6)
    low, high = sorted((ratio, other))
    assert kept_count(original, low) >= kept_count(original, high)


def test_decimal_ratios_keep_the_decimal_count() -> None:
    assert [kept_count(10, r) for r in (0.1, 0.3, 0.6, 0.7, 0.9)] == [9, 7, 4, 3, 1]


@settings(max_examples=40, deadline=None)
@given(
    hidden=st.lists(st.integers(1, 24), min_size=1, max_size=3),
    in_features=st.integers(1, 10),
    out_features=st.integers(1, 6),
    ratio=st.floats(0.0, 0.99),
)
def test_mlp_widths_after_pruning_are_the_kept_counts(
    hidden: list[int], in_features: int, out_features: int, ratio: float
) -> None:
    # Prepare
    with torch_seed(0):
        model = MLP(in_features, hidden, out_features)

    # Execute
    pruned = prune_model(model, ratio).model

    # Assert
    widths = [in_features] + [kept_count(h, ratio) for h in hidden] + [out_features]
    linears: list[nn.Linear] = []
    for link in weighted_links(pruned):
        assert isinstance(link.module, nn.Linear)
        linears.append(link.module)
    assert [(m.in_features, m.out_features) for m in linears] == list(itertools.pairwise(widths))
    assert pruned(torch.zeros(2, in_features)).shape == (2, out_features)


@settings(max_examples=25, deadline=None)
@given(
    channels=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    hidden=st.lists(st.integers(1, 12), max_size=1),
    size=st.tuples(st.integers(4, 11), st.integers(4, 11)),
    ratio=st.floats(0.0, 0.99),
)
def test_cnn_channels_after_pruning_are_the_kept_counts(
    channels: tuple[int, int], hidden: list[int], size: tuple[int, int], ratio: float
) -> None:
    # Prepare
    with torch_seed(0):
        model = SmallCNN(2, *size, 3, channels=channels, hidden=hidden)

    # Execute
    pruned = prune_model(model, ratio).model

    # Assert
    expected = [kept_count(c, ratio) for c in (*channels, *hidden)]
    assert list(unit_widths(pruned).values()) == expected
    assert pruned(torch.zeros(2, 2, *size)).shape == (2, 3)


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)), "BatchNorm1d"),
        (nn.Sequential(nn.Conv2d(4, 4, 1, groups=2), nn.Flatten(), nn.Linear(4, 2)), "groups=2"),
        (nn.Sequential(nn.Linear(4, 4), nn.Softmax(dim=1), nn.Linear(4, 2)), "Softmax"),
        (nn.Sequential(nn.Conv2d(1, 4, 1), nn.Linear(3, 2)), "needs a Flatten"),
    ],
)
def test_unsupported_models_raise_config_error(model: nn.Module, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        prune_model(model, 0.5)


def test_a_custom_container_is_refused_because_its_forward_order_is_unknown() -> None:
    # Prepare
    class TwoBranches(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(3, 4), nn.Linear(3, 4)

    # Execute / Assert
    with pytest.raises(ConfigError, match="TwoBranches"):
        prune_model(TwoBranches(), 0.5)


@pytest.mark.parametrize("ratio", [-0.1, 1.0, 1.5, float("nan"), True])
def test_ratios_outside_zero_one_are_refused(ratio: float) -> None:
    with pytest.raises(ConfigError, match="pruning ratio"):
        prune_model(build("mlp"), ratio)


def test_the_embedding_layer_cannot_be_named_for_pruning() -> None:
    with pytest.raises(ConfigError, match="never pruned"):
        prune_units(build("mlp"), {"layers.5": torch.tensor([0])})


@pytest.mark.parametrize("units", [[], [3, 1], [2, 2], [16], [-1, 0]])
def test_bad_unit_indices_are_refused(units: list[int]) -> None:
    with pytest.raises(ConfigError, match=r"layers\.1"):
        prune_units(build("mlp"), {"layers.1": torch.tensor(units, dtype=torch.int64)})


def test_ratio_zero_and_a_linear_model_change_nothing() -> None:
    # Prepare
    linear = MLP(5, [], 2)

    # Execute
    untouched = select_units(build("mlp"), 0.0)
    linear_units = prune_model(linear, 0.9)

    # Assert
    assert untouched == {}
    assert linear_units.units == {} and linear_units.slices == {}
