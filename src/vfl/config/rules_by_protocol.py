"""What a protocol's registration says it reads: its own table, and the settings it ignores.

A protocol may keep a config table to itself (``secureboost``: ``[boost]``) and may not read
settings others do (a tree trainer has no optimizer, batches or compressors). Both are declared
in its registration (``vfl.config.protocols.ProtocolEntry``: ``section``, ``ignores``); the one
rule here refuses, with one line naming the key, a value that would be silently ignored.
"""

from __future__ import annotations

import dataclasses

from vfl.config.applicability import value_and_default
from vfl.config.fields import show
from vfl.config.io import FieldError
from vfl.config.protocols import PROTOCOLS, chosen_protocol
from vfl.config.schema import RunConfig
from vfl.config.section import rule


@rule(RunConfig)
def _protocol_reads_what_is_set(config: RunConfig) -> None:
    """Another protocol's table, or a setting the chosen protocol ignores, is refused."""
    name = chosen_protocol(config.protocol.name, config.privacy.mechanism)
    entry = PROTOCOLS.get(name)
    own = entry.section if entry is not None else ""
    for table in dict.fromkeys(e.section for _, e in PROTOCOLS.items() if e.section != own):
        changed = _first_change(config, table) if table else None
        if changed:
            key, value, default = changed
            readers = " or ".join(repr(n) for n, e in PROTOCOLS.items() if e.section == table)
            raise FieldError(
                key,
                f"{show(value)} does not apply: [{table}] is read only with protocol.name ="
                f" {readers}; remove it (its default is {show(default)}) or set protocol.name",
            )
    for ignored in entry.ignores if entry is not None else ():
        changed = _first_change(config, ignored)
        if changed:
            key, value, default = changed
            raise FieldError(
                key,
                f"{show(value)} does not apply: protocol {name!r} does not read it; remove it"
                f" (its default is {show(default)})",
            )


def _first_change(config: RunConfig, key: str) -> tuple[str, object, object] | None:
    """``(key, value, default)``: the first field at or under ``key`` away from its default."""
    value, default = value_and_default(config, key)
    if value == default:
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            found = _first_change(config, f"{key}.{field.name}")
            if found:
                return found
    return key, value, default
