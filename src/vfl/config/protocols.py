"""The ``[protocol]`` section and the protocols by name: one ``register_protocol`` line each.

A protocol's registration carries its ``protocol.name``, what runs it (``runner``: a
server-side loop, a ``vfl.protocol.loop.ServerLoop`` that the epoch loop drives, or a tree
trainer that grows boosted trees; only ``vfl.run`` resolves the ``"module:name"`` it names, so
that this module stays light) and its capabilities: who holds the labels, the parties'
schedule, whether it runs only under a mechanism that asks for it (``private_sum`` under
PBM), the config table of its own (``[boost]``) and the settings it does not read (refused
with one line naming the key when set). ``protocol.labels`` and ``protocol.schedule`` follow
from the name; set on their own, they still choose the protocol as they did before names
existed, with one deprecation line.

Example:
    >>> PROTOCOLS["shared_labels"].labels, PROTOCOLS["sequential"].schedule
    ('shared', 'sequential')
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Annotated, Literal

from vfl.config.fields import Range, Registered
from vfl.config.io import FieldError
from vfl.config.mechanisms import MECHANISMS
from vfl.config.section import Section
from vfl.registry import Registry

AUTO = "auto"
"""The ``protocol.name`` that picks the protocol from the mechanism and the older settings."""
PROTOCOL_MODULE = "vfl.protocol"

Labels = Literal["private", "shared"]
Schedule = Literal["parallel", "sequential"]
Runner = Literal["server_loop", "trees"]


@dataclass(frozen=True)
class ProtocolEntry:
    """One protocol's registration.

    Attributes:
        name: Its ``protocol.name``.
        loop: ``"module:name"`` of what runs it: for ``runner = "server_loop"`` its
            ``ServerLoop`` subclass; for ``"trees"`` its trainer function.
        labels: ``private``: only the server holds labels; ``shared``: every party does.
        schedule: ``parallel`` or ``sequential`` party steps.
        by_mechanism: It runs only under a privacy mechanism whose registration names it (and
            such a mechanism runs only under it).
        runner: ``server_loop``: the epoch loop (``vfl.run.fit``) drives its ``ServerLoop``
            round by round; ``trees``: its trainer grows boosted trees, one checkpoint per tree.
        section: The run config's table that only it reads (``boost``); empty for none. Set
            under another protocol, that table is refused.
        ignores: Dotted tables or keys of the run config it does not read (``model``,
            ``train.optimizer``); a value other than the default there is refused, naming it.
    """

    name: str
    loop: str
    labels: Labels = "private"
    schedule: Schedule = "parallel"
    by_mechanism: bool = False
    runner: Runner = "server_loop"
    section: str = ""
    ignores: tuple[str, ...] = ()


PROTOCOLS: Registry[ProtocolEntry] = Registry("protocol", key="protocol.name")
"""Every protocol by name."""


def register_protocol(entry: ProtocolEntry) -> ProtocolEntry:
    """Add a protocol: after this line ``protocol.name = entry.name`` runs its loop.

    Raises:
        ValueError: if its name is taken or ``auto``.
    """
    if entry.name == AUTO:
        raise ValueError(f"{AUTO!r} is not a protocol name: it picks one")
    return PROTOCOLS.register(entry.name, entry)


def unregister_protocol(name: str) -> None:
    """Take a protocol out of the registry again (a test's own, after the test)."""
    PROTOCOLS.remove(name)


register_protocol(ProtocolEntry("split", f"{PROTOCOL_MODULE}.split_learning:SplitLearning"))
register_protocol(
    ProtocolEntry(
        "sequential",
        f"{PROTOCOL_MODULE}.split_learning:SequentialSplitLearning",
        schedule="sequential",
    )
)
register_protocol(
    ProtocolEntry("shared_labels", f"{PROTOCOL_MODULE}.shared:SharedLabelsTraining", "shared")
)
register_protocol(
    ProtocolEntry(
        "private_sum", f"{PROTOCOL_MODULE}.private_sum:PrivateSumTraining", by_mechanism=True
    )
)


TREES_IGNORE = (
    "model",
    "train.epochs",
    "train.batch_size",
    "train.eval_batch_size",
    "train.shuffle",
    "train.drop_last",
    "train.seed",
    "train.optimizer",
    "train.checkpoint_every",
    "train.eval_at_start",
    "train.eval_every",
    "train.threads",
    "train.device",
    "protocol.mode",
    "protocol.local_steps",
    "protocol.proximal_mu",
    "protocol.pipeline",
    "compress",
    "privacy",
    "lightweight",
    "target",
    "attack",
    "output.tensorboard",
)
"""What a tree trainer does not read: the neural models, their optimizer and batches, the
neural pipeline's stages, attacks and targets. It reads ``[data]``, ``[partition]``, its own
table, ``protocol.active_party`` (the label holder; 0: a label holder without columns),
``train.checkpoint`` (one checkpoint per tree) and ``[output]``."""

register_protocol(
    ProtocolEntry(
        "secureboost",
        "vfl.run.boosting:train_trees",
        runner="trees",
        section="boost",
        ignores=TREES_IGNORE,
    )
)


def follow_the_name(name: str, labels: str, schedule: str) -> tuple[str, str, str]:
    """``(name, labels, schedule)`` of a ``[protocol]`` table, each following the others.

    A registered ``name`` sets ``labels`` and ``schedule`` (a value other than the default that
    contradicts it is refused); ``auto`` with non-default ``labels`` or ``schedule`` becomes the
    protocol they imply, with one deprecation line. ``auto`` with the defaults stays ``auto``:
    the mechanism, if it asks for a protocol, or ``split`` runs (``chosen_protocol``).

    Raises:
        FieldError: naming ``labels`` or ``schedule`` where it contradicts ``name``.
    """
    entry = PROTOCOLS.get(name)
    if entry is None:  # auto, or a name the field check refuses
        implied = _implied(labels, schedule) if name == AUTO else ""
        if implied:
            _deprecated(labels, schedule, implied)
        return implied or name, labels, schedule
    pairs = (("labels", labels, entry.labels), ("schedule", schedule, entry.schedule))
    for key, given, wanted in pairs:
        if given not in (wanted, DEFAULTS[key]):
            raise FieldError(
                key,
                f"{given!r} contradicts protocol.name = {name!r} (whose {key} is {wanted!r}):"
                f" drop protocol.{key}, the name sets it",
            )
    return name, entry.labels, entry.schedule


DEFAULTS = {"labels": "private", "schedule": "parallel"}
"""``protocol.labels`` and ``protocol.schedule`` as they stand when unset."""


def _implied(labels: str, schedule: str) -> str:
    if (labels, schedule) == (DEFAULTS["labels"], DEFAULTS["schedule"]):
        return ""
    return next(
        (
            name
            for name, entry in PROTOCOLS.items()
            if (entry.labels, entry.schedule) == (labels, schedule) and not entry.by_mechanism
        ),
        "",
    )


def _deprecated(labels: str, schedule: str, implied: str) -> None:
    setting = (
        f"protocol.labels = {labels!r}"
        if labels != DEFAULTS["labels"]
        else f"protocol.schedule = {schedule!r}"
    )
    warnings.warn(
        f"{setting} without protocol.name is deprecated: set protocol.name = {implied!r}"
        " instead (docs/config.md)",
        FutureWarning,
        stacklevel=2,
    )


def chosen_protocol(name: str, mechanism: str) -> str:
    """The protocol a run uses: ``name``; for ``auto``, the mechanism's, else ``split``."""
    if name != AUTO:
        return name
    return MECHANISMS[mechanism].protocol or "split"


@dataclass(frozen=True)
class ProtocolConfig(Section):
    """Which protocol trains the model: ``name`` picks it.

    Before protocols had names, ``labels = "shared"`` chose C-VFL's Algorithm 1 and
    ``schedule = "sequential"`` FedBCD-s. A config that still says so runs the same protocol and
    prints one line, ``vfl: warning: protocol.labels = 'shared' without protocol.name is
    deprecated: set protocol.name = 'shared_labels' instead``; a name and a setting that
    contradicts it are refused.

    Attributes:
        name: The protocol (its server-side loop): ``split`` (split learning, FedBCD-p),
            ``sequential`` (FedBCD-s), ``shared_labels`` (C-VFL Algorithm 1), ``private_sum``
            (VFL-PBM; with ``privacy.mechanism = "pbm"``, which also picks it),
            ``secureboost`` (vertical gradient-boosted trees, set by ``[boost]``; it reads
            ``[data]``, ``[partition]``, ``active_party``, ``train.checkpoint`` and ``[output]``
            and refuses the neural settings); ``auto``: the
            one the mechanism asks for, else ``split``. The name sets ``labels`` and
            ``schedule``; setting those instead of the name still works, with a deprecation
            line.
        mode: ``vfl``: parties and server exchange messages through the in-process transport,
            every message encoded and counted. ``centralized``: the same combined model trained
            in one process with no messages (the baseline).
        labels: ``private``: only the server holds labels; it returns d loss / d embedding
            (split learning, C-VFL Algorithm 2, FedBCD). ``shared``: every party holds them and
            receives the stale compressed view of the round (C-VFL Algorithm 1; FedBCD's exact
            partial gradient at the stale point).
        local_steps: Q, the local iterations every role takes per round on the round's batch.
        proximal_mu: FedPBCD's proximal weight mu (0 disables the term).
        schedule: ``parallel`` (FedBCD-p: every party steps at once after one exchange) or
            ``sequential`` (FedBCD-s: parties step one after another, each re-sending its
            updated embedding; private labels only).
        active_party: The party (1..M) whose features live with the label holder (FedBCD's
            party K): its exchanges stay in the server's process and cost no bytes. 0 = none.
            Under ``secureboost``: the label holder, whose columns join the trees in the clear
            (0: a label holder with no columns of its own).
        pipeline: Send a round's gradients together with the next round's batch (one message
            to each party and one reply per round instead of two of each; private labels with
            the parallel schedule, and VFL-PBM). Every party takes the same steps in the same
            order; the ledger holds fewer messages and bytes. An evaluation inside an epoch and
            the epoch's end send the waiting gradients on their own; a checkpoint keeps them,
            so a resumed run sends the same messages. In one process the parties share torch's
            global generator: with user modules that draw from it (dropout) and Q > 1 or an
            active party, the parties' draws interleave differently, so the two settings give
            different, equally valid runs. ``false`` sends every gradient on its own (the
            message pattern of runs made before it).
    """

    name: Annotated[str, Registered(PROTOCOLS.names, extra=(AUTO,))] = AUTO
    mode: Literal["vfl", "centralized"] = "vfl"
    labels: Literal["private", "shared"] = "private"
    local_steps: Annotated[int, Range(ge=1)] = 1
    proximal_mu: Annotated[float, Range(ge=0)] = 0.0
    schedule: Literal["parallel", "sequential"] = "parallel"
    active_party: Annotated[int, Range(ge=0)] = 0
    pipeline: bool = True

    def __post_init__(self) -> None:
        followed = follow_the_name(self.name, self.labels, self.schedule)
        for key, value in zip(("name", "labels", "schedule"), followed, strict=True):
            object.__setattr__(self, key, value)  # frozen: the name decides before any check
        super().__post_init__()
