"""SecureBoost: vertical gradient-boosted trees with Paillier-encrypted gradient histograms.

Cheng et al. 2019, "SecureBoost: A Lossless Federated Learning Framework". The label holder
(``ActiveBooster``) encrypts each tree's gradients; each passive holder (``PassiveBooster``) bins
its own columns and returns encrypted per-bin sums for the nodes being split; only a split's owner
keeps its threshold. Their messages travel as vfl wire frames through any vfl transport
(``TransportLink``, ``passive_endpoint``). ``train_secureboost`` runs every holder in one process
over the in-process transport; ``fit_reference``
grows the same trees in the clear, the losslessness check. ``docs/secureboost.md`` states what
each holder learns.
"""

from vfl.boost.active import ActiveBooster
from vfl.boost.driver import SecureBoostRun, train_secureboost
from vfl.boost.link import Link, TransportLink, local_link, passive_endpoint
from vfl.boost.paillier import KeyPair, PublicKey
from vfl.boost.params import BoostParams
from vfl.boost.passive import PassiveBooster
from vfl.boost.reference import ReferenceModel, fit_reference, secureboost_structure
from vfl.boost.timing import TreeReport

__all__ = [
    "ActiveBooster",
    "BoostParams",
    "KeyPair",
    "Link",
    "PassiveBooster",
    "PublicKey",
    "ReferenceModel",
    "SecureBoostRun",
    "TransportLink",
    "TreeReport",
    "fit_reference",
    "local_link",
    "passive_endpoint",
    "secureboost_structure",
    "train_secureboost",
]
