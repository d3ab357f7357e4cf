from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tests.prune.models import MODELS, build, inputs
from vfl.errors import ConfigError
from vfl.models import MLP
from vfl.models.bottom import SmallCNN
from vfl.prune import (
    conv2d_output_size,
    count_params,
    flops_per_sample,
    model_cost,
    pool2d_output_size,
    prune_model,
)
from vfl.seeding import torch_seed


def test_small_cnn_flops_match_the_hand_count() -> None:
    # Prepare: conv1 1->16 on 14x14, pool, conv2 16->32 on 7x7, pool, linear 288->64
    conv1 = 2 * 1 * 9 * 16 * 14 * 14 + 16 * 14 * 14
    conv2 = 2 * 16 * 9 * 32 * 7 * 7 + 32 * 7 * 7
    linear = 2 * 288 * 64 + 64

    # Execute
    cost = model_cost(SmallCNN(1, 14, 14, 64, channels=(16, 32)), (1, 14, 14))

    # Assert
    assert [layer.flops for layer in cost.layers if layer.flops] == [conv1, conv2, linear]
    assert cost.flops == 549_664
    assert cost.params == (16 * 9 + 16) + (32 * 16 * 9 + 32) + (288 * 64 + 64)


def test_small_cnn_at_half_width_matches_the_hand_count() -> None:
    # Prepare: 8 and 16 channels, linear 144 -> 64
    expected = (2 * 9 * 8 * 196 + 8 * 196) + (2 * 8 * 9 * 16 * 49 + 16 * 49) + (2 * 144 * 64 + 64)
    with torch_seed(0):
        model = SmallCNN(1, 14, 14, 64, channels=(16, 32))

    # Execute
    flops = flops_per_sample(prune_model(model, 0.5).model, (1, 14, 14))

    # Assert
    assert flops == expected == 161_968


def test_mnist_mlp_flops_and_params_match_the_hand_count() -> None:
    # Prepare
    model = MLP(196, [256], 64)

    # Execute
    cost = model_cost(model, (1, 14, 14))

    # Assert
    assert cost.flops == (2 * 196 * 256 + 256) + (2 * 256 * 64 + 64) == 133_440
    assert cost.params == count_params(model) == 196 * 256 + 256 + 256 * 64 + 64


def test_elementwise_costs_are_counted_only_when_asked() -> None:
    # Prepare: 2x2 max pooling (3 comparisons per output), ReLU (1 per value), no bias
    model = nn.Sequential(
        nn.Conv2d(1, 2, 1, bias=False), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 1)
    )
    conv, linear = 2 * 2 * 4 * 4, 2 * 8 + 1

    # Execute
    plain = flops_per_sample(model, (1, 4, 4))
    full = flops_per_sample(model, (1, 4, 4), elementwise=True)

    # Assert
    assert plain == conv + linear
    assert full == conv + linear + 2 * 4 * 4 + 2 * 2 * 2 * 3


def test_a_linear_on_extra_dimensions_counts_every_position() -> None:
    assert flops_per_sample(nn.Linear(3, 2), (5, 3)) == 5 * (2 * 3 * 2 + 2)


def test_strided_padded_dilated_conv_is_counted_at_its_output_size() -> None:
    # Prepare: 10x10 -> floor((10 + 2 - 2*2 - 1)/2) + 1 = 4 per side
    layer = nn.Conv2d(3, 5, kernel_size=3, stride=2, padding=1, dilation=2)

    # Execute
    cost = model_cost(layer, (3, 10, 10))

    # Assert
    assert cost.layers[0].output_shape == (5, 4, 4)
    assert cost.flops == 2 * 3 * 9 * 5 * 16 + 5 * 16


