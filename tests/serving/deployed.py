"""Helpers of the deployed prediction tests: a trained 3-party deployment and its bundles."""

from __future__ import annotations

import shutil
from functools import reduce
from pathlib import Path

import pandas as pd

from tests.deploy.scenario import Scenario, make_scenario, run_launch
from vfl.run.bundles import BUNDLE, SERVER, party_folder


def trained_deployment(root: Path, *, num_parties: int = 3, extra: str = "") -> Scenario:
    """Train a small deployment with ``vfl launch``; each role exports its bundle."""
    scenario = make_scenario(root, num_parties=num_parties, epochs=2, extra=extra)
    result = run_launch(scenario)
    assert result.returncode == 0, result.stderr[-4000:]
    for party, toml in scenario.party_tomls.items():  # the new rows each party predicts for
        text = toml.read_text().replace("[data]\n", f'[data]\npredict = "holder{party}-test.csv"\n')
        toml.write_text(text)
    return scenario


def gathered_bundles(scenario: Scenario, folder: Path) -> Path:
    """Every role's bundle copied into ``folder/bundle`` (one place, for ``vfl predict``)."""
    target = folder / BUNDLE
    shutil.copytree(scenario.run_dir / BUNDLE / SERVER, target / SERVER)
    for party in scenario.party_tomls:
        source = scenario.state_dir(party) / BUNDLE / party_folder(party)
        shutil.copytree(source, target / party_folder(party))
    return folder


def joined_test_table(scenario: Scenario) -> pd.DataFrame:
    """The test rows every holder has, all columns joined on the ID (server's order)."""
    frames = [pd.read_csv(scenario.root / f"holder{h}-test.csv") for h in range(4)]
    return reduce(lambda left, right: left.merge(right, on="id"), frames)
