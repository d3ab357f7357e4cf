"""RdpAccountant specifics: agreement with the pure functions, caching, events' validation."""

from __future__ import annotations

import numpy as np
import pytest

import vfl.privacy.accountant as accountant_module
from vfl.errors import ConfigError
from vfl.privacy import (
    DEFAULT_ORDERS,
    ComposedEvent,
    PbmEvent,
    RdpAccountant,
    SelfComposedEvent,
    compose_rdp,
    pbm_rdp,
    rdp_to_epsilon,
)


def test_accountant_equals_the_pure_function_chain() -> None:
    # Prepare
    per_coordinate = pbm_rdp(trials=64, beta=0.15, parties=7, orders=DEFAULT_ORDERS)
    total = compose_rdp(per_coordinate=per_coordinate, dimension=32, uses=10)
    expected, order = rdp_to_epsilon(orders=DEFAULT_ORDERS, rdp=total, delta=1e-5)

    # Execute
    accountant = RdpAccountant().compose(
        SelfComposedEvent(PbmEvent(trials=64, beta=0.15, parties=7, dimension=32), 10)
    )

    # Assert
    assert accountant.get_epsilon_and_order(1e-5) == pytest.approx((expected, order), rel=1e-12)
    assert accountant.rdp == pytest.approx(total, rel=1e-12)


def test_mixed_settings_add_their_rdp() -> None:
    # Prepare
    first = PbmEvent(trials=16, beta=0.05, parties=4, dimension=8)
    second = PbmEvent(trials=64, beta=0.25, parties=4, dimension=8)

    # Execute
    both = RdpAccountant().compose(ComposedEvent((first, second))).rdp
    separate = RdpAccountant().compose(first).rdp + RdpAccountant().compose(second).rdp

    # Assert
    assert both == pytest.approx(separate, rel=1e-12)


def test_the_per_coordinate_curve_is_computed_once_per_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Prepare
    calls: list[tuple[int, float, int]] = []

    def counting(**kwargs: object) -> np.ndarray:
        calls.append((kwargs["trials"], kwargs["beta"], kwargs["parties"]))  # type: ignore[arg-type]
        return pbm_rdp(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(accountant_module, "pbm_rdp", counting)
    accountant = RdpAccountant()

    # Execute: one event per round, as a training loop would compose them
    for _ in range(50):
        accountant.compose(PbmEvent(trials=16, beta=0.05, parties=4, dimension=32))
    accountant.compose(PbmEvent(trials=16, beta=0.05, parties=4, dimension=8))
    accountant.compose(PbmEvent(trials=16, beta=0.15, parties=4, dimension=8))

    # Assert
    assert calls == [(16, 0.05, 4), (16, 0.15, 4)]


def test_typical_case_events_give_a_smaller_epsilon() -> None:
    # Prepare
    worst = PbmEvent(trials=16, beta=0.25, parties=4, dimension=4)
    typical = PbmEvent(trials=16, beta=0.25, parties=4, dimension=4, worst_case=False)

    # Execute
    eps_worst = RdpAccountant().compose(worst, count=10).get_epsilon(1e-5)
    eps_typical = RdpAccountant().compose(typical, count=10).get_epsilon(1e-5)

    # Assert
    assert eps_typical < eps_worst


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"trials": 0}, r"PbmEvent\.trials must be an integer >= 1, got 0"),
        ({"beta": 0.5}, r"PbmEvent\.beta must lie in \(0, 1/4\], got 0\.5"),
        ({"parties": True}, r"PbmEvent\.parties must be an integer >= 1, got True"),
        ({"dimension": 1.5}, r"PbmEvent\.dimension must be an integer >= 1, got 1\.5"),
    ],
)
def test_bad_events_are_config_errors(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"trials": 4, "beta": 0.1, "parties": 2, "dimension": 1}
    arguments.update(kwargs)
    with pytest.raises(ConfigError, match=message):
        PbmEvent(**arguments)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="count must be an integer >= 0, got -2"):
        SelfComposedEvent(PbmEvent(4, 0.1, 2, 1), -2)


def test_bad_accountant_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="conversion must be one of"):
        RdpAccountant(conversion="loose")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"must be > 1 \(inf allowed\), got 1\.0"):
        RdpAccountant(orders=[1.0, 2.0])
    with pytest.raises(ConfigError, match="'rdp' must be 2 values"):
        RdpAccountant().load_state_dict(
            {"orders": [2.0, 3.0], "rdp": [1.0], "conversion": "mironov"}
        )
