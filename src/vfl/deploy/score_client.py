"""A client of ``vfl serve``'s scoring API that loads no model code: gRPC, JSON and TLS only.

``vfl score`` and ``ScoringClient`` use it; importing it loads neither torch nor the deployment's
roles, so that a call starts in a fraction of a second (``tests/serving/test_score_cli.py``
checks its import graph).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import grpc

from vfl.errors import ConfigError, ProtocolError
from vfl.transport.security import PartyTls

SERVICE = "vfl.v1.Scoring"
METHOD = f"/{SERVICE}/Score"
MAX_REPLY_BYTES = 64 * 2**20
IDS = "ids"
"""The request's one key: the IDs to score."""
RESULTS = "results"
"""The answer's entries, one per ID: its ``id``, and its prediction or its ``error``."""
ERROR = "error"
"""The key of an entry (or of a refused request's answer) that carries an error."""


def score_ids(
    address: str, ids: Sequence[str | int], tls: PartyTls, *, timeout_s: float = 30.0
) -> dict[str, Any]:
    """Ask ``vfl serve`` at ``address`` to score ``ids``; its JSON answer.

    Raises:
        ProtocolError: with the service's status and one-line reason.
    """
    body = json.dumps({IDS: list(ids)}).encode()
    answer: dict[str, Any] = json.loads(call(address, body, tls, timeout_s=timeout_s))
    return answer


def unscored(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of a scoring answer that carry an error instead of a prediction.

    Example:
        >>> unscored({"results": [{"id": "1", "predicted": "no"}, {"id": "2", "error": "x"}]})
        [{'id': '2', 'error': 'x'}]
    """
    return [entry for entry in answer.get(RESULTS, []) if ERROR in entry]


def call(address: str, body: bytes, tls: PartyTls, *, timeout_s: float = 30.0) -> bytes:
    """One raw call of the scoring method (``body``: the request's bytes).

    Raises:
        ProtocolError: with the service's status and one-line reason.
    """
    if timeout_s <= 0:
        raise ConfigError(f"timeout_s must be > 0, got {timeout_s}")
    options = [("grpc.max_receive_message_length", MAX_REPLY_BYTES), *tls.options()]
    with grpc.secure_channel(address, tls.credentials(), options=options) as channel:
        method = channel.unary_unary(METHOD)
        try:
            reply: bytes = method(body, timeout=timeout_s)
        except grpc.RpcError as error:
            code = error.code().name if hasattr(error, "code") else "UNKNOWN"
            details = error.details() if hasattr(error, "details") else str(error)
            raise ProtocolError(f"scoring at {address} failed ({code}): {details}") from None
    return reply


class ScoringClient:
    """A channel to ``vfl serve`` kept open for many calls (the benchmark's client).

    Args:
        address: The service's ``host:port``.
        tls: The CA and a client certificate naming ``client-<name>``.
    """

    def __init__(self, address: str, tls: PartyTls) -> None:
        options = [("grpc.max_receive_message_length", MAX_REPLY_BYTES), *tls.options()]
        self._channel = grpc.secure_channel(address, tls.credentials(), options=options)
        self._method = self._channel.unary_unary(METHOD)

    def score(self, ids: Sequence[str | int], *, timeout_s: float = 30.0) -> dict[str, Any]:
        """The service's JSON answer for ``ids``."""
        body = json.dumps({IDS: list(ids)}).encode()
        answer: dict[str, Any] = json.loads(self._method(body, timeout=timeout_s))
        return answer

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()
