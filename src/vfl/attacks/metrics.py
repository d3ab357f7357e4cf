"""How attacks are scored: ROC AUC, accuracy, mean squared error and SSIM."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def roc_auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """Area under the ROC curve of ``scores`` for binary ``labels`` (ties count one half).

    It is the probability that a random positive scores above a random negative (Mann-Whitney
    U over ``n₊ n₋``), with average ranks for tied scores; NaN without both classes.
    """
    positive = labels.to(torch.bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return math.nan
    values = scores.to(torch.float64)
    order = torch.argsort(values)
    sorted_values = values[order]
    ranks = torch.empty_like(values)
    ranks[order] = torch.arange(1, len(values) + 1, dtype=torch.float64)
    unique, inverse = torch.unique_consecutive(sorted_values, return_inverse=True)
    mean_rank = torch.zeros(len(unique), dtype=torch.float64)
    mean_rank.index_add_(0, inverse, ranks[order])
    counts = torch.bincount(inverse, minlength=len(unique)).to(torch.float64)
    ranks[order] = (mean_rank / counts)[inverse]
    u = float(ranks[positive].sum()) - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


def accuracy(predicted: torch.Tensor, labels: torch.Tensor) -> float:
    """The share of ``predicted`` equal to ``labels`` (NaN for none)."""
    if len(labels) == 0:
        return math.nan
    return float((predicted.to(torch.int64) == labels.to(torch.int64)).double().mean())


def mse(estimate: torch.Tensor, truth: torch.Tensor) -> float:
    """Mean squared error over every sample and feature."""
    return float(((estimate.double() - truth.double()) ** 2).mean())


def _gaussian_window(size: int, sigma: float) -> torch.Tensor:
    coords = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
    profile = torch.exp(-(coords**2) / (2 * sigma**2))
    profile = profile / profile.sum()
    return torch.outer(profile, profile)[None, None]


def ssim(
    estimate: torch.Tensor, truth: torch.Tensor, *, data_range: float, window: int = 11
) -> float:
    """Mean structural similarity of image batches ``(N, C, H, W)`` (Wang et al. 2004).

    Wang, Bovik, Sheikh and Simoncelli, "Image Quality Assessment: From Error Visibility to
    Structural Similarity", IEEE TIP 13(4), 2004, Eq. (13): local means, variances and covariance
    under a Gaussian window (σ = 1.5, 11 × 11, shrunk to the image's smaller side when that is
    smaller, kept odd), ``C1 = (0.01 L)²``, ``C2 = (0.03 L)²`` with ``L`` the data range, over
    the positions where the window fits (no padding); the mean over positions, channels and
    images (Eq. 17's MSSIM, averaged over images).
    """
    if estimate.shape != truth.shape or estimate.ndim != 4:
        raise ValueError(
            f"ssim needs two (N, C, H, W) batches, got {estimate.shape}, {truth.shape}"
        )
    size = min(window, truth.shape[2], truth.shape[3])
    size -= 1 - size % 2
    kernel = _gaussian_window(size, 1.5)
    x = estimate.double().reshape(-1, 1, *truth.shape[2:])
    y = truth.double().reshape(-1, 1, *truth.shape[2:])

    def local(image: torch.Tensor) -> torch.Tensor:
        return F.conv2d(image, kernel)

    mu_x, mu_y = local(x), local(y)
    var_x = local(x * x) - mu_x**2
    var_y = local(y * y) - mu_y**2
    cov = local(x * y) - mu_x * mu_y
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    index = ((2 * mu_x * mu_y + c1) * (2 * cov + c2)) / (
        (mu_x**2 + mu_y**2 + c1) * (var_x + var_y + c2)
    )
    return float(index.mean())
