"""Privacy mechanisms by name: one ``register_mechanism`` line each, read everywhere else.

A mechanism's registration carries its ``privacy.mechanism`` name, the ``[privacy]`` keys it
reads, its capabilities (flags that config rules, the applicability table and the composition
root read instead of comparing names) and the ``"module:function"`` references of the stages it
adds to a run: the party's (what a party does to its embedding before it leaves) and the
server's (how the server sums them). The registry is light (no torch): only the composition
root resolves the references.

Example:
    >>> MECHANISMS["pbm"].sums_only, MECHANISMS["none"].noises
    (True, False)
"""

from __future__ import annotations

from dataclasses import dataclass

from vfl.registry import Registry

NO_MECHANISM = "none"
"""The mechanism of a run whose embeddings leave as they are."""


@dataclass(frozen=True)
class MechanismEntry:
    """One privacy mechanism's registration.

    Attributes:
        name: Its ``privacy.mechanism``.
        reads: The ``[privacy]`` keys it reads (elsewhere they do not apply).
        noises: It adds noise to the embeddings, so it spends a privacy budget
            (``privacy.max_epsilon``) and its randomness comes from the operating system in a
            deployment.
        sums_only: The server receives values it can only sum (PBM's counts): it needs
            ``model.head.fusion = "sum"``, no embedding compressor and no sparsification, sums
            evaluation embeddings securely too, and secure aggregation applies.
        bounded: It needs embeddings in ``[-1, 1]`` (``output_activation = "tanh"``, ``clip``
            at least 1).
        protocol: The protocol it runs under (a ``protocol.name``), or ``""``: any.
        party_stage: ``"module:function"`` building a party's stage,
            ``(config, party, deployed=...) -> PartySecureSum``; ``""``: none.
        server_stage: ``"module:function"`` building the server's,
            ``(config, party_ids, width) -> ServerPrivacy``; ``""``: none.
    """

    name: str
    reads: tuple[str, ...] = ()
    noises: bool = False
    sums_only: bool = False
    bounded: bool = False
    protocol: str = ""
    party_stage: str = ""
    server_stage: str = ""


MECHANISMS: Registry[MechanismEntry] = Registry("privacy mechanism", key="privacy.mechanism")
"""Every privacy mechanism by name."""


def register_mechanism(entry: MechanismEntry) -> MechanismEntry:
    """Add a mechanism: after this line ``privacy.mechanism = entry.name`` configures it.

    Raises:
        ValueError: if its name is taken.
    """
    return MECHANISMS.register(entry.name, entry)


def draws_with_a_sampler(mechanism: str) -> bool:
    """Whether ``mechanism`` draws its noise with ``privacy.sampler`` (PBM's counts)."""
    entry = MECHANISMS.get(mechanism)
    return entry is not None and "sampler" in entry.reads


def unregister_mechanism(name: str) -> None:
    """Take a mechanism out of the registry again (a test's own, after the test)."""
    MECHANISMS.remove(name)


def mechanisms_reading(key: str) -> tuple[str, ...]:
    """The registered mechanisms that read ``[privacy]`` key ``key``."""
    return tuple(name for name, entry in MECHANISMS.items() if key in entry.reads)


def mechanisms_that(capability: str) -> tuple[str, ...]:
    """The registered mechanisms with ``capability`` (an attribute that is true)."""
    return tuple(name for name, entry in MECHANISMS.items() if getattr(entry, capability))


def naming(names: tuple[str, ...]) -> str:
    """``privacy.mechanism = 'a' or 'b'`` for a message."""
    return "privacy.mechanism = " + " or ".join(repr(name) for name in names)


register_mechanism(MechanismEntry(NO_MECHANISM))
register_mechanism(
    MechanismEntry(
        "pbm",
        reads=("trials", "beta", "clip", "eval_fraction_bits", "sampler"),
        noises=True,
        sums_only=True,
        bounded=True,
        protocol="private_sum",
        party_stage="vfl.run.privacy_stages:pbm_party",
        server_stage="vfl.run.privacy_stages:pbm_server",
    )
)
