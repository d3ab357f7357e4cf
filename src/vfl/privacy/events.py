"""Privacy events: frozen records of what a mechanism released (the dp_accounting idea).

Mechanisms describe their releases as events; an accountant composes events and answers epsilon.
An event's meaning never changes once defined; a new kind of release gets a new event class.
Adjacency throughout: two data sets differ in one party's features of one sample.
"""

from __future__ import annotations

from dataclasses import dataclass

from vfl.errors import ConfigError


@dataclass(frozen=True)
class PrivacyEvent:
    """Base class of every event; the accountant refuses subclasses it does not know."""


@dataclass(frozen=True)
class NoOpEvent(PrivacyEvent):
    """Nothing about the data was released (RDP 0 at every order)."""


@dataclass(frozen=True)
class NonPrivateEvent(PrivacyEvent):
    """Something was released without any guarantee (RDP and epsilon infinite)."""


@dataclass(frozen=True)
class PbmEvent(PrivacyEvent):
    """One release of one sample's embedding by every party through PBM and a secure sum.

    Each of the ``dimension`` coordinates of each party's embedding (inputs in ``[-C, C]``) is
    encoded as ``Binomial(trials, 1/2 + beta x / C)``; the server learns only the per-coordinate
    sums over the ``parties`` parties. Adjacent data sets may change one party's whole embedding
    of the sample within ``[-C, C]^dimension``. VFL-PBM paper Algorithm 2;
    docs/privacy.md, "How the accountant computes ε".

    Attributes:
        trials: ``b``, the number of Bernoulli trials per coordinate (>= 1).
        beta: ``β`` in ``(0, 1/4]``.
        parties: ``M``, the number of parties whose counts are summed (>= 1).
        dimension: ``P``, the embedding width (>= 1).
        worst_case: Maximise over the other parties' inputs (a guarantee). ``False`` fixes them
            at 0: a typical case for comparison, not a guarantee.
    """

    trials: int
    beta: float
    parties: int
    dimension: int
    worst_case: bool = True

    def __post_init__(self) -> None:
        for name in ("trials", "parties", "dimension"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"PbmEvent.{name} must be an integer >= 1, got {value!r}")
        if not 0.0 < self.beta <= 0.25:
            raise ConfigError(f"PbmEvent.beta must lie in (0, 1/4], got {self.beta}")


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """One release of a vector with L2 sensitivity ``sensitivity · C`` plus ``N(0, (zC)² I)``.

    The Gaussian mechanism (Dwork and Roth 2014, Appendix A; in RDP: Mironov 2017,
    Proposition 7): ``ε(α) = α s² / (2 z²)``, with ``s`` the sensitivity and ``z`` the noise
    standard deviation, both in units of the clipping norm ``C`` (which cancels). vfl's label
    holder uses it for the per-sample gradients it sends (``GradientNoise``): one sample's label
    changes only that sample's clipped gradient row, by at most ``2C`` (replace-one adjacency).

    Attributes:
        noise_multiplier: ``z``, the noise standard deviation over ``C`` (> 0).
        sensitivity: ``s``, the L2 sensitivity over ``C`` (> 0).
    """

    noise_multiplier: float
    sensitivity: float = 2.0

    def __post_init__(self) -> None:
        for name in ("noise_multiplier", "sensitivity"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 < value < float("inf"):
                raise ConfigError(f"GaussianEvent.{name} must be a finite number > 0, got {value}")


@dataclass(frozen=True)
class SelfComposedEvent(PrivacyEvent):
    """``event`` happened ``count`` times (e.g. a sample's release once per shuffled epoch).

    Attributes:
        event: The repeated event.
        count: How many times, an integer >= 0.
    """

    event: PrivacyEvent
    count: int

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ConfigError(
                f"SelfComposedEvent.count must be an integer >= 0, got {self.count!r}"
            )


@dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """All of ``events`` happened, on the same data set.

    Attributes:
        events: The events, in any order (composition is commutative).
    """

    events: tuple[PrivacyEvent, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.events, tuple):
            raise ConfigError(
                f"ComposedEvent.events must be a tuple, got {type(self.events).__name__}"
            )
