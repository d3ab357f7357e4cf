"""Typed loading of nested frozen dataclasses from TOML, with ``key=value`` overrides.

Every error names the dotted key, the value given, and what would be valid. Supported field
types: ``bool``, ``int``, ``float``, ``str``, ``Literal[...]``, ``tuple[T, ...]`` of those (nested
tuples too), and nested config dataclasses.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import tomli_w

from vfl.errors import ConfigError

T = TypeVar("T")


class FieldError(ConfigError):
    """A single config field is invalid; ``key`` is relative to its section."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.detail = message


def check(condition: bool, key: str, message: str) -> None:
    """Raise ``FieldError(key, message)`` unless ``condition`` holds (for ``__post_init__``)."""
    if not condition:
        raise FieldError(key, message)


def from_mapping(cls: type[T], data: Mapping[str, Any], *, path: str = "") -> T:
    """Build config dataclass ``cls`` from a (TOML) mapping, validating every key and value."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path or 'config'} must be a table, got {_show(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = f"[{path}]" if path else "the top level"
        close = _close_key(cls, unknown[0])
        hint = f" (did you mean {_join(path, close)!r}?)" if close else ""
        raise ConfigError(
            f"unknown key {_join(path, unknown[0])!r}{hint}; valid keys in {where}:"
            f" {', '.join(fields)}"
        )
    values = {name: _convert(hints[name], value, _join(path, name)) for name, value in data.items()}
    try:
        return cls(**values)
    except FieldError as error:
        raise ConfigError(f"{_join(path, error.key)}: {error.detail}") from None


def _close_key(cls: type[Any], key: str) -> str:
    """The key of ``cls`` (dotted, nested tables included) that ``key`` most likely meant.

    A close spelling at the same level comes first (``epohcs``: ``epochs``); else a key of that
    name, or a close one, in a nested table (``train.lr``: ``train.optimizer.lr``). ``""``: none.
    """
    here = [f.name for f in dataclasses.fields(cls)]
    close = difflib.get_close_matches(key, here, n=1)
    if close:
        return close[0]
    nested = _nested_keys(cls)
    leaves = {dotted.rpartition(".")[2]: dotted for dotted in reversed(nested)}
    close = difflib.get_close_matches(key, list(leaves), n=1, cutoff=0.8)
    return leaves[close[0]] if close else ""


def _nested_keys(cls: type[Any], prefix: str = "") -> list[str]:
    """The dotted keys inside the nested tables of ``cls``, outer tables first."""
    hints = typing.get_type_hints(cls)
    tables = [f.name for f in dataclasses.fields(cls) if dataclasses.is_dataclass(hints[f.name])]
    keys = [f"{prefix}{t}.{f.name}" for t in tables for f in dataclasses.fields(hints[t])]
    for table in tables:
        keys += _nested_keys(hints[table], f"{prefix}{table}.")
    return [key for key in dict.fromkeys(keys) if key.count(".") > prefix.count(".")]


def _convert(hint: Any, value: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return from_mapping(hint, value, path=key)  # type: ignore[arg-type]
    if origin is typing.Literal:
        options = typing.get_args(hint)
        if value not in options or type(value) is not type(options[0]):
            raise ConfigError(
                f"{key} must be one of {', '.join(map(repr, options))}; got {_show(value)}"
            )
        return value
    if origin is tuple:
        item_hint = typing.get_args(hint)[0]
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ConfigError(f"{key} must be an array, got {_show(value)}")
        return tuple(_convert(item_hint, item, f"{key}[{i}]") for i, item in enumerate(value))
    if origin in (typing.Union, types.UnionType):
        raise TypeError(f"{key}: optional config fields are not supported; use a sentinel")
    return _convert_scalar(hint, value, key)


def _convert_scalar(hint: Any, value: Any, key: str) -> Any:
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key} must be true or false, got {_show(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key} must be an integer, got {_show(value)}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key} must be a number, got {_show(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string, got {_show(value)}")
        return value
    raise TypeError(f"{key}: unsupported config field type {hint!r}")


def parse_overrides(overrides: Sequence[str]) -> dict[str, Any]:
    """Parse ``["a.b=v", ...]`` into a nested mapping; values are TOML, or plain strings.

    ``train.epochs=3`` gives an int, ``train.lr=1e-3`` a float, ``model.hidden=[64, 32]`` an
    array, and ``data.name=adult`` the string ``"adult"``.
    """
    nested: dict[str, Any] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"override {item!r} must look like section.key=value")
        try:
            value = tomllib.loads(f"v = {raw.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        *parents, leaf = key.split(".")
        table = nested
        for part in parents:
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise ConfigError(f"override {item!r} conflicts with another override")
        table[leaf] = value
    return nested


def merge(base: Mapping[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """Recursively merge ``updates`` into a copy of ``base``."""
    merged = dict(base)
    for key, value in updates.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def read_toml(path: Path) -> dict[str, Any]:
    """Read a TOML file, turning syntax errors and missing files into ``ConfigError``."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {str(path)!r} is not valid TOML: {error}") from None


def with_paths_resolved(
    raw: Mapping[str, Any], keys: Mapping[str, Sequence[str]], base: Path
) -> dict[str, Any]:
    """A copy of ``raw`` whose relative path values at ``keys`` are joined to ``base``.

    ``keys`` maps a dotted table (``""``: the top level) to the names of its path keys. A config
    file's relative paths mean paths next to the file, whatever the working directory; values
    given on the command line (``--set``) are merged afterwards and taken as typed.
    """
    out = copy.deepcopy(dict(raw))
    for section, names in keys.items():
        table: Any = out
        for part in filter(None, section.split(".")):
            table = table.get(part) if isinstance(table, dict) else None
        if not isinstance(table, dict):
            continue
        for name in names:
            value = table.get(name)
            if isinstance(value, str) and value:
                table[name] = str(base / Path(value).expanduser())
    return out


def to_toml(config: Any) -> str:
    """Serialize a config dataclass to TOML text (the resolved config of a run)."""
    return tomli_w.dumps(_plain(dataclasses.asdict(config)))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"
