"""One self-contained HTML page: its styles and scripts inline, nothing fetched when it opens.

The Content-Security-Policy allows nothing by default and each inline style and script by its
SHA-256 alone, so a value shown on the page (a module name, an op, a message) can never run as
code, and the page cannot reach the network. Data a script reads travels as JSON in a
`<script type="application/json">` element (never executed), `<` escaped so no text ends it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from typing import Any


def escape(text: object) -> str:
    """Text as HTML (quotes too: safe inside attributes)."""
    return html.escape(str(text), quote=True)


def _hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def json_data(value: Any) -> str:
    """`value` as JSON safe inside a script element."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def page(title: str, body: str, *, styles: tuple[str, ...] = (), scripts: tuple[str, ...] = (),
         data: Any = None, data_id: str = "graph-data") -> str:
    """A whole page: `body` (HTML, already escaped), inline `styles` and `scripts`, and `data`
    as a JSON element with id `data_id`."""
    policy = "; ".join([
        "default-src 'none'",
        f"style-src {' '.join(_hash(s) for s in styles) or chr(39) + 'none' + chr(39)}",
        f"script-src {' '.join(_hash(s) for s in scripts) or chr(39) + 'none' + chr(39)}",
        "img-src data:", "base-uri 'none'", "form-action 'none'",
    ])
    # A script's text must not close its element: the bundled code never holds "</script".
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(policy)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        *(f"<style>{s}</style>" for s in styles),
        "</head>", "<body>", body,
    ]
    if data is not None:
        parts.append(f'<script type="application/json" id="{escape(data_id)}">'
                     f"{json_data(data)}</script>")
    parts += [f"<script>{s}</script>" for s in scripts]
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
