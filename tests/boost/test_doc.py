"""The Python snippet of docs/secureboost.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

DOC = Path(__file__).resolve().parents[2] / "docs" / "secureboost.md"


def test_the_documented_python_snippet_runs() -> None:
    # Prepare: the doc's one python block
    (snippet,) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    namespace: dict[str, object] = {}

    # Execute
    exec(compile(snippet, str(DOC), "exec"), namespace)

    # Assert: probabilities for the 100 test rows, one report per tree with real byte counts
    probabilities = np.asarray(namespace["probabilities"])
    assert probabilities.shape == (100,)
    assert ((probabilities > 0) & (probabilities < 1)).all()
    reports = namespace["run"].reports  # type: ignore[attr-defined]
    assert len(reports) == 3
    assert all(r.bytes_down > 200 * 512 * 2 for r in reports)
