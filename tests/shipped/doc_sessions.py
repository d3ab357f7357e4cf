"""How each command of README.md and docs/ runs in a test (``doc_commands`` explains the model).

Training is shortened here, never in the docs, by the arguments a step adds:

- ``SHORT`` (``vfl run``, ``vfl attack``, ``vfl launch``): one epoch (``train.epochs=1``), and
  for the MNIST-sized data sets 512 training and 256 test rows;
- ``SHORT_SWEEP`` (``vfl sweep``): the same for every run of the sweep (``vfl sweep --set``).

Every other difference from the doc is a ``replace`` of a placeholder: a port of this machine
that is free (the docs use 50051, which tests running side by side would share), a scratch
folder for ``/tmp/...``, the run folder a previous step made for a name the doc made up.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.shipped.doc_commands import Session, Step

SMALL = "--set data.max_train_samples=512 --set data.max_test_samples=256"
SHORT = f"--set train.epochs=1 {SMALL}"
SHORT_SWEEP = SHORT
ADULT_SHORT = "--set train.epochs=1 --set data.max_train_samples=2000"
PORT = (("localhost:50051", "localhost:{port}"),)
HTTP_PORT = (("8443", "{http_port}"),)
R = "README.md"
ATTACKS, DEPLOY, EXPERIMENTS = "docs/attacks.md", "docs/deployment.md", "docs/experiments.md"
PREDICT, CVFL = "docs/predict.md", "docs/reproductions/cvfl.md"
BENCHMARKS = "docs/benchmarks.md"
SECUREBOOST = "docs/secureboost.md"
FEDBCD, LVFL, PBM = (f"docs/reproductions/{n}.md" for n in ("fedbcd", "lvfl", "pbm"))
ATTACK_DOC_BUDGET = (
    "vfl: error: privacy.max_epsilon: 4 epochs would spend label_epsilon 15.46 at delta 1e-05,"
    " over the budget of 10; at most 2 epochs fit (--set train.epochs=2)"
)
ATTACK_DOC_STOP = (
    "vfl: stopped at the privacy budget after 2 of 4 planned epochs (privacy.max_epsilon = 10 at"
    " privacy.delta = 1e-05); results in runs/budget"
)
ATTACK_DOC_NO_EPOCH = (
    "vfl: error: privacy.max_epsilon: the run has spent label_epsilon 9.997 at delta 1e-05 in 2"
    " epochs, and epoch 3 would spend label_epsilon 12.87, over the budget of 10: no further"
    " epoch fits (nothing was changed)"
)
NOT_RUN = {
    (R, "make test"): "it is the test suite that runs these tests",
    (ATTACKS, "sh experiments/attacks/run_all.sh"): (
        "it runs the three committed attack sweeps one after another (105 runs, hours on one"
        " core); its sweep files resolve in test_configs, and its last two commands"
        " (quadrants.py, report.py) run in the attack sessions"
    ),
    (BENCHMARKS, "make gpu-pack"): (
        "it downloads wheels for a GPU machine's Python (network, about 44 MB); the check it"
        " packs for runs in its CPU form in tests/device/test_gpu_check.py"
    ),
    (
        BENCHMARKS,
        "set -o pipefail; PYTHONUNBUFFERED=1 make gpu-check GPU_OUT=$OUT/gpu-check 2>&1 | tee"
        " $OUT/log",
    ): (
        "it runs on a GPU machine through the device tool ($OUT is that tool's folder); its CPU"
        " form runs in tests/device/test_gpu_check.py"
    ),
    (EXPERIMENTS, "ray get-auth-token --generate"): (
        "it writes the user's ~/.ray/auth_token; a Ray cluster needs several machines"
        " (tests/experiments/test_ray_sweep.py runs a sweep on a local Ray instance)"
    ),
    (SECUREBOOST, ".venv/bin/pip install --no-deps sf-heu==0.5.2b0"): (
        "it downloads SecretFlow's HEU from PyPI (network), which vfl does not depend on; the"
        " HEU measurement's steps run with phe alone (--backends phe)"
    ),
    (EXPERIMENTS, "RAY_AUTH_MODE=token ray start --head --port=6379"): "as above: a cluster",
    (EXPERIMENTS, "RAY_AUTH_MODE=token ray start --address=HEAD_IP:6379"): "as above: a cluster",
    (
        EXPERIMENTS,
        "RAY_AUTH_MODE=token vfl sweep experiments/examples/adult_lr_sweep.toml --executor ray"
        " --address HEAD_IP:6379",
    ): "as above: a cluster (HEAD_IP is a machine's address)",
}
"""Doc commands no test runs here, each with the reason."""


def _new_rows(root: Path, values: dict[str, str]) -> None:
    """``NEW.csv`` of docs/predict.md ("your table"): 200 raw Adult rows, every column."""
    from vfl.data.adult import read_adult_file
    from vfl.data.fetch import data_dir

    rows = read_adult_file(data_dir() / "adult" / "adult.test").head(200)
    pd.DataFrame(rows).to_csv(root / "NEW.csv", index=False)


def _free_port_in_deploy_example(root: Path, values: dict[str, str]) -> None:
    """The copied example deployment listens and dials on a free port instead of 50051."""
    for path in (root / "examples" / "deploy").glob("*.toml"):
        text = path.read_text().replace("50051", values["port"])
        path.write_text(text)


def _free_port_in_boost_example(root: Path, values: dict[str, str]) -> None:
    """The copied SecureBoost deployment listens and dials on a free port instead of 50051."""
    for path in (root / "examples" / "deploy" / "secureboost").glob("*.toml"):
        path.write_text(path.read_text().replace("50051", values["port"]))


def _after_a_quick_start(root: Path, values: dict[str, str]) -> None:
    """``examples/deploy`` as docs/deployment.md's quick start leaves it (what a copy must skip)."""
    _free_port_in_deploy_example(root, values)
    for made in (
        "data/labels_train.csv",
        "certs/ca.pem",
        "state/party1/x",
        "runs/deploy-example/x",
    ):
        path = root / "examples" / "deploy" / made
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("left by a quick start\n")


