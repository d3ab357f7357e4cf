"""A party's audit log: every frame it received, as JSON lines (``audit_log`` in PARTY.toml)."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

from vfl.errors import WireError
from vfl.transport.grpc_party import FrameHandler
from vfl.transport.link import is_control
from vfl.wire import decode
from vfl.wire.frames import peek_kind


def audited(handler: FrameHandler, path: Path) -> FrameHandler:
    """Wrap a frame handler so that every received frame is logged to a JSONL file.

    Control frames (alignment, setup) are recorded in full (base64); training frames by kind,
    message type, round and size only. The log shows what the party was ever told.
    """

    def handle(frame: bytes) -> bytes:
        record: dict[str, Any] = {"time": time.time(), "bytes": len(frame)}
        try:
            kind = peek_kind(frame)
            record["kind"] = kind
            message = decode(frame).message
            record["message"] = type(message).__name__
            record["round"] = message.round
            if is_control(kind):
                record["data"] = base64.b64encode(frame).decode()
        except WireError as error:
            record["error"] = str(error)
            record["data"] = base64.b64encode(frame).decode()
        with path.open("a") as handle_:
            handle_.write(json.dumps(record) + "\n")
        return handler(frame)

    return handle
