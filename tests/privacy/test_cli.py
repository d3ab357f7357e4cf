"""``vfl privacy``: registered on a parser built here, run end to end."""

from __future__ import annotations

import argparse
import re

import pytest

from vfl.errors import ConfigError
from vfl.privacy import PbmEvent, RdpAccountant, SelfComposedEvent
from vfl.privacy.cli import register


def parse(line: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vfl")
    register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["privacy", *line.split()])


def number_after(label: str, text: str) -> float:
    found = re.search(rf"{label}\s*=\s*([0-9.e+-]+)", text)
    assert found is not None, text
    return float(found.group(1))


def test_privacy_prints_the_accountants_epsilon_and_the_cross_checks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prepare
    args = parse("--b 16 --beta 0.05 --parties 4 --dim 8 --epochs 10 --delta 1e-5")
    release = SelfComposedEvent(PbmEvent(trials=16, beta=0.05, parties=4, dimension=8), 10)
    alone = SelfComposedEvent(PbmEvent(trials=16, beta=0.05, parties=1, dimension=8), 10)
    improved = RdpAccountant(conversion="improved")
    expected, order = improved.compose(release).get_epsilon_and_order(1e-5)
    coalition = RdpAccountant(conversion="improved").compose(alone).get_epsilon(1e-5)

    # Execute
    status = args.handler(args)

    # Assert
    out = capsys.readouterr().out
    assert status == 0
    assert number_after("epsilon", out) == pytest.approx(expected, rel=1e-5)
    assert number_after("optimal order alpha", out) == pytest.approx(order, rel=1e-5)
    assert "covers: each party's features against the server alone" in out
    assert number_after("coalition epsilon", out) == pytest.approx(coalition, rel=1e-5)
    assert coalition > expected
    assert "(+1, +1, +1)" in out
    assert "Gaussian approx." in out
    assert "RELATIVE ONLY, not a guarantee" in out


def test_the_mironov_conversion_is_still_offered_and_looser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prepare
    line = "--b 4 --beta 0.05 --parties 7 --dim 8 --epochs 1"
    improved, mironov = parse(line), parse(f"{line} --conversion mironov")

    # Execute
    improved.handler(improved)
    tight = number_after("epsilon", capsys.readouterr().out)
    mironov.handler(mironov)
    loose = number_after("epsilon", capsys.readouterr().out)

    # Assert
    assert tight < loose


def test_the_labels_epsilon_is_dp_accounting_s_for_every_pooled_release(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prepare: Adult's three passive parties, z = 1, 3 epochs: 9 releases pooled, 3 for one party
    from dp_accounting import GaussianDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    from vfl.privacy.pld import discretization

    expected = {}
    for releases in (3, 9):
        interval = discretization(((1.0, 2.0, releases),))
        accountant = PLDAccountant(value_discretization_interval=interval)
        accountant.compose(GaussianDpEvent(0.5), releases)
        expected[releases] = float(accountant.get_epsilon(1e-5))
    args = parse("--noise-multiplier 1 --epochs 3 --parties 3")

    # Execute
    status = args.handler(args)

    # Assert
    out = capsys.readouterr().out
    assert status == 0
    assert number_after("label epsilon", out) == pytest.approx(expected[9], rel=1e-5)
    assert number_after("one-party label epsilon", out) == pytest.approx(expected[3], rel=1e-5)
    assert "covers: the labels against any passive party and any coalition" in out
    assert number_after("RDP cross-check", out) >= expected[9]
    assert expected[9] > 2 * expected[3]


def test_the_labels_epsilon_takes_no_pbm_arguments() -> None:
    with pytest.raises(ConfigError, match="--b, --dim are PBM's"):
        args = parse("--noise-multiplier 1 --epochs 3 --b 4 --dim 2")
        args.handler(args)
    with pytest.raises(ConfigError, match="needs --b, --beta, --parties, --dim"):
        args = parse("--epochs 3")
        args.handler(args)


def test_paper_style_uses_are_labelled_an_expectation(capsys: pytest.CaptureFixture[str]) -> None:
    # Prepare
    args = parse(
        "--b 4 --beta 0.1 --parties 3 --dim 2 --rounds 50 --batch-size 10 --num-samples 100"
    )

    # Execute
    args.handler(args)

    # Assert
    out = capsys.readouterr().out
    assert "5 uses per sample (paper's T*B/N, an expectation)" in out


def test_certify_adds_the_certified_bound(capsys: pytest.CaptureFixture[str]) -> None:
    # Prepare
    args = parse("--b 8 --beta 0.25 --parties 3 --dim 1 --epochs 1 --certify")

    # Execute
    args.handler(args)

    # Assert
    assert "certified upper bound (relaxation): alpha=2: " in capsys.readouterr().out


def test_inconsistent_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="--rounds needs --batch-size and --num-samples"):
        args = parse("--b 4 --beta 0.1 --parties 3 --dim 2 --rounds 50")
        args.handler(args)
    with pytest.raises(ConfigError, match="go with --rounds"):
        args = parse("--b 4 --beta 0.1 --parties 3 --dim 2 --epochs 5 --batch-size 3")
        args.handler(args)
    with pytest.raises(ConfigError, match=r"beta must lie in \(0, 1/4\], got 0\.5"):
        args = parse("--b 4 --beta 0.5 --parties 3 --dim 2 --epochs 5")
        args.handler(args)


def test_epochs_and_rounds_cannot_both_be_given() -> None:
    with pytest.raises(SystemExit):
        parse("--b 4 --beta 0.1 --parties 3 --dim 2 --epochs 5 --rounds 3")
