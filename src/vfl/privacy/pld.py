"""Tight epsilon of composed Gaussian mechanisms, from Google's dp-accounting library.

The label holder's gradient noise (``GaussianEvent``) is the Gaussian mechanism, which the field's
library accounts for exactly up to a discretization: dp-accounting's privacy loss distribution
(PLD) accountant (Meiser and Mohammadi 2018; Koskela et al. 2020; Doroshenko et al. 2022,
"Connect the Dots"). Its pessimistic discretization makes the epsilon an upper bound of the
exact one; the interval is chosen per composition (``discretization``) so that one evaluation
takes well under a second whatever the noise.
dp-accounting's RDP accountant (with the conversion of Canonne, Kamath and Steinke 2020,
Proposition 12) is the cross-check: never below the PLD epsilon, and a little looser.

A ``GaussianEvent(z, s)`` (noise ``z C``, L2 sensitivity ``s C``) is dp-accounting's
``GaussianDpEvent(z / s)`` (noise over sensitivity) under add-or-remove adjacency, whose unit
sensitivity is then ``s C``: the replace-one change of a label is already in ``s = 2``.
dp-accounting is imported on first use (about a second): ``import vfl.privacy`` stays light.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from importlib import metadata
from typing import Any, Self

from vfl.errors import ConfigError
from vfl.privacy.accountant import UnsupportedEventError
from vfl.privacy.events import (
    ComposedEvent,
    GaussianEvent,
    NonPrivateEvent,
    NoOpEvent,
    PrivacyEvent,
    SelfComposedEvent,
)

Releases = tuple[tuple[float, float, int], ...]
"""Gaussian releases composed: ``(noise_multiplier, sensitivity, count)`` each."""

FINEST_INTERVAL = 1e-3
"""The PLD's loss discretization for a composition of ``mu <= 4`` (see ``discretization``)."""
COARSEST = 100.0
"""The widest interval (``mu`` of about 1,300 and more: epsilon in the millions)."""


def library_version() -> str:
    """The installed dp-accounting version (stated beside every epsilon it computes)."""
    return metadata.version("dp-accounting")


def describe() -> str:
    """How a Gaussian epsilon is computed, for summaries."""
    return (
        f"PLD accountant of dp-accounting {library_version()} (tight up to a pessimistic"
        " discretization); its RDP accountant as the cross-check"
    )


def gaussian_mu(releases: Releases) -> float:
    """``mu = sqrt(sum count (s/z)^2)``: the composition is exactly one Gaussian of this ratio."""
    return math.sqrt(sum(count * (s / z) ** 2 for z, s, count in releases))


def discretization(releases: Releases) -> float:
    """The PLD's value discretization interval for ``releases``.

    The PLD's support (and its time) grows like ``mu² / interval``, and so does the epsilon
    (about ``mu²/2`` for large ``mu``): widening the interval with ``mu²`` keeps one evaluation
    under a second at any ``mu`` while the rounding of the losses moves the epsilon by at most
    about ``interval``, a relative ``2.5e-4`` at worst (measured: far less, see docs/privacy.md).
    """
    widened = FINEST_INTERVAL * gaussian_mu(releases) ** 2 / 16.0
    return min(max(FINEST_INTERVAL, widened), COARSEST)


def flatten(event: PrivacyEvent, count: int = 1) -> tuple[Releases, bool]:
    """The Gaussian releases in ``event`` (merged by setting) and whether any is non-private.

    Raises:
        UnsupportedEventError: for an event that is not Gaussian, composed or a no-op.
    """
    counts: dict[tuple[float, float], int] = {}
    non_private = _collect(event, count, counts)
    releases = tuple((z, s, n) for (z, s), n in sorted(counts.items()) if n > 0)
    return releases, non_private


def _collect(event: PrivacyEvent, count: int, counts: dict[tuple[float, float], int]) -> bool:
    if isinstance(event, NoOpEvent):
        return False
    if isinstance(event, NonPrivateEvent):
        return count > 0
    if isinstance(event, GaussianEvent):
        key = (float(event.noise_multiplier), float(event.sensitivity))
        counts[key] = counts.get(key, 0) + count
        return False
    if isinstance(event, SelfComposedEvent):
        return _collect(event.event, count * event.count, counts)
    if isinstance(event, ComposedEvent):
        found = [_collect(inner, count, counts) for inner in event.events]  # every one counted
        return True in found
    raise UnsupportedEventError(
        f"PldAccountant cannot compose {event!r}; supported events: GaussianEvent,"
        " SelfComposedEvent, ComposedEvent, NoOpEvent, NonPrivateEvent"
    )


