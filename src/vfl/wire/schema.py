"""The message base class and the registry that gives every message type its wire kind code."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from vfl.wire.fields import CODECS_BY_ANNOTATION, FieldCodec

SERVER_ID = 0
"""The sender id of the server; parties are numbered 1..M (C-VFL's convention)."""


@dataclass(frozen=True)
class Message:
    """Base of every message: frozen dataclasses whose fields the codec knows how to encode.

    Attributes:
        round: The global round the message belongs to; it travels in the frame header.
    """

    KIND: ClassVar[int] = 0
    round: int


@dataclass(frozen=True)
class MessageSchema:
    """What the codec needs to know about one message type."""

    kind: int
    cls: type[Message]
    names: tuple[str, ...]
    codecs: tuple[FieldCodec, ...]


_REGISTRY: dict[int, MessageSchema] = {}
_SCHEMAS_BY_CLASS: dict[type[Message], MessageSchema] = {}

M = TypeVar("M", bound=type[Message])


def register(kind: int) -> Callable[[M], M]:
    """Class decorator giving a message type its kind code (1..255, never reused).

    Every field after ``round`` must have an annotation the codec knows
    (see ``vfl.wire.fields.CODECS_BY_ANNOTATION``).
    """

    def decorate(cls: M) -> M:
        if not 1 <= kind <= 255:
            raise ValueError(f"message kind must be in 1..255, got {kind}")
        if kind in _REGISTRY:
            raise ValueError(f"message kind {kind} is taken by {_REGISTRY[kind].cls.__name__}")
        fields = [f for f in dataclasses.fields(cls) if f.name != "round"]
        codecs = []
        for f in fields:
            annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
            codec = CODECS_BY_ANNOTATION.get(annotation)
            if codec is None:
                raise TypeError(
                    f"{cls.__name__}.{f.name}: no wire codec for annotation {annotation!r};"
                    f" valid: {sorted(CODECS_BY_ANNOTATION)}"
                )
            codecs.append(codec)
        cls.KIND = kind
        schema = MessageSchema(kind, cls, tuple(f.name for f in fields), tuple(codecs))
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
