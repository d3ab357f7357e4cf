"""Generate docs/config.md from the config dataclasses' docstrings, defaults and constraints.

.venv/bin/python tools/gen_config_doc.py > docs/config.md
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from typing import Any

from vfl.config import RunConfig
from vfl.config.io import to_toml
from vfl.config.section import constraints_of

HEAD = """# Configuration reference

Generated from `src/vfl/config/` by `tools/gen_config_doc.py` (the docstrings there are the
source). Every key can be overridden on the command line with `--set section.key=value`; values
parse as TOML, and bare words are strings.

**Relative paths.** `data.path` and `data.test_path` in a config file resolve against that
file's folder, whatever the working directory; `output.dir` (where results go, `runs` by
default) resolves against the working directory, so `vfl run examples/x.toml` writes `runs/...`
where you run it. A deployment's RUN.toml resolves every relative path against its own folder,
`output.dir` included (`docs/deployment.md`). A path given with `--set` is taken as typed.
"""
TABLE_HEAD = "| key | type | default | valid | meaning |\n|---|---|---|---|---|"


def attribute_docs(cls: type) -> dict[str, str]:
    """The ``Attributes:`` section of a class docstring, by attribute name."""
    found = re.search(r"Attributes:\n(.*)", inspect.getdoc(cls) or "", re.S)
    docs: dict[str, str] = {}
    key = ""
    for line in found.group(1).splitlines() if found else []:
        entry = re.match(r"    (\w+): (.*)", line)
        if entry:
            key = entry.group(1)
            docs[key] = entry.group(2)
        elif key and line.startswith("        "):
            docs[key] += " " + line.strip()
    return docs


def valid_values(cls: type) -> dict[str, str]:
    """The declared constraints of each constrained field, summarized (``>= 1``, ``(0, 1)``)."""
    return {
        name: "; ".join(constraint.summary(hint) for constraint in constraints)
        for name, hint, constraints in constraints_of(cls)
    }


def sections(cls: Any, path: str) -> list[str]:
    """One Markdown table per config table, depth first."""
    hints = typing.get_type_hints(cls)
    docs = attribute_docs(cls)
    valid = valid_values(cls)
    rows, nested = [], []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        if dataclasses.is_dataclass(hint):
            nested.append((hint, f"{path}.{field.name}" if path else field.name))
            continue
        default = (
            field.default if field.default is not dataclasses.MISSING else field.default_factory()
        )  # type: ignore[misc]
        kind = str(hint).replace("typing.", "").replace("<class '", "").replace("'>", "")
        limits = f"`{valid[field.name]}`" if field.name in valid else ""
        rows.append(
            f"| `{field.name}` | `{kind}` | `{default!r}` | {limits} | {docs.get(field.name, '')} |"
        )
    parts = []
    if rows:
        summary = (inspect.getdoc(cls) or "").splitlines()[0]
        parts.append(f"## `[{path}]`\n\n{summary}\n\n{TABLE_HEAD}\n" + "\n".join(rows) + "\n")
    for hint, sub_path in nested:
        parts += sections(hint, sub_path)
    return parts


def render() -> str:
    """The whole reference page."""
    tail = "## Defaults as TOML\n\n```toml\n" + to_toml(RunConfig()) + "```"
    return "\n".join([HEAD, *sections(RunConfig, ""), tail]) + "\n"


if __name__ == "__main__":
    print(render(), end="")