@pytest.mark.parametrize("name", sorted(MODELS))
def test_output_shapes_match_a_real_forward_pass(name: str) -> None:
    # Prepare
    model = build(name)

    # Execute
    cost = model_cost(model, MODELS[name][1])

    # Assert
    assert cost.layers[-1].output_shape == tuple(model(inputs(name, batch=1)).shape[1:])


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 20),
    kernel=st.integers(1, 5),
    stride=st.integers(1, 4),
    padding=st.integers(0, 2),
    dilation=st.integers(1, 3),
)
def test_conv_output_size_matches_torch(
    size: int, kernel: int, stride: int, padding: int, dilation: int
) -> None:
    # Prepare
    layer = nn.Conv2d(1, 1, kernel, stride=stride, padding=padding, dilation=dilation)
    if size + 2 * padding < dilation * (kernel - 1) + 1:
        with pytest.raises(ConfigError):
            conv2d_output_size(
                size, kernel=kernel, stride=stride, padding=padding, dilation=dilation
            )
        return

    # Execute
    out = conv2d_output_size(size, kernel=kernel, stride=stride, padding=padding, dilation=dilation)

    # Assert
    assert layer(torch.zeros(1, 1, size, size)).shape[-1] == out


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(2, 20),
    kernel=st.integers(2, 4),
    stride=st.integers(1, 4),
    padding=st.integers(0, 1),
    ceil_mode=st.booleans(),
    average=st.booleans(),
)
def test_pool_output_size_matches_torch(
    size: int, kernel: int, stride: int, padding: int, ceil_mode: bool, average: bool
) -> None:
    # Prepare
    kind = nn.AvgPool2d if average else nn.MaxPool2d
    layer = kind(kernel, stride=stride, padding=padding, ceil_mode=ceil_mode)
    if size + 2 * padding < kernel:
        return

    # Execute
    cost = model_cost(layer, (2, size, size))

    # Assert
    assert cost.layers[0].output_shape == tuple(layer(torch.zeros(1, 2, size, size)).shape[1:])
    formula = pool2d_output_size(
        size, kernel=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode
    )
    assert formula == cost.layers[0].output_shape[-1]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_flops_and_params_fall_as_the_ratio_grows(name: str) -> None:
    # Prepare
    model, shape = build(name), MODELS[name][1]

    # Execute
    flops = [flops_per_sample(prune_model(model, r).model, shape) for r in (0.0, 0.3, 0.6, 0.9)]
    params = [count_params(prune_model(model, r).model) for r in (0.0, 0.3, 0.6, 0.9)]

    # Assert
    assert flops == sorted(flops, reverse=True) and flops[0] > flops[-1]
    assert params == sorted(params, reverse=True) and params[0] > params[-1]


def test_conv_flops_fall_about_quadratically_with_the_kept_fraction() -> None:
    # Prepare: the second conv loses half its inputs AND half its filters (spec 2.3, reviewer note)
    with torch_seed(0):
        model = SmallCNN(1, 16, 16, 8, channels=(32, 64))

    # Execute
    before = model_cost(model, (1, 16, 16)).layers[3].flops
    after = model_cost(prune_model(model, 0.5).model, (1, 16, 16)).layers[3].flops

    # Assert: 2·(C_in·9)·C_out·HW scales by 1/4; the bias term by 1/2
    assert after == 2 * 16 * 9 * 32 * 64 + 32 * 64
    assert 0.25 <= after / before < 0.26


def test_trainable_only_leaves_frozen_parameters_out() -> None:
    # Prepare
    model = MLP(4, [3], 2)
    model.layers[1].requires_grad_(False)

    # Execute / Assert
    assert count_params(model) == 4 * 3 + 3 + 3 * 2 + 2
    assert count_params(model, trainable_only=True) == 3 * 2 + 2


@pytest.mark.parametrize(
    ("model", "shape", "message"),
    [
        (MLP(10, [4], 2), (12,), "takes 10 features"),
        (nn.Conv2d(3, 4, 3), (1, 8, 8), r"takes \(3, H, W\)"),
        (nn.Conv2d(1, 4, 5), (1, 3, 3), "smaller than the kernel"),
        (nn.Sequential(nn.Flatten(0), nn.Linear(4, 1)), (4,), "batch dimension"),
    ],
)
def test_shapes_that_do_not_fit_raise_config_error(
    model: nn.Module, shape: tuple[int, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        model_cost(model, shape)
