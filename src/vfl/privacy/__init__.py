"""Differential privacy for VFL embeddings: the Poisson Binomial Mechanism and its accountant.

The mechanism (``PoissonBinomialMechanism``) turns bounded embeddings into integer counts and
describes each release as an event (``PbmEvent``); an ``RdpAccountant`` composes events and answers
epsilon for a delta. The math is in pure functions (``analysis``, ``worstcase``, ``divergence``).
What is and is not protected: ``docs/privacy.md``.

The mechanism loads lazily, so ``import vfl.privacy`` (and the CLI) does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vfl.privacy.accountant import Accountant, RdpAccountant, UnsupportedEventError
from vfl.privacy.analysis import (
    DEFAULT_ORDERS,
    compose_rdp,
    expected_uses,
    gaussian_mechanism_rdp,
    gaussian_rdp,
    paper_relative_epsilon,
    paper_relative_rdp,
    pbm_rdp,
    rdp_to_epsilon,
)
from vfl.privacy.calibrate import calibrate
from vfl.privacy.divergence import pbm_coordinate_rdp, renyi_divergence
from vfl.privacy.events import (
    ComposedEvent,
    GaussianEvent,
    NonPrivateEvent,
    NoOpEvent,
    PbmEvent,
    PrivacyEvent,
    SelfComposedEvent,
)
from vfl.privacy.report import PrivacyReport, format_report, privacy_report
from vfl.privacy.worstcase import RelaxationBound, WorstCase, relaxation_bound, search_worst_case

if TYPE_CHECKING:
    from vfl.privacy.pbm import PoissonBinomialMechanism

__all__ = [
    "DEFAULT_ORDERS",
    "Accountant",
    "ComposedEvent",
    "GaussianEvent",
    "NoOpEvent",
    "NonPrivateEvent",
    "PbmEvent",
    "PoissonBinomialMechanism",
    "PrivacyEvent",
    "PrivacyReport",
    "RdpAccountant",
    "RelaxationBound",
    "SelfComposedEvent",
    "UnsupportedEventError",
    "WorstCase",
    "calibrate",
    "compose_rdp",
    "expected_uses",
    "format_report",
    "gaussian_mechanism_rdp",
    "gaussian_rdp",
    "paper_relative_epsilon",
    "paper_relative_rdp",
    "pbm_coordinate_rdp",
    "pbm_rdp",
    "privacy_report",
    "rdp_to_epsilon",
    "relaxation_bound",
    "renyi_divergence",
    "search_worst_case",
]


def __getattr__(name: str) -> Any:
    if name == "PoissonBinomialMechanism":
        from vfl.privacy.pbm import PoissonBinomialMechanism

        return PoissonBinomialMechanism
    raise AttributeError(f"module 'vfl.privacy' has no attribute {name!r}")
