"""Choose a PBM parameter (``b`` or ``β``) for a target ``(ε, δ)`` by bisection.

The search sees the accountant only through its public interface: every candidate gets a fresh
accountant from ``make_accountant`` and one event from ``make_event`` (dp_accounting's
``calibrate_dp_mechanism`` pattern), so it never depends on how an accountant stores its state.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from vfl.errors import ConfigError
from vfl.privacy.accountant import Accountant
from vfl.privacy.events import PrivacyEvent


def calibrate(
    make_accountant: Callable[[], Accountant],
    make_event: Callable[[float], PrivacyEvent],
    *,
    target_epsilon: float,
    delta: float,
    bracket: tuple[float, float],
    discrete: bool = False,
    tol: float = 1e-4,
) -> float:
    """The largest parameter in ``bracket`` whose event keeps ``ε(δ) <= target_epsilon``.

    Assumes ``ε`` does not decrease as the parameter grows, which holds for ``b`` and ``β`` of PBM
    (more trials or a wider spread reveal more). With ``discrete`` the parameter is an integer
    (pass ``b``); otherwise bisection stops when the bracket is narrower than ``tol``.

    Example:
        >>> from vfl.privacy.accountant import RdpAccountant
        >>> from vfl.privacy.events import PbmEvent, SelfComposedEvent
        >>> def event(b: float) -> SelfComposedEvent:
        ...     return SelfComposedEvent(PbmEvent(int(b), 0.05, 4, 1), 10)
        >>> calibrate(RdpAccountant, event, target_epsilon=8.0, delta=1e-5,
        ...           bracket=(1, 64), discrete=True)
        20

    Raises:
        ConfigError: on a bad bracket, target or tolerance, or if even the lower end of the
            bracket exceeds the target.
    """
    low, high = bracket
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ConfigError(f"bracket must be finite with low < high, got {bracket}")
    if not target_epsilon > 0:
        raise ConfigError(f"target_epsilon must be > 0, got {target_epsilon}")
    if not tol > 0:
        raise ConfigError(f"tol must be > 0, got {tol}")
    if discrete:
        low, high = math.ceil(low), math.floor(high)

    def epsilon(parameter: float) -> float:
        return make_accountant().compose(make_event(parameter)).get_epsilon(delta)

    start = epsilon(low)
    if start > target_epsilon:
        raise ConfigError(
            f"even the lower end {low} of the bracket gives epsilon {start:.4g} >"
            f" target {target_epsilon}; lower the bracket or raise the target"
        )
    if epsilon(high) <= target_epsilon:
        return high
    while high - low > (1 if discrete else tol):
        middle = (low + high) // 2 if discrete else (low + high) / 2
        if epsilon(middle) <= target_epsilon:
            low = middle
        else:
            high = middle
    return low
