"""The editor snippets of docs/editors.md, read from the document itself (what users copy is
what is checked)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EDITORS_DOC = ROOT / "docs" / "editors.md"


def snippets(language: str, doc: Path = EDITORS_DOC) -> list[str]:
    """Every fenced code block of `language` in `doc`, in order, without the fences.

    A block may be indented (inside a list item): its indentation is removed.
    """
    pattern = re.compile(rf"^( *)```{re.escape(language)}\n(.*?)^\1```$", re.M | re.S)
    out = []
    for match in pattern.finditer(doc.read_text()):
        indent = len(match.group(1))
        out.append("".join(line[indent:] if line[:indent].isspace() else line
                           for line in match.group(2).splitlines(keepends=True)))
    return out