@functools.lru_cache(maxsize=256)
def pld_epsilon(releases: Releases, delta: float) -> float:
    """Epsilon at ``delta`` of ``releases``: dp-accounting's PLD accountant."""
    _check_delta(delta)
    if not releases:
        return 0.0
    from dp_accounting import GaussianDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    accountant = PLDAccountant(value_discretization_interval=discretization(releases))
    for noise, sensitivity, count in releases:
        accountant.compose(GaussianDpEvent(noise / sensitivity), count)
    return max(0.0, float(accountant.get_epsilon(delta)))


@functools.lru_cache(maxsize=256)
def rdp_epsilon(releases: Releases, delta: float) -> float:
    """The cross-check: epsilon of ``releases`` from dp-accounting's RDP accountant."""
    _check_delta(delta)
    if not releases:
        return 0.0
    from dp_accounting import GaussianDpEvent
    from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant

    accountant = RdpAccountant()
    for noise, sensitivity, count in releases:
        accountant.compose(GaussianDpEvent(noise / sensitivity), count)
    return max(0.0, float(accountant.get_epsilon(delta)))


def _check_delta(delta: float) -> None:
    if not 0.0 < delta < 1.0:
        raise ConfigError(f"delta must lie in (0, 1), got {delta}")


class PldAccountant:
    """Accountant of Gaussian releases: dp-accounting's PLD epsilon, RDP as the cross-check.

    It meets ``vfl.privacy.Accountant`` for ``GaussianEvent`` and its compositions (and no-op
    and non-private events); its state is the list of releases, in plain types.
    """

    conversion = "pld"

    def __init__(self) -> None:
        self._counts: dict[tuple[float, float], int] = {}
        self._non_private = False

    @property
    def releases(self) -> Releases:
        """Everything composed so far, merged by setting."""
        return tuple((z, s, n) for (z, s), n in sorted(self._counts.items()) if n > 0)

    def supports(self, event: PrivacyEvent) -> bool:
        """Whether ``compose(event)`` would succeed."""
        try:
            flatten(event)
        except UnsupportedEventError:
            return False
        return True

    def compose(self, event: PrivacyEvent, count: int = 1) -> Self:
        """Add ``count`` occurrences of ``event``; returns ``self``.

        Raises:
            UnsupportedEventError: for an event that is not Gaussian (or composed of them).
            ConfigError: if ``count`` is not an integer >= 0.
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"count must be an integer >= 0, got {count!r}")
        releases, non_private = flatten(event, count)
        for noise, sensitivity, n in releases:
            key = (noise, sensitivity)
            self._counts[key] = self._counts.get(key, 0) + n
        self._non_private = self._non_private or non_private
        return self

    def get_epsilon(self, delta: float) -> float:
        """The PLD epsilon of everything composed so far (infinite after a non-private event)."""
        _check_delta(delta)
        return math.inf if self._non_private else pld_epsilon(self.releases, delta)

    def get_rdp_epsilon(self, delta: float) -> float:
        """The RDP cross-check of ``get_epsilon``."""
        _check_delta(delta)
        return math.inf if self._non_private else rdp_epsilon(self.releases, delta)

    def state_dict(self) -> dict[str, Any]:
        """The releases composed and the non-private flag."""
        releases = [[z, s, n] for z, s, n in self.releases]
        return {"releases": releases, "non_private": self._non_private}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore ``state_dict()`` output.

        Raises:
            ConfigError: if a key is missing or a release is not ``[z > 0, s > 0, count >= 0]``.
        """
        if set(state) != {"releases", "non_private"}:
            raise ConfigError(
                f"PLD accountant state needs keys ['non_private', 'releases'], got {sorted(state)}"
            )
        counts: dict[tuple[float, float], int] = {}
        for release in state["releases"]:
            event = _release_event(release)
            key = (float(event.noise_multiplier), float(event.sensitivity))
            counts[key] = counts.get(key, 0) + int(release[2])
        self._counts, self._non_private = counts, bool(state["non_private"])


def _release_event(release: Any) -> GaussianEvent:
    valid = (
        isinstance(release, list | tuple)
        and len(release) == 3
        and isinstance(release[2], int)
        and not isinstance(release[2], bool)
        and release[2] >= 0
    )
    if not valid:
        raise ConfigError(
            f"a PLD release must be [noise, sensitivity, count >= 0], got {release!r}"
        )
    return GaussianEvent(float(release[0]), sensitivity=float(release[1]))
