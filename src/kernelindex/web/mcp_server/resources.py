"""The MCP resources: the methodology and the floor/ranking policies, as Markdown taken from the
site's /docs template (one text for the page and the agents; stdlib's HTML parser turns it into
Markdown-ish plain text — headings, list items and paragraphs are all the template uses)."""

from __future__ import annotations

import re
from functools import cache
from html.parser import HTMLParser
from importlib import resources as package_files

_JINJA = re.compile(r"{%.*?%}|{{.*?}}|{#.*?#}", re.S)
# a table is written as a call of the macro that wraps it (m.table): it stands for the table's tags
_TABLE_CALLS = ((re.compile(r"{%\s*call m\.table\(.*?\)\s*%}", re.S), "<table>"),
                (re.compile(r"\s*{%\s*endcall\s*%}"), "</table>"))
_SECTIONS = {
    "methodology": None,  # the whole page
    "floor": ("floor",),
    "ranking": ("ranking", "records", "defaults"),
}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sections: list[tuple[str | None, list[str]]] = [(None, [])]
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("nav", "script", "style"):
            self._skip += 1
        elif tag == "h2":
            self.sections.append((dict(attrs).get("id"), ["\n## "]))
        elif tag == "h1":
            self._out("\n# ")
        elif tag == "li":
            self._out("\n- ")
        elif tag in ("p", "table", "tr"):
            self._out("\n")
        elif tag in ("td", "th"):
            self._out(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("nav", "script", "style"):
            self._skip -= 1
        elif tag in ("h1", "h2", "p", "ul", "ol", "table"):
            self._out("\n")

    def handle_data(self, data: str) -> None:
        self._out(re.sub(r"\s+", " ", data))

    def _out(self, text: str) -> None:
        if not self._skip:
            self.sections[-1][1].append(text)


@cache
def _parsed() -> list[tuple[str | None, str]]:
    template = package_files.files("kernelindex.web").joinpath("templates", "docs.html").read_text(encoding="utf-8")
    body = template.split("{% block content %}", 1)[-1].split("{% endblock %}", 1)[0]
    parser = _Text()
    for call, tag in _TABLE_CALLS:
        body = call.sub(tag, body)
    parser.feed(_JINJA.sub("", body))
    return [(sid, re.sub(r"\n{3,}", "\n\n", "".join(parts)).strip()) for sid, parts in parser.sections]


def policy_text(name: str) -> str:
    """``methodology``, ``floor`` or ``ranking`` as Markdown."""
    wanted = _SECTIONS[name]
    chosen = [text for sid, text in _parsed() if wanted is None or sid in wanted]
    source = "Source: the KernelIndex methodology page (/docs)."
    return "\n\n".join(chosen + [source]) + "\n"
