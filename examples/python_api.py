"""Train VFL from Python with your own torch modules (UCI Adult, 2 parties).

.venv/bin/python examples/python_api.py [--epochs 3] [--export runs/python-api]

With ``--export RUN_DIR`` the trained modules are saved as model bundles (``vfl.export``), loaded
back into the same architecture and used to predict the test split (``docs/predict.md``).
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

import vfl
from vfl.models import ConcatHead


class Tower(nn.Module):
    """A party's own embedding network: any module mapping (B, d) to (B, P) works."""

    def __init__(self, in_features: int, width: int = 32) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, width), nn.GELU(), nn.LayerNorm(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embed a batch of the party's rows."""
        return self.net(x)


def main() -> None:
    """Load Adult, split it between 2 parties, train, print the result."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--export", help="save the trained model's bundles into this new folder")
    args = parser.parse_args()

    dataset = vfl.load_dataset("adult")  # after `vfl data fetch adult`
    partition = vfl.make_partition(dataset, "contiguous", 2)
    data = vfl.vertical_data(dataset, partition)

    torch.manual_seed(0)
    bottoms = [Tower(block.shape[1]) for block in data.train_blocks]
    head = ConcatHead(nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 1)))
    simulation = vfl.simulate(
        data,
        bottoms=bottoms,
        head=head,
        batch_size=256,
        optimizer=lambda params: torch.optim.AdamW(params, lr=2e-3),
    )
    records = vfl.fit(simulation, epochs=args.epochs)
    print(
        f"test AUC {records[-1]['test_auc']:.4f}, bytes sent"
        f" {records[-1]['bytes_up'] + records[-1]['bytes_down']:,}"
    )
    if args.export:
        vfl.export(simulation, args.export, classes=dataset.classes)
        model = vfl.load_model(args.export, bottoms=bottoms, head=head)
        predictions = model.predict(list(data.test_blocks), labels=data.test_labels)
        print(f"exported to {args.export}; its test AUC {predictions.metrics['auc']:.4f}")


if __name__ == "__main__":
    main()
