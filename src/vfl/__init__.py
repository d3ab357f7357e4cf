"""vfl: communication-efficient and private vertical federated learning.

The public API is re-exported here lazily (``import vfl`` stays fast; torch loads on first use)::

    import vfl
    dataset = vfl.load_dataset("mnist")
    partition = vfl.make_partition(dataset, "quadrants", 4)
    sim = vfl.simulate(vfl.vertical_data(dataset, partition), bottoms=..., head=...,
                       optimizer=lambda params: torch.optim.Adam(params, lr=1e-3))
    vfl.fit(sim, epochs=5)
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "RunConfig": "vfl.config",
    "load_config": "vfl.config",
    "ConfigError": "vfl.errors",
    "DataError": "vfl.errors",
    "ProtocolError": "vfl.errors",
    "VflError": "vfl.errors",
    "WireError": "vfl.errors",
    "Dataset": "vfl.data.dataset",
    "load_dataset": "vfl.data.registry",
    "fetch_dataset": "vfl.data.registry",
    "Partition": "vfl.data.partition",
    "make_partition": "vfl.data.partition",
    "Party": "vfl.roles.party",
    "Server": "vfl.roles.server",
    "Task": "vfl.results.metrics",
    "Ledger": "vfl.transport.ledger",
    "Transport": "vfl.transport.base",
    "InProcTransport": "vfl.transport.inproc",
    "Blueprint": "vfl.run.compose",
    "Session": "vfl.run.session",
    "VerticalData": "vfl.data.vertical",
    "vertical_data": "vfl.data.vertical",
    "simulate": "vfl.run.api",
    "Model": "vfl.run.predict",
    "Predictions": "vfl.run.predict",
    "load_model": "vfl.run.predict",
    "predict": "vfl.serving.batch",
    "export": "vfl.run.export",
    "fit": "vfl.run.fit",
    "train": "vfl.run.runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vfl' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