def _short_sweep_copy(root: Path, values: dict[str, str]) -> None:
    """``adult_lr_sweep_short.toml`` beside the shipped sweep: 1 epoch on 2,000 rows per run."""
    folder = root / "experiments" / "examples"
    text = (folder / "adult_lr_sweep.toml").read_text()
    shortened = '"train.epochs" = 1\n"data.max_train_samples" = 2000'
    assert '"train.epochs" = 3' in text
    (folder / "adult_lr_sweep_short.toml").write_text(text.replace('"train.epochs" = 3', shortened))


README_PYTHON_CHECKS = """
assert [record["epoch"] for record in records] == [0, 1, 2, 3]
assert sim.trainer.ledger.total(phase="train") > 0
probabilities = model.predict_proba(list(data.test_blocks))
assert probabilities.shape == (len(data.test_blocks[0]), 2)
assert abs(probabilities.sum(axis=1) - 1).max() < 1e-6
assert list(model.classes) == list(dataset.classes)
"""
COMPRESSION_CHECKS = """
assert isinstance(c.payload, bytes) and c.bits == compressor.message_bits(shape)
assert c.shape == shape and y.dtype == torch.float32 and y.shape == x.shape
"""
PBM_CHECKS = """
assert counts.dtype == torch.int64 and counts.shape == (B, P)
assert 0 <= int(counts.min()) and int(counts.max()) <= 16
assert estimate.dtype == torch.float32 and estimate.shape == (B, P)
assert 0 < epsilon < float("inf")
"""
PREDICT_CHECKS = """
assert predictions.metrics is not None and 0.5 < predictions.metrics["accuracy"] <= 1
assert list(predictions.to_frame().columns)[:1] == ["id"]
classes = list(vfl.load_model("runs/adult").classes)
assert probabilities.shape == (100, len(classes)) == (100, 2)
assert len(labels) == 100 and set(labels) <= set(classes)
assert len(model.predict(list(data.test_blocks)).labels) == len(data.test_blocks[0])
"""
PRUNING_CHECKS = """
assert [layer.out_features for layer in model if hasattr(layer, "out_features")] == [32, 16]
assert [p.shape[0] for p in optimizer.param_groups[0]["params"]] == [32, 32, 16, 16]
"""
SECUREBOOST_CHECKS = """
assert np.asarray(probabilities).shape == (100,)
assert ((np.asarray(probabilities) > 0) & (np.asarray(probabilities) < 1)).all()
assert len(run.reports) == 3 and all(r.bytes_down > 200 * 512 * 2 for r in run.reports)
"""
SWEEP_PYTHON_CHECKS = """
if __name__ == "__main__":
    assert result.states["lr=0.001,batch_size=128__seed0"] == "new"
    assert set(result.states.values()) == {"new"} and not result.failed
    assert all(path.exists() for path in redraw(result.folder, metric="test_auc"))
"""
SHORT_SWEEP_FILE = (
    ("experiments/examples/adult_lr_sweep.toml", "experiments/examples/adult_lr_sweep_short.toml"),
)
FAST = (
    Session(
        "readme-python",
        (
            Step(
                R,
                "",
                python=(
                    'dataset = vfl.load_dataset("adult")',
                    'vfl.export(sim, "runs/my-model", classes=dataset.classes)',
                ),
                checks=README_PYTHON_CHECKS,
                expect=("epoch 3 |",),
                files=("runs/my-model/bundle",),
            ),
        ),
    ),
    Session(
        "api-sketches",
        (
            Step(
                "docs/compression.md",
                "",
                python=('compressor = make_compressor("lattice", bits=2)',),
                checks=COMPRESSION_CHECKS,
            ),
            Step("docs/privacy.md", "", python=("B, P, M = 128, 16, 4",), checks=PBM_CHECKS),
            Step(
                "docs/pruning.md",
                "",
                python=(
                    "model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(),"
                    " torch.nn.Linear(64, 16))",
                ),
                checks=PRUNING_CHECKS,
            ),
            Step(
                "docs/secureboost.md",
                "",
                python=("rng = np.random.default_rng(0)",),
                checks=SECUREBOOST_CHECKS,
            ),
        ),
    ),
    Session(
        "readme-commands",
        (
            Step(R, ".venv/bin/vfl --version", shown=("vfl 0.1.0",)),
            Step(R, ".venv/bin/vfl data list", expect=("adult",)),
            Step(R, ".venv/bin/vfl data fetch adult", expect=("adult: ",)),
        ),
    ),
    Session(
        "deployment-certs-across-hosts",
        (
            Step(
                DEPLOY,
                "vfl certs --out certs --parties 1 2 3 --server-name vfl.bank.example"
                " --server-name 203.0.113.7",
                files=("certs/ca.pem", "certs/server.pem", "certs/party-3.token"),
                expect=("[[deployment.parties]]",),
            ),
        ),
    ),
    Session(
        "reproduction-tables",
        (
            Step(CVFL, ".venv/bin/python experiments/cvfl/table.py --doc"),
            Step(CVFL, ".venv/bin/python experiments/cvfl/table.py --doc --check"),
            Step(FEDBCD, ".venv/bin/python experiments/fedbcd/table.py --doc"),
            Step(FEDBCD, ".venv/bin/python experiments/fedbcd/table.py --doc --check"),
            Step(LVFL, ".venv/bin/python experiments/lvfl/table.py --doc"),
            Step(LVFL, ".venv/bin/python experiments/lvfl/table.py --doc --check"),
            Step(PBM, ".venv/bin/python experiments/pbm/table.py --doc"),
            Step(PBM, ".venv/bin/python experiments/pbm/table.py --doc --check"),
            Step(
                PBM,
                ".venv/bin/python experiments/pbm/table.py"
                " experiments/pbm/results/pbm-fashion-mnist-quadrants",
            ),
            Step(ATTACKS, ".venv/bin/python experiments/attacks/report.py"),
        ),
    ),
    Session(
        "secureboost-example",
        (
            Step(
                SECUREBOOST,
                ".venv/bin/python examples/secureboost_adult.py --rows 2000 --trees 5",
                add="--rows 200 --trees 1",
                expect=("test AUC: SecureBoost", "tree 0: "),
            ),
        ),
    ),
    Session(
        "secureboost-commands",
        (
            Step(
                SECUREBOOST,
                "vfl run examples/secureboost_adult.toml --run-dir runs/secureboost",
                add="--set data.max_train_samples=300",
                expect=("tree 3/3 | train_loss", "final: test_loss"),
                files=(
                    "runs/secureboost/trees-checkpoint.json",
                    "runs/secureboost/bundle/server/trees.json",
                    "runs/secureboost/bundle/party-3/splits.json",
                ),
            ),
            Step(
                SECUREBOOST,
                "vfl predict runs/secureboost",
                expect=("16281 predictions written",),
                files=("runs/secureboost/predictions.csv",),
            ),
            Step(
                SECUREBOOST,
                "vfl run --resume runs/secureboost --set boost.num_trees=5",
                expect=("tree 4/5 | ", "tree 5/5 | "),
            ),
        ),
    ),
)

