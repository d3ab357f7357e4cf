"""The exception hierarchy of vfl.

Every error a user can cause derives from ``VflError``; configuration and data errors are also
``ValueError`` so that generic callers can catch them the usual way.
"""

from __future__ import annotations


class VflError(Exception):
    """Base class of every error vfl raises on purpose."""


class ConfigError(VflError, ValueError):
    """A configuration value, CLI argument or API argument is invalid.

    The message names the offending key or argument, the value given, and what would be valid.
    """


class DataError(VflError, ValueError):
    """A data set is missing, malformed, or inconsistent between parties."""


class WireError(VflError, ValueError):
    """Bytes that arrived are not a valid message.

    Malformed or oversized frames, wrong shapes, a wrong sender, a stale or replayed round.
    """


class ProtocolError(VflError, RuntimeError):
    """A party or the server broke the training protocol (unexpected message, missing reply)."""


class TrainingDiverged(VflError, RuntimeError):
    """The training loss or the server model became NaN or infinite.

    Too large a learning rate or too coarse a compressor; the last checkpoint still holds the run
    before it.
    """


class PrivacyBudgetExhausted(VflError, RuntimeError):
    """A party refuses a release that would spend more than its own privacy budget."""


class SomeWorkFailed(VflError, RuntimeError):
    """The command ran, and part of what it was asked for failed (named in the message).

    The command line exits with its own status (``vfl.cli.SOME_FAILED``), so that a script can
    tell it from success and from refused input.
    """


DIVERGED_HINT = (
    "training diverged; lower train.optimizer.lr, use fewer protocol.local_steps or more"
    " compression bits"
)
