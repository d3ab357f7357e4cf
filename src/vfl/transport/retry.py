"""Timeouts and retries with exponential backoff and jitter, for the network transport.

The delay before retry ``n`` (1-based) is ``min(max_backoff_s, backoff_s * 2 ** (n - 1))``,
shrunk by a random fraction of at most ``jitter`` so that many waiting peers do not retry in
lock step (the "equal jitter" family of AWS's *Exponential Backoff and Jitter*, 2015).
``Dialing`` decides, attempt by attempt, whether a party dialing the server should go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Literal

from vfl.errors import ConfigError

if TYPE_CHECKING:  # only the type: the lean ``vfl score`` client loads no numpy
    import numpy as np


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait for a reply, and how often and how soon to ask again.

    Attributes:
        attempts: Times a request is sent before its party counts as failed (>= 1).
        timeout_s: Seconds to wait for a reply to each attempt.
        backoff_s: Delay before the first retry.
        max_backoff_s: Cap on any delay.
        jitter: Largest fraction by which a delay is randomly shortened, in [0, 1].
        reconnect_s: How long a party whose stream broke may take to reconnect before its
            open requests fail (without waiting out ``timeout_s``).
    """

    attempts: int = 3
    timeout_s: float = 60.0
    backoff_s: float = 0.5
    max_backoff_s: float = 10.0
    jitter: float = 0.5
    reconnect_s: float = 15.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigError(f"attempts must be >= 1, got {self.attempts}")
        if self.timeout_s <= 0:
            raise ConfigError(f"timeout_s must be > 0, got {self.timeout_s}")
        if not 0 <= self.backoff_s <= self.max_backoff_s:
            raise ConfigError(
                f"need 0 <= backoff_s <= max_backoff_s, got {self.backoff_s} and"
                f" {self.max_backoff_s}"
            )
        if not 0 <= self.jitter <= 1:
            raise ConfigError(f"jitter must lie in [0, 1], got {self.jitter}")
        if self.reconnect_s <= 0:
            raise ConfigError(f"reconnect_s must be > 0, got {self.reconnect_s}")

    def delay(self, retry: int, *, rng: np.random.Generator) -> float:
        """Seconds to wait before retry number ``retry`` (1-based).

        Example:
            >>> import numpy as np
            >>> policy = RetryPolicy(backoff_s=1.0, max_backoff_s=8.0, jitter=0.0)
            >>> [policy.delay(n, rng=np.random.default_rng(0)) for n in (1, 2, 3, 4, 5)]
            [1.0, 2.0, 4.0, 8.0, 8.0]
        """
        if retry < 1:
            raise ValueError(f"retry numbers start at 1, got {retry}")
        ceiling = min(self.max_backoff_s, self.backoff_s * 2.0 ** min(retry - 1, 60))
        return ceiling * (1.0 - self.jitter * float(rng.random()))

    @property
    def max_wait_s(self) -> float:
        """The longest a request can take before its party is reported failed."""
        waits = self.attempts * self.timeout_s
        ceilings = (
            min(self.max_backoff_s, self.backoff_s * 2.0 ** min(n - 1, 60))
            for n in range(1, self.attempts)
        )
        return waits + sum(ceilings)


class Attempt(Enum):
    """How a party's connection attempt failed."""

    LOST = "lost"  # an accepted stream broke
    UNREACHABLE = "unreachable"  # no connection (refused, timed out, ...)
    UNRESOLVED = "unresolved"  # the server's name did not resolve
    CLOSED = "closed"  # the server closed the connection during the TLS handshake
    DUPLICATE = "duplicate"  # the server says another process of the party is connected


Verdict = Literal["go on", "closed", "duplicate", "unresolved", "give up"]
"""What to do after a failed attempt: dial again, or stop and why."""


@dataclass
class Dialing:
    """A party's failed attempts since it last had (or first wanted) the server.

    Attributes:
        give_up_s: Seconds without the server after which to stop.
        duplicate_grace_s: Seconds to go on while the server says another process of the
            party is connected (it may be a dead one the server has not noticed yet).
        closures_limit: Connections closed during the TLS handshake, in a row, after which
            the server is taken to reject the party's certificate (a restarting server refuses
            connections instead of closing them).
        since: When the current run of attempts began (``time.monotonic``).
    """

    give_up_s: float
    duplicate_grace_s: float
    closures_limit: int = 3
    since: float = 0.0
    retry: int = 0
    closures: int = 0
    duplicate_since: float | None = None
    connected_once: bool = False
    reported: float = field(default=float("-inf"))

    def failed(self, attempt: Attempt, now: float) -> Verdict:
        """Count one failed attempt at time ``now``; what to do next."""
        if attempt is Attempt.LOST:
            self.since, self.retry, self.connected_once = now, 0, True
        self.retry += 1
        self.closures = self.closures + 1 if attempt is Attempt.CLOSED else 0
        if attempt is not Attempt.DUPLICATE:
            self.duplicate_since = None
        elif self.duplicate_since is None:
            self.duplicate_since = now
        if self.closures >= self.closures_limit:
            return "closed"
        if self.duplicate_since is not None and now - self.duplicate_since > self.duplicate_grace_s:
            return "duplicate"
        if attempt is Attempt.UNRESOLVED and not self.connected_once:
            return "unresolved"
        return "give up" if now - self.since > self.give_up_s else "go on"

    def left_s(self, now: float) -> float:
        """Seconds until the party stops dialing, unless the server answers first."""
        if self.duplicate_since is not None:
            return max(0.0, self.duplicate_grace_s - (now - self.duplicate_since))
        return max(0.0, self.give_up_s - (now - self.since))
