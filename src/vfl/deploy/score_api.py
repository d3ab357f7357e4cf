"""The scoring API of ``vfl serve``: one gRPC method on the deployment's own server and port.

``/vfl.v1.Scoring/Score`` takes and returns UTF-8 JSON (no protobuf stubs needed, any gRPC
client can call it; ``vfl.deploy.score_client`` is a client that loads no model code)::

    request:  {"ids": ["10", "11"]}
    reply:    {"classes": ["<=50K", ">50K"],
               "results": [{"id": "10", "predicted": "<=50K",
                            "probabilities": {"<=50K": 0.93, ">50K": 0.07}},
                           {"id": "11", "error": "party 2 holds no row with this ID"}]}

The call runs over the deployment's TLS, which must be mutual: the caller presents a
certificate of the deployment's CA naming ``client-<name>`` (``vfl certs --clients NAME``). A
party's certificate is refused: parties never see predictions. A malformed request is answered
``INVALID_ARGUMENT`` with one line saying what is wrong; nothing else is affected.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import grpc

from vfl.deploy.certs import CLIENT_PREFIX
from vfl.deploy.score_client import IDS, SERVICE
from vfl.deploy.scoring import MAX_IDS, Scorer, as_json

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 4 * 2**20


class BadRequest(ValueError):
    """A scoring request that is not ``{"ids": [ID, ...]}``."""


def parse_request(body: bytes) -> list[str]:
    """The IDs of a request body.

    Raises:
        BadRequest: saying what is wrong with it.
    """
    if len(body) > MAX_REQUEST_BYTES:
        raise BadRequest(f"the request has {len(body)} bytes; at most {MAX_REQUEST_BYTES}")
    try:
        request = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRequest(
            f'the request is not UTF-8 JSON ({error}); send {{"ids": [...]}}'
        ) from None
    if not isinstance(request, dict) or set(request) != {IDS}:
        raise BadRequest('the request must be a JSON object with the one key "ids"')
    ids = request[IDS]
    if not isinstance(ids, list) or not 1 <= len(ids) <= MAX_IDS:
        raise BadRequest(f'"ids" must be a list of 1 to {MAX_IDS} IDs')
    for position, value in enumerate(ids):
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise BadRequest(f'"ids"[{position}] is {value!r}; an ID is a string or an integer')
    return [str(value) for value in ids]


def scoring_service(scorers: Sequence[Scorer], classes: Sequence[str]) -> grpc.GenericRpcHandler:
    """The gRPC service answering scoring requests with ``scorers[0]`` (once there is one)."""

    def score(body: bytes, context: grpc.ServicerContext) -> bytes:
        _check_caller(context)
        try:
            ids = parse_request(body)
        except BadRequest as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        if not scorers:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the service is starting; ask again")
        results = scorers[0].score(ids)
        return json.dumps(as_json(results, classes)).encode()

    handler = grpc.unary_unary_rpc_method_handler(score)
    return grpc.method_handlers_generic_handler(SERVICE, {"Score": handler})


def _check_caller(context: grpc.ServicerContext) -> None:
    auth = context.auth_context()
    names = [
        value.decode(errors="replace")
        for key in ("x509_common_name", "x509_subject_alternative_name")
        for value in auth.get(key, [])
    ]
    if not any(name.startswith(CLIENT_PREFIX) for name in names):
        log.warning("refused a scoring call from %s (certificate names %s)", context.peer(), names)
        context.abort(
            grpc.StatusCode.PERMISSION_DENIED,
            f"scoring needs a client certificate naming {CLIENT_PREFIX}<name>; this one names"
            f" {names}",
        )
