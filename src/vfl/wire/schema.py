"""The message base class and the registry that gives every message type its wire kind code."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from vfl.errors import WireError
from vfl.wire.fields import ENCODINGS_BY_ANNOTATION, FieldEncoding

SERVER_ID = 0
"""The sender id of the server; parties are numbered 1..M (C-VFL's convention)."""


@dataclass(frozen=True)
class Message:
    """Base of every message: frozen dataclasses whose fields the frame format can encode.

    Attributes:
        round: The global round the message belongs to; it travels in the frame header.
    """

    KIND: ClassVar[int] = 0
    REPLIES: ClassVar[tuple[type[Message], ...]] = ()
    """For a request: the reply types it accepts (empty: any reply, content checks only)."""
    round: int

    def check_reply(self, reply: Message) -> None:
        """Raise ``WireError`` unless ``reply`` is a valid answer to this request.

        The rule both transports apply to every reply: its type must be one of ``REPLIES``,
        then the reply checks its content against this request (``check_answer``).
        """
        if self.REPLIES and not isinstance(reply, self.REPLIES):
            valid = ", ".join(t.__name__ for t in self.REPLIES)
            raise WireError(
                f"{type(reply).__name__} is not a valid reply to {type(self).__name__}"
                f" (valid: {valid})"
            )
        reply.check_answer(self)

    def check_answer(self, request: Message) -> None:
        """As a reply: raise ``WireError`` if its content does not fit ``request`` (sizes, shapes).

        Nothing to check by default.
        """


@dataclass(frozen=True)
class MessageSchema:
    """What the frame format needs to know about one message type."""

    kind: int
    cls: type[Message]
    names: tuple[str, ...]
    encodings: tuple[FieldEncoding, ...]


_REGISTRY: dict[int, MessageSchema] = {}
_SCHEMAS_BY_CLASS: dict[type[Message], MessageSchema] = {}

M = TypeVar("M", bound=type[Message])


def register(kind: int) -> Callable[[M], M]:
    """Class decorator giving a message type its kind code (1..255, never reused).

    Every field after ``round`` must have an annotation the frame format knows
    (see ``vfl.wire.fields.ENCODINGS_BY_ANNOTATION``).
    """

    def decorate(cls: M) -> M:
        if not 1 <= kind <= 255:
            raise ValueError(f"message kind must be in 1..255, got {kind}")
        if kind in _REGISTRY:
            raise ValueError(f"message kind {kind} is taken by {_REGISTRY[kind].cls.__name__}")
        fields = [f for f in dataclasses.fields(cls) if f.name != "round"]
        encodings = []
        for f in fields:
            annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
            encoding = ENCODINGS_BY_ANNOTATION.get(annotation)
            if encoding is None:
                raise TypeError(
                    f"{cls.__name__}.{f.name}: no wire encoding for annotation {annotation!r};"
                    f" valid: {sorted(ENCODINGS_BY_ANNOTATION)}"
                )
            encodings.append(encoding)
        cls.KIND = kind
        schema = MessageSchema(kind, cls, tuple(f.name for f in fields), tuple(encodings))
        _REGISTRY[kind] = schema
        _SCHEMAS_BY_CLASS[cls] = schema
        return cls

    return decorate


def schema_for_kind(kind: int) -> MessageSchema | None:
    """The schema registered under ``kind``, or ``None``."""
    return _REGISTRY.get(kind)


def schema_for(cls: type[Message]) -> MessageSchema:
    """The schema of a registered message class."""
    schema = _SCHEMAS_BY_CLASS.get(cls)
    if schema is None:
        raise TypeError(f"{cls.__name__} is not a registered message type")
    return schema


def kind_name(kind: int) -> str:
    """The class name registered under ``kind`` (for ledgers and logs)."""
    schema = _REGISTRY.get(kind)
    return schema.cls.__name__ if schema else f"kind{kind}"
