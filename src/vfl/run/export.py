"""``vfl.export``: save a run built by ``vfl.simulate`` (your own modules) as model bundles.

The bundles are those of ``vfl run`` (``RUN_DIR/bundle/``: safetensors weights, the resolved
config, a fingerprint; never pickle), marked as holding your own modules: a module's code is
not data, so ``vfl.load_model(RUN_DIR, bottoms=[...], head=...)`` takes modules of the same
architecture and loads the trained weights into them. Each party's rows are the tensors you
gave ``vfl.simulate`` (no table preprocessing is recorded): predict with
``model.predict([block_1, ..., block_M])``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from vfl.errors import ConfigError
from vfl.protocol.loop import ServerLoop
from vfl.run.bundles import (
    BUNDLE,
    MODULES_GIVEN,
    export_party,
    export_server,
    fingerprint,
)
from vfl.run.session import LocalParties, Session

TENSORS = {"kind": "tensor"}
"""A party's preprocessing record when its rows are given as tensors."""


def export(
    session: Session[LocalParties],
    run_dir: Path | str,
    *,
    classes: Sequence[str] | None = None,
) -> Path:
    """Write every role's bundle of ``session`` into ``run_dir / bundle``; returns that folder.

    Args:
        session: A run built by ``vfl.simulate`` (trained or not).
        run_dir: Where the bundles go; its ``bundle/`` must not exist yet.
        classes: The class names, in class-index order (default: ``"0"``, ``"1"``, ...).

    Raises:
        ConfigError: for the centralized baseline (no roles), a session not built by the
            composition root, classes that do not fit the task, or an existing bundle folder.
    """
    loop = session.trainer
    config = session.config
    if not isinstance(loop, ServerLoop) or config is None:
        raise ConfigError(
            "vfl.export takes a run built by vfl.simulate with roles (the centralized baseline"
            " has none)"
        )
    names = _classes(classes, loop.server.task.num_classes)
    folder = Path(run_dir) / BUNDLE
    if folder.exists():
        raise ConfigError(f"{folder} already exists; export into another run directory")
    shapes = [list(party.features[0].shape[1:]) for party in session.parties]
    run_fingerprint = fingerprint(config, "given modules " + json.dumps(shapes))
    for party in session.parties:
        export_party(
            folder,
            party,
            config,
            run_fingerprint=run_fingerprint,
            preprocessing=dict(TENSORS),
            modules=MODULES_GIVEN,
        )
    export_server(
        folder,
        loop.server,
        config,
        run_fingerprint=run_fingerprint,
        classes=names,
        modules=MODULES_GIVEN,
    )
    return folder


def _classes(classes: Sequence[str] | None, count: int) -> tuple[str, ...]:
    if classes is None:
        return tuple(str(index) for index in range(count))
    names = tuple(str(name) for name in classes)
    if len(names) != count or len(set(names)) != count:
        raise ConfigError(f"classes must be {count} distinct names (the task's), got {names}")
    return names
