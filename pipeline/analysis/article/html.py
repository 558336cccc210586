"""The article's Markdown as one self-contained HTML page, through markdown-it-py.

CommonMark with the GFM table extension; raw HTML off, so a recorded reason that looks like a
tag ("image <none>") is shown, not swallowed. Include markers are dropped before rendering, and
every image is embedded as a ``data:`` URI with an id the summary's figure links point to.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from urllib.parse import unquote

from markdown_it import MarkdownIt

from pipeline.analysis.article.inputs import figure_anchor

STYLE = (
    "body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;line-height:1.45}"
    "table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:2px 6px}th{background:#f3f3f3}"
    ".caption{font-style:italic;font-size:0.9em}img{max-width:100%}"
    "code{background:#f3f3f3;padding:0 2px}"
)
_MIME = {".svg": "image/svg+xml", ".png": "image/png"}
_COMMENT_LINE = re.compile(r"^[ \t]*<!--.*-->[ \t]*\n?", re.M)


def data_uri(path: Path) -> str:
    """A figure file as a ``data:`` URI. The article references the SVG where there is one: a
    fraction of the PNG's size (scale 2), and its Liberation Sans text falls back to the
    metric-compatible Arial/Helvetica, so labels keep their room."""
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"data:{_MIME[path.suffix]};base64,{encoded}"


def renderer(base_dir: Path | str) -> MarkdownIt:
    """CommonMark + tables, images resolved against ``base_dir`` and embedded."""
    base = Path(base_dir)
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    default = md.renderer.rules.get("image")

    def image(self, tokens, idx, options, env):
        token = tokens[idx]
        src = token.attrGet("src")
        if src and not src.startswith("data:"):
            path = base / unquote(src)  # markdown-it percent-encodes the link it parsed
            token.attrSet("id", figure_anchor(path))
            token.attrSet("src", data_uri(path))
        return (
            default(tokens, idx, options, env)
            if default
            else self.renderToken(tokens, idx, options, env)
        )

    md.add_render_rule("image", image)
    return md


def to_html(markdown: str, base_dir: Path | str) -> str:
    """A self-contained HTML page of ``markdown``; images resolved against ``base_dir`` and
    embedded as data URIs."""
    text = _COMMENT_LINE.sub("", markdown)
    title = next((m.group(1).strip() for m in re.finditer(r"^# (.+)$", text, re.M)), "Article")
    body = renderer(base_dir).render(text)
    body = body.replace("<p>Table: ", '<p class="caption">Table: ')
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + body
        + "</body>\n</html>\n"
    )
