"""The RDP accountant: a thin, stateful sum of RDP curves over composed events.

The math lives in ``analysis``; this object only dispatches on event types, caches the
per-coordinate PBM curve per ``(b, β, M)`` so that composing once per round stays cheap, and keeps
the running total at a fixed grid of orders.

Example:
    >>> from vfl.privacy.events import PbmEvent, SelfComposedEvent
    >>> accountant = RdpAccountant()
    >>> release = PbmEvent(trials=16, beta=0.05, parties=4, dimension=1)
    >>> round(accountant.compose(SelfComposedEvent(release, 600)).get_epsilon(1e-5))
    96
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, Self

import numpy as np

from vfl.errors import ConfigError, VflError
from vfl.privacy.analysis import (
    DEFAULT_ORDERS,
    Conversion,
    gaussian_mechanism_rdp,
    pbm_rdp,
    rdp_to_epsilon,
)
from vfl.privacy.divergence import FloatArray, check_orders
from vfl.privacy.events import (
    ComposedEvent,
    GaussianEvent,
    NonPrivateEvent,
    NoOpEvent,
    PbmEvent,
    PrivacyEvent,
    SelfComposedEvent,
)

CONVERSIONS: tuple[Conversion, ...] = ("mironov", "improved")


class UnsupportedEventError(VflError, ValueError):
    """An accountant was given an event (possibly nested) that it cannot compose."""


class Accountant(Protocol):
    """What every accountant offers (the contract suite checks these)."""

    def compose(self, event: PrivacyEvent, count: int = 1) -> Self:
        """Add ``count`` occurrences of ``event``; returns ``self``."""
        ...

    def supports(self, event: PrivacyEvent) -> bool:
        """Whether ``compose(event)`` would succeed."""
        ...

    def get_epsilon(self, delta: float) -> float:
        """The epsilon of everything composed so far, for this ``delta``."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """The state, in plain Python types."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a state produced by ``state_dict``."""
        ...


class RdpAccountant:
    """Rényi-DP accountant for PBM and Gaussian releases (Mironov 2017; docs/privacy.md).

    Args:
        orders: The Rényi orders ``α > 1`` at which RDP is tracked.
        conversion: RDP to ``(ε, δ)``: ``"mironov"`` or the tighter ``"improved"``
            (see ``analysis.rdp_to_epsilon``).
    """

    def __init__(
        self, *, orders: Sequence[float] = DEFAULT_ORDERS, conversion: Conversion = "mironov"
    ) -> None:
        if conversion not in CONVERSIONS:
            raise ConfigError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
        self.orders: tuple[float, ...] = tuple(check_orders(orders).tolist())
        self.conversion: Conversion = conversion
        self._rdp = np.zeros(len(self.orders))
        self._curves: dict[tuple[int, float, int, bool], FloatArray] = {}

    @property
    def rdp(self) -> FloatArray:
        """A copy of the accumulated RDP at each of ``orders``, in nats."""
        return self._rdp.copy()

    def supports(self, event: PrivacyEvent) -> bool:
        """Whether every event nested in ``event`` is one this accountant can compose."""
        return _first_unsupported(event) is None

    def compose(self, event: PrivacyEvent, count: int = 1) -> Self:
        """Add ``count`` occurrences of ``event`` to the total; returns ``self`` to chain calls.

        Raises:
            UnsupportedEventError: if ``event`` or an event nested in it is not supported.
            ConfigError: if ``count`` is not an integer >= 0.
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"count must be an integer >= 0, got {count!r}")
        unsupported = _first_unsupported(event)
        if unsupported is not None:
            raise UnsupportedEventError(
                f"RdpAccountant cannot compose {unsupported!r}; supported events: PbmEvent,"
                " GaussianEvent, SelfComposedEvent, ComposedEvent, NoOpEvent, NonPrivateEvent"
            )
        if count > 0:
            self._rdp = self._rdp + count * self._rdp_of(event)
        return self

    def get_epsilon(self, delta: float) -> float:
        """The smallest ``ε`` over the orders such that everything composed is ``(ε, δ)``-DP."""
        return self.get_epsilon_and_order(delta)[0]

    def get_epsilon_and_order(self, delta: float) -> tuple[float, float]:
        """``(ε, α*)``: epsilon for ``delta`` and the Rényi order that attains it."""
        return rdp_to_epsilon(
            orders=self.orders, rdp=self._rdp, delta=delta, conversion=self.conversion
        )

    def state_dict(self) -> dict[str, Any]:
        """Plain-typed state for checkpoints: orders, accumulated RDP, conversion."""
        return {
            "orders": list(self.orders),
            "rdp": [float(v) for v in self._rdp],
            "conversion": self.conversion,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore ``state_dict()`` output (orders and conversion come with it).

        Raises:
            ConfigError: if keys are missing or the RDP list does not match the orders.
        """
        missing = {"orders", "rdp", "conversion"} - set(state)
        if missing:
            raise ConfigError(f"accountant state lacks {sorted(missing)}; got keys {sorted(state)}")
        orders = tuple(check_orders(state["orders"]).tolist())
        rdp = np.asarray(state["rdp"], dtype=np.float64)
        if rdp.shape != (len(orders),) or np.any(np.isnan(rdp)) or np.any(rdp < 0):
            raise ConfigError(
                f"accountant state 'rdp' must be {len(orders)} values >= 0, got {state['rdp']!r}"
            )
        if state["conversion"] not in CONVERSIONS:
            raise ConfigError(
                f"accountant state 'conversion' must be one of {CONVERSIONS},"
                f" got {state['conversion']!r}"
            )
        self.orders, self._rdp, self.conversion = orders, rdp, state["conversion"]
        self._curves.clear()

    def _rdp_of(self, event: PrivacyEvent) -> FloatArray:
        if isinstance(event, NoOpEvent):
            return np.zeros(len(self.orders))
        if isinstance(event, NonPrivateEvent):
            return np.full(len(self.orders), math.inf)
        if isinstance(event, PbmEvent):
            return event.dimension * self._curve(event)
        if isinstance(event, GaussianEvent):
            return gaussian_mechanism_rdp(
                noise_multiplier=event.noise_multiplier,
                sensitivity=event.sensitivity,
                orders=self.orders,
            )
        if isinstance(event, SelfComposedEvent):
            if event.count == 0:
                return np.zeros(len(self.orders))
            return event.count * self._rdp_of(event.event)
        assert isinstance(event, ComposedEvent)
        total = np.zeros(len(self.orders))
        for inner in event.events:
            total = total + self._rdp_of(inner)
        return total

    def _curve(self, event: PbmEvent) -> FloatArray:
        key = (event.trials, float(event.beta), event.parties, event.worst_case)
        if key not in self._curves:
            self._curves[key] = pbm_rdp(
                trials=event.trials,
                beta=event.beta,
                parties=event.parties,
                orders=self.orders,
                worst_case=event.worst_case,
            )
        return self._curves[key]


def _first_unsupported(event: object) -> object | None:
    """The first event (depth first) that the accountant cannot compose, or ``None``."""
    if isinstance(event, SelfComposedEvent):
        return _first_unsupported(event.event)
    if isinstance(event, ComposedEvent):
        for inner in event.events:
            found = _first_unsupported(inner)
            if found is not None:
                return found
        return None
    if type(event) in (PbmEvent, GaussianEvent, NoOpEvent, NonPrivateEvent):
        return None
    return event
