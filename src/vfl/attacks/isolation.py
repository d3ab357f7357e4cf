"""An attack sees only its role: its module imports nothing that reaches past it.

An attack algorithm gets what its role receives and its role's own knowledge as arguments
(``vfl.attacks.base``, fed by ``vfl.run.observe``); it must have no import through which to reach
a role, a transport, the data or the harness that holds the truth. For the built-in attacks the
import-linter contract "Attack algorithms import no role, transport, data or harness"
(``pyproject.toml``) checks this; its forbidden list is ``FORBIDDEN`` (a test keeps the two
equal and the contract's modules equal to the registered attacks'). An attack registered from
outside the package (a plug-in) is out of import-linter's reach, so the harness checks its
module here, the same way (direct imports, as the contract with ``allow_indirect_imports``),
before it runs it.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

from vfl.errors import ConfigError

FORBIDDEN = (
    "vfl.roles",
    "vfl.protocol",
    "vfl.transport",
    "vfl.data",
    "vfl.run.compose",
    "vfl.run.session",
    "vfl.run.runner",
    "vfl.attacks.probe",
    "vfl.attacks.scoring",
    "vfl.attacks.builders",
)
"""Modules (with their submodules) an attack's module must not import."""


def imports_of(module: str) -> tuple[str, ...]:
    """The modules that ``module``'s source imports directly, in source order.

    ``from a import b`` counts as ``a`` and ``a.b``; relative imports are made absolute.

    Raises:
        ConfigError: if the module's source cannot be found.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ConfigError(f"cannot find the source of attack module {module!r}")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"), filename=spec.origin)
    package = module if spec.submodule_search_locations else module.rpartition(".")[0]
    return tuple(dict.fromkeys(_imported(tree, package)))


def _imported(tree: ast.AST, package: str) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


def forbidden_imports(module: str) -> tuple[str, ...]:
    """The imports of ``module`` that ``FORBIDDEN`` rules out."""
    return tuple(
        name
        for name in imports_of(module)
        if any(name == banned or name.startswith(f"{banned}.") for banned in FORBIDDEN)
    )


def check_isolation(module: str, *, attack: str) -> None:
    """Refuse an attack whose module imports past its role.

    Raises:
        ConfigError: naming the attack, its module and the first forbidden import.
    """
    found = forbidden_imports(module)
    if found:
        raise ConfigError(
            f"attack {attack!r}: its module {module!r} imports {found[0]!r}; an attack sees only"
            f" its role and may not import {', '.join(FORBIDDEN)}"
        )
