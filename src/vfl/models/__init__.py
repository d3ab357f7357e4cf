"""Party (bottom) models, server heads, and builders from config."""

from vfl.models.bottom import MLP, SmallCNN
from vfl.models.build import build_bottom, build_head
from vfl.models.head import CombinedModel, ConcatHead, SumHead

__all__ = [
    "MLP",
    "CombinedModel",
    "ConcatHead",
    "SmallCNN",
    "SumHead",
    "build_bottom",
    "build_head",
]
