"""Differential privacy for VFL embeddings: the Poisson Binomial Mechanism and its accountant.

The mechanism (``PoissonBinomialMechanism``) turns bounded embeddings into integer counts and
describes each release as an event (``PbmEvent``); an ``RdpAccountant`` composes events and answers
epsilon for a delta. The math is in pure functions (``analysis``, ``worstcase``, ``divergence``).
What is and is not protected: ``docs/privacy.md``.

Every name loads on first use, so ``import vfl.privacy`` (and the CLI) imports neither numpy nor
torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from vfl.privacy.calibration import calibrate
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
    from vfl.privacy.pbm import PoissonBinomialMechanism
    from vfl.privacy.report import PrivacyReport, format_report, privacy_report
    from vfl.privacy.worstcase import (
        RelaxationBound,
        WorstCase,
        relaxation_bound,
        search_worst_case,
    )

_LAZY = {
    "Accountant": "vfl.privacy.accountant",
    "RdpAccountant": "vfl.privacy.accountant",
    "UnsupportedEventError": "vfl.privacy.accountant",
    "DEFAULT_ORDERS": "vfl.privacy.analysis",
    "compose_rdp": "vfl.privacy.analysis",
    "expected_uses": "vfl.privacy.analysis",
    "gaussian_mechanism_rdp": "vfl.privacy.analysis",
    "gaussian_rdp": "vfl.privacy.analysis",
    "paper_relative_epsilon": "vfl.privacy.analysis",
    "paper_relative_rdp": "vfl.privacy.analysis",
    "pbm_rdp": "vfl.privacy.analysis",
    "rdp_to_epsilon": "vfl.privacy.analysis",
    "calibrate": "vfl.privacy.calibration",
    "pbm_coordinate_rdp": "vfl.privacy.divergence",
    "renyi_divergence": "vfl.privacy.divergence",
    "ComposedEvent": "vfl.privacy.events",
    "GaussianEvent": "vfl.privacy.events",
    "NonPrivateEvent": "vfl.privacy.events",
    "NoOpEvent": "vfl.privacy.events",
    "PbmEvent": "vfl.privacy.events",
    "PrivacyEvent": "vfl.privacy.events",
    "SelfComposedEvent": "vfl.privacy.events",
    "PrivacyReport": "vfl.privacy.report",
    "format_report": "vfl.privacy.report",
    "privacy_report": "vfl.privacy.report",
    "RelaxationBound": "vfl.privacy.worstcase",
    "WorstCase": "vfl.privacy.worstcase",
    "relaxation_bound": "vfl.privacy.worstcase",
    "search_worst_case": "vfl.privacy.worstcase",
    "PoissonBinomialMechanism": "vfl.privacy.pbm",
}
"""Where each public name lives: loaded on first use, so that ``import vfl.privacy.cli`` (the
command line registers ``vfl privacy``) loads neither numpy nor torch."""

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
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vfl.privacy' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
