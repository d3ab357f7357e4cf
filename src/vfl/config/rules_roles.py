"""Rules on who holds what: the labels, the parties, the active party, the attacker.

Registered by importing this module (``vfl.config.rules`` does).
"""

from __future__ import annotations

from vfl.config.attack import ATTACKS, NO_ATTACK, AttackConfig, attacks_by
from vfl.config.buildable import NO_COMPRESSOR
from vfl.config.io import check
from vfl.config.schema import RunConfig
from vfl.config.section import rule


@rule(RunConfig)
def _after_upload_needs_shared_labels(config: RunConfig) -> None:
    check(
        config.lightweight.prune_at == "round_start" or config.protocol.labels == "shared",
        "lightweight.prune_at",
        "'after_upload' needs protocol.labels = 'shared' (with private labels the returned"
        " gradient belongs to the model that computed the upload)",
    )


@rule(RunConfig)
def _parties_exist(config: RunConfig) -> None:
    parties = config.partition.num_parties
    for entry in config.lightweight.party:
        check(
            entry.party <= parties,
            "lightweight.party",
            f"party {entry.party} is not a party; valid: 1..{parties}",
        )
    active = config.protocol.active_party
    check(
        active <= parties,
        "protocol.active_party",
        f"{active} is not a party; valid: 1..{parties} (0: none)",
    )


@rule(RunConfig)
def _links_match_labels(config: RunConfig) -> None:
    """Private labels return gradients; shared labels broadcast the server model instead."""
    compress = config.compress
    if config.protocol.labels == "private":
        check(
            compress.server_model.name == NO_COMPRESSOR,
            "compress.server_model.name",
            "compress.server_model applies to protocol.labels = 'shared' only",
        )
    else:
        check(
            compress.gradient.name == NO_COMPRESSOR,
            "compress.gradient.name",
            "compress.gradient applies to protocol.labels = 'private' only; with shared labels"
            " no gradient is sent",
        )


@rule(AttackConfig)
def _attack_runs_at_its_role(attack: AttackConfig) -> None:
    entry = ATTACKS.get(attack.name)
    role = entry.role if entry is not None else None
    valid = ", ".join(repr(name) for name in attacks_by(attack.role))
    check(
        role is None or role == attack.role,
        "role",
        f"{attack.name!r} is an attack by the {role}, not the {attack.role} (attacks by the"
        f" {attack.role}: {valid})",
    )


@rule(RunConfig)
def _attack_fits_the_run(config: RunConfig) -> None:
    """An attack needs messages to observe, and a party attacker must not hold the labels."""
    attack = config.attack
    if attack.name == NO_ATTACK:
        return
    check(config.protocol.mode == "vfl", "attack.name", "the centralized baseline sends nothing")
    check(
        attack.party <= config.partition.num_parties,
        "attack.party",
        f"{attack.party} is not a party; valid: 1..{config.partition.num_parties}",
    )
    check(
        attack.party != config.protocol.active_party,
        "attack.party",
        f"party {attack.party} is the active party: it sits with the label holder, whose"
        " messages to it never cross a transport",
    )
    check(
        attack.role == "server" or config.protocol.labels == "private",
        "attack.role",
        "with protocol.labels = 'shared' every party holds the labels: nothing to infer",
    )


@rule(RunConfig)
def _gradient_noise_needs_gradients(config: RunConfig) -> None:
    if config.privacy.gradient_noise.enabled:
        check(
            config.protocol.labels == "private" and config.protocol.mode == "vfl",
            "privacy.gradient_noise.noise_multiplier",
            "noises the gradients the label holder sends: needs protocol.mode = 'vfl' and"
            " protocol.labels = 'private'",
        )