SLOW = (
    Session(
        "make-demo",
        (Step(R, "make demo", expect=('"test_accuracy":',), timeout=900),),
        slow=True,
    ),
    Session(
        "readme-train-resume-sweep-plot",
        (
            Step(
                R,
                ".venv/bin/vfl run examples/adult_3party.toml --set train.epochs=3"
                " --set train.optimizer.lr=3e-3",
                add=ADULT_SHORT,
                expect=("final: test_loss",),
                capture=r"results in (?P<run_dir>\S+)\)",
            ),
            Step(
                R,
                ".venv/bin/vfl run --resume runs/adult_3party-20261122-101500"
                " --set train.epochs=20",
                replace=(
                    ("runs/adult_3party-20261122-101500", "{run_dir}"),
                    ("train.epochs=20", "train.epochs=2"),
                ),
                expect=("final: test_loss",),
            ),
            Step(
                R,
                ".venv/bin/vfl sweep experiments/examples/adult_lr_sweep.toml",
                add=ADULT_SHORT,
                files=("runs/sweeps/adult-lr/table.md",),
            ),
            Step(
                R,
                ".venv/bin/vfl plot runs/sweeps/adult-lr --metric test_auc",
                files=("runs/sweeps/adult-lr/test_auc_vs_mb.png",),
            ),
        ),
        slow=True,
    ),
    Session(
        "experiments-sweep-and-plots",
        (
            Step(
                EXPERIMENTS,
                ".venv/bin/vfl sweep experiments/examples/adult_lr_sweep.toml --dry-run",
                expect=("sweep adult-lr: 8 runs",),
            ),
            Step(
                EXPERIMENTS,
                ".venv/bin/vfl sweep experiments/examples/adult_lr_sweep.toml",
                add=ADULT_SHORT,
                expect=("[8/8] ok",),
            ),
            Step(
                EXPERIMENTS,
                ".venv/bin/vfl plot runs/sweeps/adult-lr --metric test_auc --log-x",
                files=("runs/sweeps/adult-lr/test_auc_vs_mb.png",),
            ),
            Step(
                EXPERIMENTS,
                ".venv/bin/vfl plot runs/sweeps/adult-lr/lr=0.001,batch_size=128__seed0",
                files=(
                    "runs/sweeps/adult-lr/lr=0.001,batch_size=128__seed0/test_accuracy_vs_epoch.png",
                ),
            ),
        ),
        slow=True,
    ),
    Session(
        "attacks",
        (
            Step(
                ATTACKS,
                ".venv/bin/vfl attack experiments/attacks/binary_mnist.toml",
                add=SHORT,
                expect=("attack_direction_auc",),
            ),
            Step(
                ATTACKS,
                ".venv/bin/vfl attack experiments/attacks/quadrants.toml"
                " --set privacy.mechanism=pbm --set privacy.secure_aggregation=off"
                " --set privacy.trials=64",
                add=f"{SHORT} --set attack.feature_reconstruction.epochs=2",
                expect=("attack_mse",),
            ),
            Step(
                ATTACKS,
                ".venv/bin/vfl attack experiments/attacks/binary_mnist.toml"
                ' --set attack.name=model_completion --set "data.positive_classes=[]"',
                add=SHORT,
                expect=("attack_accuracy",),
            ),
            Step(
                ATTACKS,
                ".venv/bin/vfl run experiments/attacks/binary_mnist.toml --set attack.name=none"
                " --set privacy.gradient_noise.noise_multiplier=2 --set privacy.max_epsilon=10"
                " --run-dir runs/budget",
                status=2,
                shown=(ATTACK_DOC_BUDGET,),
            ),
            Step(
                ATTACKS,
                ".venv/bin/vfl run experiments/attacks/binary_mnist.toml --set attack.name=none"
                " --set privacy.gradient_noise.noise_multiplier=2 --set privacy.max_epsilon=10"
                " --run-dir runs/budget --set train.epochs=1",
                add=SMALL,
                files=("runs/budget/summary.json",),
            ),
            Step(
                ATTACKS,
                ".venv/bin/vfl run --resume runs/budget --set train.epochs=4",
                status=3,
                shown=(ATTACK_DOC_STOP,),
                expect=("final: test_loss",),
                file_shows=(
                    (
                        "runs/budget/summary.json",
                        "stopped at the privacy budget after 2 of 4 planned epochs",
                    ),
                ),
            ),
            Step(
                ATTACKS,
                ".venv/bin/vfl run --resume runs/budget --set train.epochs=4",
                status=2,
                shown=(ATTACK_DOC_NO_EPOCH,),
            ),
            Step(ATTACKS, ".venv/bin/python experiments/attacks/quadrants.py", timeout=1200),
        ),
        slow=True,
    ),
    Session(
        "deployment-quick-start",
        (
            Step(
                DEPLOY,
                ".venv/bin/python examples/deploy/make_data.py --out examples/deploy/data",
                files=("examples/deploy/data/labels_train.csv",),
            ),
            Step(
                DEPLOY,
                "vfl certs --out examples/deploy/certs --parties 1 2 3",
                files=("examples/deploy/certs/ca.pem",),
            ),
            Step(
                DEPLOY,
                "vfl launch examples/deploy/RUN.toml",
                add="--set train.epochs=1",
                shown=(
                    "loaded torch and vfl once for the server and 3 parties (",
                    "started the server (pid",
                    "server listening on port",
                    "connected (3 of 3)",
                    "PSI: aligning 7600 train and 1900 test IDs with 3 parties",
                    "IDs every party holds: train 5234 of 7600, test 1307 of 1900",
                    "parties set up (",
                    "epoch 1 | train_loss",
                    "final: test_loss",
                ),
                files=("examples/deploy/runs/deploy-example/summary.json",),
            ),
        ),
        slow=True,
    ),
    Session(
        "experiments-tensorboard",
        (
            Step(
                EXPERIMENTS,
                "vfl run examples/adult_3party.toml --run-dir runs/adult-tb --set train.epochs=2"
                " --set output.tensorboard=true",
                add="--set data.max_train_samples=2000",
                expect=("final: test_loss",),
                files=("runs/adult-tb/tensorboard",),
            ),
        ),
        slow=True,
    ),
    Session(
        "predict-in-one-process",
        (
            Step(
                PREDICT,
                "vfl run examples/adult_3party.toml --run-dir runs/adult --set train.epochs=2",
                add="--set data.max_train_samples=2000",
                files=("runs/adult/bundle",),
            ),
            Step(PREDICT, "vfl predict runs/adult", files=("runs/adult/predictions.csv",)),
            Step(
                PREDICT,
                "vfl predict runs/adult --data NEW.csv --out scored.csv",
                files=("scored.csv",),
            ),
            Step(
                PREDICT,
                "",
                python=(
                    'model = vfl.load_model("runs/adult")',
                    'rows = read_adult_file(data_dir() / "adult" / "adult.test").head(100)',
                    'dataset = vfl.load_dataset("adult")',
                ),
                checks=PREDICT_CHECKS,
                files=("runs/my-modules/bundle",),
            ),
        ),
        slow=True,
        prepare=_new_rows,
    ),
    Session(
        "experiments-python",
        (
            Step(
                EXPERIMENTS,
                "",
                python=('sweep = read_sweep(Path("experiments/examples/adult_lr_sweep.toml"))',),
                replace=SHORT_SWEEP_FILE,
                checks=SWEEP_PYTHON_CHECKS,
                timeout=1200,
            ),
        ),
        slow=True,
        prepare=_short_sweep_copy,
    ),
    Session(
        "predict-life-cycle-of-a-deployment",
        (
            Step(
                PREDICT,
                "mkdir /tmp/vfl-lifecycle && cp examples/deploy/*.toml examples/deploy/make_data.py"
                " /tmp/vfl-lifecycle && cd /tmp/vfl-lifecycle",
                replace=(("/tmp/vfl-lifecycle", "{tmp}/vfl-lifecycle"),),
            ),
            Step(PREDICT, "python make_data.py --out data", files=("tmp/vfl-lifecycle/data",)),
            Step(PREDICT, "vfl certs --out certs --parties 1 2 3 --clients analyst"),
            Step(
                PREDICT,
                "vfl launch RUN.toml --set train.epochs=2",
                files=("tmp/vfl-lifecycle/runs/deploy-example/bundle/server",),
            ),
            Step(
                PREDICT,
                "vfl launch RUN.toml --predict --model runs/deploy-example --data"
                " data/labels_test.csv --out predictions.csv",
                files=("tmp/vfl-lifecycle/predictions.csv",),
            ),
            Step(
                PREDICT,
                "vfl serve --config RUN.toml --model runs/deploy-example --http-port 8443 &",
                replace=HTTP_PORT,
                background=True,
                ready="port:{port}",
            ),
            *(
                Step(
                    PREDICT,
                    f"vfl party --config party{party}.toml --serve &",
                    background=True,
                    ready="err:connected to",
                )
                for party in (1, 2, 3)
            ),
            Step(
                PREDICT,
                "vfl score localhost:50051 t001212 t000718 --ca certs/ca.pem --cert"
                " certs/client-analyst.pem --key certs/client-analyst.key",
                replace=PORT,
                status=4,  # t000718 is not held by party 1: the doc's answer shows its error
                shown=(
                    "vfl: 1 of 2 IDs were not scored: t000718 (party 1 holds no row with this ID)",
                ),
                expect=('"t001212"', '"t000718"'),
            ),
            Step(
                PREDICT,
                "curl --cacert certs/ca.pem --cert certs/client-analyst.pem --key"
                " certs/client-analyst.key -H 'Content-Type: application/json' -d '{\"ids\":"
                ' ["t001212", "t000718"]}\' https://localhost:8443/v1/score',
                replace=HTTP_PORT,
                expect=('"t001212"', '"t000718"', '"classes"'),
            ),
        ),
        slow=True,
        prepare=_after_a_quick_start,
    ),
    Session(
        "reproduction-sweeps",
        (
            Step(
                FEDBCD,
                ".venv/bin/vfl sweep experiments/fedbcd/mnist_cnn_party_k.toml",
                add=SHORT_SWEEP,
                status=4,
                shown=("training diverged",),
                timeout=1800,
            ),
            Step(
                FEDBCD,
                ".venv/bin/vfl plot experiments/fedbcd/results/fedbcd-mnist-cnn-party-k",
            ),
            *(
                Step(LVFL, f".venv/bin/vfl sweep experiments/lvfl/{name}.toml", add=SHORT_SWEEP)
                for name in ("fig2", "fig3a", "fig3b", "claims")
            ),
            *(
                Step(PBM, f".venv/bin/vfl sweep experiments/pbm/{name}.toml", add=SHORT_SWEEP)
                for name in (
                    "fashion_mnist_quadrants",
                    "fashion_mnist_strips7",
                    "mnist_quadrants",
                    "mnist_strips7",
                )
            ),
            Step(
                PBM,
                "for s in fashion-mnist-quadrants mnist-quadrants fashion-mnist-strips7"
                " mnist-strips7; do\n.venv/bin/vfl plot experiments/pbm/results/pbm-$s; done",
            ),
        ),
        slow=True,
    ),
    Session(
        "secureboost-deployment",
        (
            Step(
                SECUREBOOST,
                ".venv/bin/python examples/deploy/secureboost/make_data.py --out"
                " examples/deploy/secureboost/data",
                add="--rows 300",
                files=("examples/deploy/secureboost/data/party3_train.csv",),
            ),
            Step(
                SECUREBOOST,
                "vfl certs --out examples/deploy/secureboost/certs --parties 1 2 3 --clients"
                " analyst",
                files=("examples/deploy/secureboost/certs/client-analyst.pem",),
            ),
            Step(
                SECUREBOOST,
                "vfl launch examples/deploy/secureboost/RUN.toml",
                add="--set boost.num_trees=2",
                shown=("parties set up as SecureBoost holders", "final: test_loss"),
                expect=("PSI: aligning 300 train and 16281 test IDs with 3 parties", "tree 2/2 | "),
                files=(
                    "examples/deploy/secureboost/runs/secureboost-example/bundle/server/trees.json",
                    "examples/deploy/secureboost/state/party2/bundle/party-2/splits.json",
                ),
            ),
            Step(
                SECUREBOOST,
                "vfl launch examples/deploy/secureboost/RUN.toml --resume --set boost.num_trees=5",
                add="--set boost.num_trees=3",
                expect=("tree 3/3 | ",),
                files=(
                    "examples/deploy/secureboost/runs/secureboost-example/trees-checkpoint.json",
                ),
            ),
            Step(
                SECUREBOOST,
                "vfl launch examples/deploy/secureboost/RUN.toml --predict --model"
                " examples/deploy/secureboost/runs/secureboost-example --data"
                " examples/deploy/secureboost/data/labels_test.csv",
                expect=("16281 predictions written to",),
                files=("examples/deploy/secureboost/runs/secureboost-example/predictions.csv",),
            ),
            Step(SECUREBOOST, "mkdir -p model/bundle"),
            Step(
                SECUREBOOST,
                "cp -r examples/deploy/secureboost/runs/secureboost-example/bundle/server"
                " model/bundle/",
            ),
            Step(
                SECUREBOOST,
                "for k in 1 2 3; do cp -r examples/deploy/secureboost/state/party$k/bundle/party-$k"
                " model/bundle/; done",
                files=("model/bundle/party-3/splits.json",),
            ),
            Step(
                SECUREBOOST,
                "vfl predict model --data examples/deploy/secureboost/data/joined_test.csv",
                expect=("16281 predictions written to model/predictions.csv (loss",),
                files=("model/predictions.csv",),
            ),
            Step(
                SECUREBOOST,
                "vfl serve --config examples/deploy/secureboost/RUN.toml --model"
                " examples/deploy/secureboost/runs/secureboost-example &",
                background=True,
                ready="port:{port}",
            ),
            *(
                Step(
                    SECUREBOOST,
                    f"vfl party --config examples/deploy/secureboost/party{party}.toml --serve &",
                    background=True,
                    ready="err:connected to",
                )
                for party in (1, 2, 3)
            ),
            Step(
                SECUREBOOST,
                "vfl score localhost:50051 t0 t1 --ca examples/deploy/secureboost/certs/ca.pem"
                " --cert examples/deploy/secureboost/certs/client-analyst.pem --key"
                " examples/deploy/secureboost/certs/client-analyst.key",
                replace=PORT,
                expect=('"t0"', '"t1"', '">50K"'),
            ),
        ),
        slow=True,
        prepare=_free_port_in_boost_example,
    ),
    Session(
        "secureboost-measurements",
        (
            Step(
                SECUREBOOST,
                "nice .venv/bin/python bench/bench_boost_adult.py --seeds 0 1 2 --rows 5000"
                " --trees 10 --depth 3 --max-bin 32 --out bench/results/secureboost/adult_5000",
                add="--seeds 0 --rows 200 --trees 2 --out doc-check/adult",
                files=("doc-check/adult/seed0.json", "doc-check/adult/summary.md"),
                expect=('"trees_equal_reference": true',),
            ),
            Step(
                SECUREBOOST,
                "nice .venv/bin/python bench/bench_boost_adult.py --seeds 0 --rows 0 --trees 5"
                " --depth 3 --max-bin 32 --out bench/results/secureboost/adult_full_5trees",
                add="--rows 200 --trees 1 --out doc-check/full",
                files=("doc-check/full/seed0.json",),
            ),
            Step(
                SECUREBOOST,
                "nice .venv/bin/python bench/bench_boost_auc.py --seeds 0 1 2 --rows 1000"
                " --trees 3",
                add="--seeds 0 --rows 200 --trees 1 --out doc-check/auc",
                files=("doc-check/auc/auc_run_0.json", "doc-check/auc/auc_launch_0.json"),
                expect=("run seed 0: SecureBoost", "launch seed 0: SecureBoost"),
            ),
            Step(
                SECUREBOOST,
                "nice .venv/bin/python bench/bench_boost_auc.py --seeds 0 1 2 --rows 2000"
                " --trees 5 --out bench/results/secureboost/auc_2000",
                add="--seeds 0 --rows 200 --trees 1 --modes run --out doc-check/auc2000",
                files=("doc-check/auc2000/auc_run_0.json",),
            ),
            Step(
                SECUREBOOST,
                "nice .venv/bin/python bench/bench_boost_auc.py --seeds 0 1 2 --rows 5000"
                " --trees 10 --out bench/results/secureboost/auc_5000",
                add="--seeds 0 --rows 200 --trees 1 --modes run --out doc-check/auc5000",
                files=("doc-check/auc5000/auc_run_0.json",),
            ),
            Step(
                SECUREBOOST,
                "nice .venv/bin/python bench/bench_boost_scaling.py --rows 2000 10000 30000"
                " --bins 16 32 64 --holders 2 3 4 --base-rows 2000 --trees 1"
                " --out bench/results/secureboost/scaling_2000",
                add="--rows 200 --bins 32 --holders 3 --base-rows 200 --out doc-check/scaling",
                files=("doc-check/scaling/holders3_rows200_bins32.json",),
            ),
            *(
                Step(
                    SECUREBOOST,
                    "nice .venv/bin/python bench/bench_boost_leakage.py --rows 5000 --seeds 0 1 2"
                    f" --spy {spy} --out bench/results/secureboost/leakage",
                    add="--rows 300 --seeds 0 --trees 2 --out doc-check/leakage",
                    files=(f"doc-check/leakage/spy{spy}_known0.01_seed0.json",),
                )
                for spy in (2, 3)
            ),
            *(
                Step(
                    SECUREBOOST,
                    "nice .venv/bin/python bench/bench_boost_leakage.py --rows 5000 --seeds 0 1 2"
                    f" --spy {spy} --known {known}"
                    " --out bench/results/secureboost/leakage_known",
                    add="--rows 300 --seeds 0 --trees 2 --out doc-check/leakage_known",
                    files=(f"doc-check/leakage_known/spy{spy}_known{known}_seed0.json",),
                )
                for spy in (2, 3)
                for known in ("0.001", "0.1")
            ),
            Step(
                SECUREBOOST,
                "nice .venv/bin/python bench/bench_boost_scaling.py --rows 2000 10000 30000"
                " --bins 32 --holders 3 --base-rows 10000 --trees 1 --workers 1"
                " --out bench/results/secureboost/growth/rows_w1",
                add="--rows 200 --base-rows 200 --out doc-check/growth",
                files=("doc-check/growth/holders3_rows200_bins32.json",),
            ),
            Step(
                SECUREBOOST,
                ".venv/bin/python bench/bench_boost_bytes.py --rows 2000 10000 30000 100000"
                " 300000 1000000 --check bench/results/secureboost/scaling_2000"
                " bench/results/secureboost/growth/rows_w1"
                " --out bench/results/secureboost/growth/bytes_gradients.json",
                add="--rows 2000 10000 --out doc-check/bytes_gradients.json",
                expect=("10 measured runs agree with the encoder",),
                files=("doc-check/bytes_gradients.json",),
            ),
            Step(
                SECUREBOOST,
                "nice .venv/bin/python bench/bench_boost_compare.py --trees 2 --workers 1"
                " --out bench/results/secureboost/compare/compare_fate_a9a.json",
                add="--rows 200 --trees 1 --published-trees 2 --out doc-check/compare_fate.json",
                files=("doc-check/compare_fate.json",),
            ),
            *(
                Step(
                    SECUREBOOST,
                    f"nice .venv/bin/python bench/bench_boost_he.py {bits}--count 200 --rounds 7"
                    f" --out bench/results/secureboost/he/he_{name}.json",
                    add=f"--backends phe --count 4 --rounds 1 --out doc-check/he_{name}.json",
                    files=(f"doc-check/he_{name}.json",),
                )
                for bits, name in (
                    ("", "2048"),
                    ("--bits 1024 --backends phe heu-ZPaillier heu-OU ", "1024"),
                )
            ),
            Step(
                SECUREBOOST,
                ".venv/bin/python bench/report_boost.py --results bench/results/secureboost",
                expect=(
                    "| 32,561 | 0 | 5 | 0.89609 | 0.89609 |",
                    "| heu-ZPaillier | 2048 | 0.616 ms (8.21x) |",
                    "| 32,561 | 108 | 2 | 2 | 6 | 255 | 2048 | 1 | 198.4 |",
                ),
            ),
            Step(
                SECUREBOOST,
                ".venv/bin/python bench/report_boost_growth.py",
                expect=("| 1,000,000 | 512,000,030 | yes |",),
            ),
        ),
        slow=True,
    ),
)
SESSIONS = FAST + SLOW
