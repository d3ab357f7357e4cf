"""A small simulated run on a registry data set, and the deployment that predicts with it.

``deployment_of`` writes, beside the run: each party's table of the test split's raw rows (its
own columns of Adult, or the pixels of its MNIST quadrant as ``px_<row>_<col>`` 0..255), the
label holder's ID file (IDs and labels), certificates and tokens, and a RUN.toml and one
PARTY.toml per party whose ``model`` is the run's bundle folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from vfl.cli import main
from vfl.data.adult import read_adult_file
from vfl.data.fetch import data_dir
from vfl.deploy.certs import create_test_pki
from vfl.run.bundles import BUNDLE
from vfl.run.data import prepare
from vfl.run.predict import Model

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "adult": ROOT / "examples/adult_3party.toml",
    "mnist": ROOT / "examples/mnist_quadrants.toml",
}
PBM = (
    "privacy.mechanism=pbm",
    "privacy.trials=16",
    "privacy.secure_aggregation=on",
    "model.head.fusion=sum",
    "model.bottom.output_activation=tanh",
)
"""PBM with secure aggregation: prediction sums the parties' embeddings securely, as evaluation."""

SMALL = ("train.epochs=1", "data.max_train_samples=600", "data.max_test_samples=60")


@dataclass
class Deployed:
    """The files of a deployment that predicts with a simulated run's bundles."""

    root: Path
    run_dir: Path
    run_toml: Path
    ids_csv: Path
    ca: Path
    client: tuple[Path, Path]
    party_tomls: dict[int, Path] = field(default_factory=dict)
    tables: dict[int, Path] = field(default_factory=dict)


def trained_run(name: str, root: Path, *overrides: str) -> Path:
    """Train the example ``name`` briefly in one process; its bundles go to RUN_DIR/bundle."""
    run_dir = root / "run"
    sets = [arg for item in (*SMALL, *overrides) for arg in ("--set", item)]
    assert main(["run", str(EXAMPLES[name]), "--run-dir", str(run_dir), *sets]) == 0
    return run_dir


def party_tables(run_dir: Path) -> tuple[pd.DataFrame, dict[int, pd.DataFrame]]:
    """The test split's label-holder table (id, label) and every party's raw table."""
    model = Model.load(run_dir)
    dataset, _, _ = prepare(model.config)
    ids = np.asarray(dataset.test.ids)
    labels = pd.DataFrame({"id": ids, "label": [model.classes[i] for i in dataset.test.labels]})
    tables = {}
    for party, bundle in model.parties.items():
        encoder = bundle.encoder
        if encoder is not None:
            raw = read_adult_file(data_dir() / "adult" / "adult.test")
            frame = raw.iloc[ids][list(encoder.raw_columns)].reset_index(drop=True)
        else:
            r0, r1, c0, c1 = (int(v) for v in bundle.preprocessing["region"])
            pixels = np.rint(dataset.test.features[:, 0, r0:r1, c0:c1] * 255).astype(np.int64)
            names = [f"px_{r}_{c}" for r in range(r0, r1) for c in range(c0, c1)]
            frame = pd.DataFrame(pixels.reshape(len(ids), -1), columns=names)
        tables[party] = frame.assign(id=ids)[["id", *frame.columns]]
    return labels, tables


def deployment_of(run_dir: Path, root: Path) -> Deployed:
    """Write the deployment that predicts with ``run_dir``'s bundles (see the module doc)."""
    root.mkdir(parents=True, exist_ok=True)
    labels, tables = party_tables(run_dir)
    pki = create_test_pki(root / "certs", parties=sorted(tables), clients=["tester"])
    ids_csv = root / "ids.csv"
    labels.to_csv(ids_csv, index=False)
    deployed = Deployed(
        root, run_dir, root / "run.toml", ids_csv, pki.ca_cert, pki.clients["tester"]
    )
    lines = [
        "[data]",
        'name = "table"',
        f'path = "{ids_csv}"',
        f'test_path = "{ids_csv}"',
        'label = "label"',
        'id_column = "id"',
        "[deployment]",
        'listen = "127.0.0.1:0"',
        "connect_timeout_s = 60",
        "request_timeout_s = 20",
        "keepalive_s = 5",
        "[deployment.tls]",
        f'cert = "{pki.server_cert}"',
        f'key = "{pki.server_key}"',
        f'ca = "{pki.ca_cert}"',
        "mutual = true",
    ]
    for party, frame in tables.items():
        table = root / f"party{party}.csv"
        frame.to_csv(table, index=False)
        files = pki.parties[party]
        toml = root / f"party{party}.toml"
        toml.write_text(
            "\n".join(
                [
                    f"party_id = {party}",
                    'server = "localhost:1"',
                    f'state_dir = "{root / f"state{party}"}"',
                    f'model = "{run_dir / BUNDLE}"',
                    "give_up_s = 30",
                    "keepalive_s = 5",
                    f'token_file = "{files.token}"',
                    "[data]",
                    f'train = "{table}"',
                    f'test = "{table}"',
                    f'predict = "{table}"',
                    f'serve = "{table}"',
                    'id_column = "id"',
                    "[tls]",
                    f'ca = "{pki.ca_cert}"',
                    f'cert = "{files.cert}"',
                    f'key = "{files.key}"',
                ]
            )
            + "\n"
        )
        deployed.party_tomls[party] = toml
        deployed.tables[party] = table
        lines += ["[[deployment.parties]]", f"id = {party}", f'config = "{toml}"']
        lines.append(f'token_sha256 = "{files.token_sha256}"')
    deployed.run_toml.write_text("\n".join(lines) + "\n")
    return deployed
