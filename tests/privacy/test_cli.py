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
    expected, order = RdpAccountant().compose(release).get_epsilon_and_order(1e-5)

    # Execute
    status = args.handler(args)

    # Assert
    out = capsys.readouterr().out
    assert status == 0
    assert number_after("epsilon", out) == pytest.approx(expected, rel=1e-5)
    assert number_after("optimal order alpha", out) == pytest.approx(order, rel=1e-5)
    assert "(+1, +1, +1)" in out
    assert "Gaussian approx." in out
    assert "RELATIVE ONLY, not a guarantee" in out


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
